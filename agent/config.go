package agent

import (
	"fmt"
	"time"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// Config holds an agent's limits.
type Config struct {
	// MaxRecordBytes bounds one record: the bytes of its key, value and
	// header keys and values, plus HeaderOverhead per header. A record over it is refused with
	// InvalidArgument (ErrorInfo RECORD_TOO_LARGE, metadata
	// max_record_bytes).
	MaxRecordBytes int
	// MaxRequestBytes bounds one produce request: the sum over its records
	// of their bytes (as MaxRecordBytes counts them) plus RecordOverhead per
	// record and HeaderOverhead per header, so that many tiny records count
	// as the bytes they take. A request over it is refused with
	// InvalidArgument (ErrorInfo REQUEST_TOO_LARGE, metadata
	// max_request_bytes), also when gRPC's receive limit (MaxRecvMsgBytes,
	// this plus a margin) refuses it first. The first record of a request
	// is held to MaxRecordBytes only (so it takes at most MaxRecordBytes +
	// RecordOverhead).
	MaxRequestBytes int
	// MaxFetchBytes caps a fetch's byte budget; gRPC's send limit is this
	// plus a margin (MaxSendMsgBytes).
	MaxFetchBytes int
	// MaxWait caps a fetch's long poll.
	MaxWait time.Duration
	// PollInterval is the fallback re-check of waiting readers when no
	// notice arrives.
	PollInterval time.Duration
	// CacheBytes bounds the read cache of whole files.
	CacheBytes int64
	// CacheFileMaxBytes: files up to this size are fetched whole and cached
	// on a miss; bigger ones are read by coalesced ranges.
	CacheFileMaxBytes int64
	// TopicCacheTTL is how long a topic lookup is trusted; past it, a
	// topic the read index watches stays trusted until the index poll
	// (IndexPollInterval) or a read finds it deleted.
	TopicCacheTTL time.Duration
	// MaxSubscribePartitions bounds the partitions of one subscription.
	MaxSubscribePartitions int
	// MaxStreamInFlight bounds the unanswered requests of one produce
	// stream (the bytes they hold are bounded by the stream budget). A
	// stream at the bound stops reading, so it must cover a client's
	// pipeline over linger + upload + commit: 64 held a client sending
	// every 5 ms at linger 250 ms at the bound, and its requests waited
	// unseen in the transport (measured: 300 ms more at the p99).
	MaxStreamInFlight int
	// MaxBackpressureWait bounds how long a produce waits for buffer space
	// before it is refused with ResourceExhausted.
	MaxBackpressureWait time.Duration
	// LoadTimeout bounds a whole-file load into the read cache.
	LoadTimeout time.Duration
	// SubscribeBufferBytes bounds the bytes one subscription holds read but
	// not yet sent, across its partitions (at least one fetch budget).
	SubscribeBufferBytes int64
	// StreamBufferBytes bounds, across the agent, what subscriptions hold
	// read but not sent and what produce streams hold unanswered
	// (streambudget.go): with it spent, a new subscription or stream
	// request is refused with ResourceExhausted naming it.
	StreamBufferBytes int64

	// TimestampBeforeMax bounds how far before the agent's clock a
	// record's timestamp may be (Kafka's message.timestamp.before.max.ms);
	// 0: no bound. TimestampAfterMax bounds how far after it
	// (message.timestamp.after.max.ms); 0: none but MaxTimestampMs, which
	// always holds. A record outside is refused with InvalidArgument
	// (INVALID_TIMESTAMP, naming the limit).
	TimestampBeforeMax time.Duration
	TimestampAfterMax  time.Duration
	// MaxTopicConfigEntryBytes bounds one entry (key and value) of a
	// topic's config, MaxTopicConfigBytes all of them together; a create
	// or alter over either is refused with InvalidArgument naming it.
	MaxTopicConfigEntryBytes int
	MaxTopicConfigBytes      int
	// MaxTopics, MaxPartitionsPerTopic and MaxTotalPartitions bound the
	// topics, one topic's partitions and all topics' partitions, checked
	// at create (a topic past them is refused, ResourceExhausted or
	// InvalidArgument naming the limit).
	MaxTopics             int
	MaxPartitionsPerTopic int
	MaxTotalPartitions    int
	// MaxSubscribedPartitions bounds the partitions all subscriptions of
	// the agent read at once (plain and group; each subscription is also
	// within MaxSubscribePartitions): past it a subscription is refused
	// with ResourceExhausted.
	MaxSubscribedPartitions int
	// MaxACLs bounds the ACLs the store holds, checked by the admin
	// service's CreateAcls (ResourceExhausted naming max_acls); agents'
	// ACL caches hold as many (auth.CacheConfig.MaxACLs).
	MaxACLs int

	// The gRPC edge (grpclimits.go; validated by validateGRPC in
	// config_grpc.go).

	// GRPCMaxRecvInFlightBytes is the receive budget: each stream takes
	// MaxRecvMsgBytes of it while it may be receiving a request; with it
	// spent a new stream is refused with ResourceExhausted.
	GRPCMaxRecvInFlightBytes int64
	// MaxConnections bounds the gRPC connections open at once
	// (LimitListener); 0: no limit.
	MaxConnections int
	// GRPCMaxConnectionIdle closes a connection without calls for this
	// long (0: never). GRPCMaxConnectionAge closes any connection after
	// about this long, with GOAWAY (0: never), giving its calls
	// GRPCMaxConnectionAgeGrace to end (0: for ever).
	GRPCMaxConnectionIdle     time.Duration
	GRPCMaxConnectionAge      time.Duration
	GRPCMaxConnectionAgeGrace time.Duration
	// GRPCKeepaliveTime: the agent pings a client silent this long, and
	// closes the connection when no answer comes within
	// GRPCKeepaliveTimeout. GRPCKeepaliveMinTime is the shortest interval
	// between a client's pings it tolerates (more often: GOAWAY).
	GRPCKeepaliveTime    time.Duration
	GRPCKeepaliveTimeout time.Duration
	GRPCKeepaliveMinTime time.Duration

	// Reads: response caps, read memory and the recent-batch index
	// (validated by validateReads in config_read.go).

	// MaxFetchRecords caps the records of one fetch or subscription
	// response, whatever their size (at least one is always sent).
	MaxFetchRecords int
	// MaxLoadingBytes bounds the bytes being read from the object store at
	// once on cache misses (whole files and ranges), across all requests.
	MaxLoadingBytes int64
	// MaxLoadWait bounds how long a read waits for MaxLoadingBytes to free
	// before it is refused with ResourceExhausted.
	MaxLoadWait time.Duration
	// IndexPollInterval is how often the recent-batch index re-reads the
	// high watermarks of the topics it tracks (one query per topic), in
	// case a commit notice was lost.
	IndexPollInterval time.Duration
	// IndexMaxPartitions bounds the partitions the index tracks.
	IndexMaxPartitions int
	// IndexMaxBatches bounds the batch references the index holds.
	IndexMaxBatches int
	// ReadaheadBytes bounds the bytes read ahead, across all partitions,
	// for readers far behind the head (readpath/readahead.go); 0 disables it.
	ReadaheadBytes int64
	// MaxReadRecordBytes bounds one stored record a Fetch or Subscribe
	// decodes, counted as MaxRecordBytes counts it (headers at
	// HeaderOverhead each), before its headers are built; 0 is
	// MaxRecordBytes. A batch holding a bigger record (stored by an older
	// agent or under a higher MaxRecordBytes) is refused with
	// InvalidArgument (BATCH_TOO_LARGE); the batch data plane serves it.
	MaxReadRecordBytes int

	// Consumer groups and replay (validated by validateGroups in
	// groups_replay.go).

	// ReplayMinLagRecords: a group's reader at least this many records
	// behind the high watermark is replaying and takes its reads from the
	// group's replay budget.
	ReplayMinLagRecords int64
	// ReplayBytesPerSecond is the replay budget of one group on one agent
	// (record bytes per second, token bucket); 0 disables the limit.
	ReplayBytesPerSecond int64
	// ReplayBurstBytes is the bucket's size (at least MaxFetchBytes).
	ReplayBurstBytes int64
	// LagSampleWindow is how far back consume rates look (0: 5 minutes).
	LagSampleWindow time.Duration
	// LagMetricsMaxGroups caps the groups the floe_group_* metrics cover:
	// the groups with the most records behind (and then groups with live
	// members, for floe_group_members). 0: 200.
	LagMetricsMaxGroups int
	// GroupRetention: a group without live members whose last commit, last
	// member heartbeat and creation are all older than this is deleted
	// with its positions (Kafka's offsets.retention.minutes); 0 keeps
	// groups forever.
	GroupRetention time.Duration
}

// maxRequestLimit bounds MaxRequestBytes: gRPC's receive limit
// (MaxRecvMsgBytes, a few times it) stays within a message's 32-bit
// length, and a request's batch (produce batches may decompress to
// MaxRequestBytes + 64 KiB) stays within what readers and the compactor
// decompress (kbatch.DefaultMaxDecompressed): a batch accepted is a batch
// they can read.
const maxRequestLimit = kbatch.DefaultMaxDecompressed - 64<<10

// DefaultConfig returns production defaults.
func DefaultConfig() Config {
	return Config{
		MaxRecordBytes:         1 << 20,
		MaxRequestBytes:        4 << 20,
		MaxFetchBytes:          8 << 20,
		MaxWait:                30 * time.Second,
		PollInterval:           time.Second,
		CacheBytes:             256 << 20,
		CacheFileMaxBytes:      16 << 20,
		TopicCacheTTL:          5 * time.Second,
		MaxSubscribePartitions: 1024,
		MaxStreamInFlight:      256,
		MaxBackpressureWait:    2 * time.Second,
		LoadTimeout:            30 * time.Second,
		SubscribeBufferBytes:   16 << 20,
		TimestampAfterMax:      time.Hour,
		StreamBufferBytes:      256 << 20,

		MaxTopicConfigEntryBytes: 64 << 10,
		MaxTopicConfigBytes:      256 << 10,
		MaxTopics:                10000,
		MaxPartitionsPerTopic:    10000,
		MaxTotalPartitions:       100000,
		MaxACLs:                  10000,
		MaxSubscribedPartitions:  16384,

		GRPCMaxRecvInFlightBytes: 512 << 20,
		MaxConnections:           1024,
		GRPCMaxConnectionIdle:    5 * time.Minute,
		GRPCKeepaliveTime:        time.Minute,
		GRPCKeepaliveTimeout:     20 * time.Second,
		GRPCKeepaliveMinTime:     5 * time.Second, // the Go client pings every 10 s (client.KeepaliveTime)

		MaxFetchRecords:    10000,
		MaxLoadingBytes:    64 << 20,
		MaxLoadWait:        2 * time.Second,
		IndexPollInterval:  30 * time.Second,
		IndexMaxPartitions: 1 << 16,
		IndexMaxBatches:    1 << 16,
		ReadaheadBytes:     64 << 20,

		ReplayMinLagRecords:  100000,
		ReplayBytesPerSecond: 32 << 20,
		ReplayBurstBytes:     16 << 20,
		LagSampleWindow:      5 * time.Minute,
		LagMetricsMaxGroups:  defaultLagMetricsMaxGroups,
		GroupRetention:       7 * 24 * time.Hour,
	}
}

func (c Config) validate() error {
	switch {
	case c.MaxRecordBytes <= 0:
		return fmt.Errorf("agent: config MaxRecordBytes %d must be positive", c.MaxRecordBytes)
	case c.MaxRequestBytes < c.MaxRecordBytes:
		return fmt.Errorf("agent: config MaxRequestBytes %d must be at least MaxRecordBytes (%d)", c.MaxRequestBytes, c.MaxRecordBytes)
	case c.MaxRequestBytes > maxRequestLimit:
		return fmt.Errorf("agent: config MaxRequestBytes %d must be at most %d", c.MaxRequestBytes, maxRequestLimit)
	case c.MaxFetchBytes <= 0:
		return fmt.Errorf("agent: config MaxFetchBytes %d must be positive", c.MaxFetchBytes)
	case c.MaxWait < 0:
		return fmt.Errorf("agent: config MaxWait %v must not be negative", c.MaxWait)
	case c.PollInterval <= 0:
		return fmt.Errorf("agent: config PollInterval %v must be positive", c.PollInterval)
	case c.CacheBytes < 0:
		return fmt.Errorf("agent: config CacheBytes %d must not be negative", c.CacheBytes)
	case c.TopicCacheTTL < 0:
		return fmt.Errorf("agent: config TopicCacheTTL %v must not be negative", c.TopicCacheTTL)
	case c.MaxSubscribePartitions <= 0:
		return fmt.Errorf("agent: config MaxSubscribePartitions %d must be positive", c.MaxSubscribePartitions)
	case c.MaxStreamInFlight <= 0:
		return fmt.Errorf("agent: config MaxStreamInFlight %d must be positive", c.MaxStreamInFlight)
	case c.MaxBackpressureWait <= 0:
		return fmt.Errorf("agent: config MaxBackpressureWait %v must be positive", c.MaxBackpressureWait)
	case c.LoadTimeout <= 0:
		return fmt.Errorf("agent: config LoadTimeout %v must be positive", c.LoadTimeout)
	case c.StreamBufferBytes < c.SubscribeBufferBytes || c.StreamBufferBytes < int64(c.MaxRequestBytes+c.MaxRecordBytes):
		return fmt.Errorf("agent: config StreamBufferBytes %d must be at least SubscribeBufferBytes (%d) and MaxRequestBytes + MaxRecordBytes (%d)",
			c.StreamBufferBytes, c.SubscribeBufferBytes, c.MaxRequestBytes+c.MaxRecordBytes)
	case c.TimestampBeforeMax < 0:
		return fmt.Errorf("agent: config TimestampBeforeMax %v must not be negative", c.TimestampBeforeMax)
	case c.TimestampAfterMax < 0:
		return fmt.Errorf("agent: config TimestampAfterMax %v must not be negative", c.TimestampAfterMax)
	case c.MaxTopicConfigEntryBytes <= 0:
		return fmt.Errorf("agent: config MaxTopicConfigEntryBytes %d must be positive", c.MaxTopicConfigEntryBytes)
	case c.MaxTopicConfigBytes < c.MaxTopicConfigEntryBytes:
		return fmt.Errorf("agent: config MaxTopicConfigBytes %d must be at least MaxTopicConfigEntryBytes (%d)", c.MaxTopicConfigBytes, c.MaxTopicConfigEntryBytes)
	case c.MaxTopics <= 0:
		return fmt.Errorf("agent: config MaxTopics %d must be positive", c.MaxTopics)
	case c.MaxPartitionsPerTopic <= 0 || c.MaxPartitionsPerTopic > metadata.MaxPartitions:
		return fmt.Errorf("agent: config MaxPartitionsPerTopic %d must be within 1..%d", c.MaxPartitionsPerTopic, metadata.MaxPartitions)
	case c.MaxACLs < 1:
		return fmt.Errorf("agent: config MaxACLs %d must be positive", c.MaxACLs)
	case c.MaxTotalPartitions < c.MaxPartitionsPerTopic:
		return fmt.Errorf("agent: config MaxTotalPartitions %d must be at least MaxPartitionsPerTopic (%d)", c.MaxTotalPartitions, c.MaxPartitionsPerTopic)
	case c.MaxSubscribedPartitions < c.MaxSubscribePartitions:
		return fmt.Errorf("agent: config MaxSubscribedPartitions %d must be at least MaxSubscribePartitions (%d)", c.MaxSubscribedPartitions, c.MaxSubscribePartitions)
	case c.SubscribeBufferBytes < int64(c.MaxFetchBytes):
		return fmt.Errorf("agent: config SubscribeBufferBytes %d must be at least MaxFetchBytes (%d)", c.SubscribeBufferBytes, c.MaxFetchBytes)
	}
	if err := c.validateGRPC(); err != nil {
		return err
	}
	if err := c.validateReads(); err != nil {
		return err
	}
	return c.validateGroups()
}
