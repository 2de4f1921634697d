package main

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore/s3store"
	"github.com/floe-broker/floe/tableread"
)

// Config is every setting of floe's server commands (agent, dev,
// compactor). Each one is read, lowest precedence first, from its default
// (DefaultServerConfig), the YAML file of -config (or FLOE_CONFIG) under
// "section: key:", the environment variable FLOE_<SECTION>_<KEY>, and the
// command's flag. The tags drive all of it: yaml is the key, flag the flag
// name, env extra (older) environment names, help the documentation, check
// a range ("positive" or "nonneg"), secret how `floe config print` masks
// it, cmds the commands that use the setting when not all of its section's.
type Config struct {
	Server    ServerSettings    `yaml:"server"`
	Log       LogSettings       `yaml:"log"`
	Batcher   BatcherSettings   `yaml:"batcher"`
	Agent     AgentSettings     `yaml:"agent"`
	Kafka     KafkaSettings     `yaml:"kafka"`
	Postgres  PostgresSettings  `yaml:"postgres"`
	S3        S3Settings        `yaml:"s3"`
	Dev       DevSettings       `yaml:"dev"`
	Compactor CompactorSettings `yaml:"compactor"`
	Iceberg   IcebergSettings   `yaml:"iceberg"`
	Auth      AuthSettings      `yaml:"auth"`
	TLS       TLSSettings       `yaml:"tls"` // tls.go
}

// ServerSettings are the listeners and start-up of agent and dev.
type ServerSettings struct {
	Listen        string        `yaml:"listen" flag:"listen" help:"gRPC listen address (floe dev: 127.0.0.1:7070)"`
	MetricsListen string        `yaml:"metrics_listen" flag:"metrics-listen" help:"HTTP address of /metrics, /healthz (liveness) and /readyz (readiness) (floe dev: 127.0.0.1:7071)"`
	FailFast      bool          `yaml:"fail_fast" flag:"fail-fast" cmds:"agent" help:"exit if a store does not answer at start (default: wait for it, retrying with backoff)"`
	ReadyInterval time.Duration `yaml:"ready_interval" flag:"ready-interval" check:"positive" help:"period of the readiness checks of the stores (/readyz, gRPC health)"`
	DrainTimeout  time.Duration `yaml:"drain_timeout" flag:"drain-timeout" check:"positive" help:"on SIGTERM, bound of flushing and committing what producers handed in"`
	AddrFile      string        `yaml:"addr_file" flag:"addr-file" help:"write the bound listen addresses here as JSON ({\"grpc\",\"metrics\",\"kafka\"}; kafka once the stores answered), replaced atomically: for listening on port 0"`
	Pprof         bool          `yaml:"pprof" flag:"pprof" help:"serve Go's profiles (CPU, heap, goroutines) at /debug/pprof/ on the metrics listener; keep it off where that listener is reachable by others"`
	// MemoryRoomBytes is the soft memory limit's room (memlimit.go).
	MemoryRoomBytes int64 `yaml:"memory_room_bytes" flag:"memory-room-bytes" check:"positive" help:"the soft memory limit the process sets itself (unless GOMEMLIMIT is set) is max_buffered_bytes + cache_bytes + this: room for reads in progress, read-ahead, requests in flight and the runtime"`
	// The HTTP listener's bounds (/metrics, /readyz, the console).
	HTTPReadHeaderTimeout time.Duration `yaml:"http_read_header_timeout" flag:"http-read-header-timeout" check:"positive" help:"HTTP listener: time a client has to send a request's headers"`
	HTTPWriteTimeout      time.Duration `yaml:"http_write_timeout" flag:"http-write-timeout" check:"positive" help:"HTTP listener: time to write one answer; a client that does not read it is disconnected (keep it above pprof's -seconds)"`
	HTTPIdleTimeout       time.Duration `yaml:"http_idle_timeout" flag:"http-idle-timeout" check:"positive" help:"HTTP listener: how long an idle keep-alive connection stays open"`
	HTTPMaxInFlight       int           `yaml:"http_max_in_flight" flag:"http-max-in-flight" check:"positive" help:"HTTP listener: console API requests served at once, and /metrics scrapes at once, each; past it the answer is 429 (console) or 503 (/metrics)"`
}

// LogSettings are the logs of every server command.
type LogSettings struct {
	Level  string `yaml:"level" flag:"log-level" help:"debug, info, warn or error"`
	Format string `yaml:"format" flag:"log-format" help:"text or json"`
}

// BatcherSettings are the write path's (package batcher).
type BatcherSettings struct {
	Linger           time.Duration `yaml:"linger" flag:"linger" check:"positive" help:"how long a file waits for more batches before it is flushed (at most 1m; 0 is refused: use 1ms to flush almost at once)"`
	MaxFileBytes     int           `yaml:"max_file_bytes" flag:"max-file-bytes" check:"positive" help:"flush a file once it reaches this size (at least 1024)"`
	MaxBufferedBytes int64         `yaml:"max_buffered_bytes" flag:"max-buffered-bytes" check:"positive" help:"bytes accepted but not yet acknowledged before producers wait (at least max_file_bytes)"`
	CommitTimeout    time.Duration `yaml:"commit_timeout" flag:"commit-timeout" check:"positive" help:"bound of one file's metadata commit, retries included; past it its producers hear failed or outcome unknown"`
	UploadTimeout    time.Duration `yaml:"upload_timeout" flag:"upload-timeout" check:"positive" help:"bound of one file's upload, all attempts included; past it its producers fail (retry safely)"`
	// MaxFilesPerCommit bounds the uploaded files one metadata transaction commits together.
	MaxFilesPerCommit int `yaml:"max_files_per_commit" flag:"max-files-per-commit" check:"positive" help:"most uploaded files waiting that one metadata transaction commits together (1 to 64; 1: one file per commit; see docs/benchmarks.md before raising it with agents that share partitions)"`
	// SealWhenWaited seals a file before its linger once every Kafka client writing to it waits on it.
	SealWhenWaited bool `yaml:"seal_when_waited" flag:"seal-when-waited" help:"seal a file once it is two fifths of its linger old and every Kafka connection writing to it has all its produce requests waiting on it, while the file holds an eighth of batcher.max_file_bytes or the recent ingest fills a file within one linger (lingering on would only hold the records in the clients): a Kafka client that keeps one request in flight waits about one linger for a record instead of two, for at most 2.5 times the files per linger; off: every file waits out its linger or fills up"`
}

// AgentSettings are the agent's limits (package agent).
type AgentSettings struct {
	CacheBytes           int64         `yaml:"cache_bytes" flag:"cache-bytes" check:"nonneg" help:"read cache size"`
	MaxRecordBytes       int           `yaml:"max_record_bytes" flag:"max-record-bytes" check:"positive" help:"largest record (key + value + headers) accepted"`
	MaxRequestBytes      int           `yaml:"max_request_bytes" flag:"max-request-bytes" check:"nonneg" help:"largest produce request accepted (0: 4 MiB, at most half of max_file_bytes)"`
	MaxFetchBytes        int           `yaml:"max_fetch_bytes" flag:"max-fetch-bytes" check:"positive" help:"largest fetch or subscribe answer"`
	MaxFetchRecords      int           `yaml:"max_fetch_records" flag:"max-fetch-records" check:"positive" help:"most records in one fetch or subscribe answer"`
	MaxLoadingBytes      int64         `yaml:"max_loading_bytes" flag:"max-loading-bytes" check:"positive" help:"bytes read from the object store at once across all readers; past it readers wait, then get ResourceExhausted"`
	ReadaheadBytes       int64         `yaml:"readahead_bytes" flag:"readahead-bytes" check:"nonneg" help:"bytes read ahead, across all partitions, for readers far behind the head (ranged GETs in parallel; 0: no read-ahead)"`
	ReplayBytesPerSecond int64         `yaml:"replay_bytes_per_second" flag:"replay-bytes-per-second" check:"nonneg" help:"read budget of one consumer group replaying far behind the head, per agent (0: unlimited)"`
	ReplayMinLagRecords  int64         `yaml:"replay_min_lag_records" flag:"replay-min-lag-records" check:"positive" help:"a group reader at least this many records behind the head reads through the replay budget"`
	GroupRetention       time.Duration `yaml:"group_retention" flag:"group-retention" check:"nonneg" help:"a group without live members and without a commit or heartbeat for this long is deleted with its positions, like Kafka's offsets.retention.minutes (0: never)"`
	LagMetricsMaxGroups  int           `yaml:"lag_metrics_max_groups" flag:"lag-metrics-max-groups" check:"positive" help:"groups the floe_group_* metrics cover at most: those with the most records behind"`
	// Reads below the raw log start from the Iceberg tables (tables.go).
	TableReads          int   `yaml:"table_reads" flag:"table-reads" check:"positive" help:"scans of Iceberg tables at once, for offsets below the raw log start of topics with retention.raw.ms; more wait"`
	TableWindowBytes    int   `yaml:"table_window_bytes" flag:"table-window-bytes" check:"nonneg" help:"bytes of rows one table scan reads for its partition (at least a read's budget); the rest waits in the table read-ahead"`
	TableReadaheadBytes int64 `yaml:"table_readahead_bytes" flag:"table-readahead-bytes" check:"nonneg" help:"bytes of table rows kept, across all partitions, for their next reads, and as much again of whole data files decoded, for the next scans that need them (a scan decodes whole row groups; 0: none); half of it more (at least 8 MiB, at most 64 MiB) keeps the Parquet decode's freed buffers for the next batches"`

	// The edges' bounds (docs/operations.md, Limits).
	MaxReadRecordBytes        int           `yaml:"max_read_record_bytes" flag:"max-read-record-bytes" check:"nonneg" help:"largest stored record a fetch or subscribe decodes, headers counted 10 bytes each (0: max_record_bytes); a batch holding a bigger one is refused with InvalidArgument"`
	StreamBufferBytes         int64         `yaml:"stream_buffer_bytes" flag:"stream-buffer-bytes" check:"positive" help:"bytes all subscriptions hold read but not sent, and produce streams hold unanswered, together; past it a new subscription or stream request gets ResourceExhausted"`
	TimestampBeforeMax        time.Duration `yaml:"timestamp_before_max" flag:"timestamp-before-max" check:"nonneg" help:"refuse records whose timestamp is more than this before the agent's clock (Kafka's message.timestamp.before.max.ms; 0: no bound)"`
	TimestampAfterMax         time.Duration `yaml:"timestamp_after_max" flag:"timestamp-after-max" check:"nonneg" help:"refuse records whose timestamp is more than this after the agent's clock (message.timestamp.after.max.ms; 0: none but year 9999)"`
	TopicConfigEntryBytes     int           `yaml:"topic_config_entry_bytes" flag:"topic-config-entry-bytes" check:"positive" help:"largest key + value of one topic config entry"`
	TopicConfigBytes          int           `yaml:"topic_config_bytes" flag:"topic-config-bytes" check:"positive" help:"largest topic config (all keys and values)"`
	MaxTopics                 int           `yaml:"max_topics" flag:"max-topics" check:"positive" help:"most topics (checked at create)"`
	MaxPartitionsPerTopic     int           `yaml:"max_partitions_per_topic" flag:"max-partitions-per-topic" check:"positive" help:"most partitions of one topic (at most 100000)"`
	MaxTotalPartitions        int           `yaml:"max_total_partitions" flag:"max-total-partitions" check:"positive" help:"most partitions of all topics together (checked at create)"`
	MaxACLs                   int           `yaml:"max_acls" flag:"max-acls" check:"positive" help:"most ACLs in the store (checked by the admin service's CreateAcls); an agent's ACL cache holding more allows superusers only"`
	MaxSubscribedPartitions   int           `yaml:"max_subscribed_partitions" flag:"max-subscribed-partitions" check:"positive" help:"most partitions all subscriptions of the agent read at once (plain and group)"`
	GRPCMaxRecvInflightBytes  int64         `yaml:"grpc_max_recv_inflight_bytes" flag:"grpc-max-recv-inflight-bytes" check:"positive" help:"receive budget: each gRPC stream takes the receive limit (max_request_bytes + 128 KiB) of it while it may be receiving; past it new streams get ResourceExhausted"`
	GRPCMaxConnections        int           `yaml:"grpc_max_connections" flag:"grpc-max-connections" check:"nonneg" help:"most gRPC connections open at once; past it a connection is closed at once (0: no limit)"`
	GRPCMaxConnectionIdle     time.Duration `yaml:"grpc_max_connection_idle" flag:"grpc-max-connection-idle" check:"nonneg" help:"close a gRPC connection without calls for this long (0: never)"`
	GRPCMaxConnectionAge      time.Duration `yaml:"grpc_max_connection_age" flag:"grpc-max-connection-age" check:"nonneg" help:"close any gRPC connection after about this long, with GOAWAY, so clients reconnect and spread over agents (0: never)"`
	GRPCMaxConnectionAgeGrace time.Duration `yaml:"grpc_max_connection_age_grace" flag:"grpc-max-connection-age-grace" check:"nonneg" help:"time the calls of a connection closed for its age get to end (0: for ever)"`
	GRPCKeepaliveTime         time.Duration `yaml:"grpc_keepalive_time" flag:"grpc-keepalive-time" check:"nonneg" help:"ping a client silent this long (at least 1s; 0: 2h)"`
	GRPCKeepaliveTimeout      time.Duration `yaml:"grpc_keepalive_timeout" flag:"grpc-keepalive-timeout" check:"nonneg" help:"close the connection when a ping is not answered within this (0: 20s)"`
	GRPCKeepaliveMinTime      time.Duration `yaml:"grpc_keepalive_min_time" flag:"grpc-keepalive-min-time" check:"nonneg" help:"shortest interval between a client's keepalive pings tolerated; more often gets GOAWAY"`
}

// KafkaSettings are the Kafka protocol listener's (package kafka).
type KafkaSettings struct {
	Listen           string        `yaml:"listen" flag:"kafka-listen" help:"Kafka protocol listen address; empty: no Kafka listener (floe dev: 127.0.0.1:9092)"`
	AdvertisedHost   string        `yaml:"advertised_host" flag:"kafka-advertised-host" help:"host Kafka clients are told to connect to (a Service's name for pods behind it; empty: the address the client connected to)"`
	AdvertisedPort   int           `yaml:"advertised_port" flag:"kafka-advertised-port" check:"nonneg" help:"port Kafka clients are told to connect to (0: the port the client connected to)"`
	MaxFrameBytes    int           `yaml:"max_frame_bytes" flag:"kafka-max-frame-bytes" check:"positive" help:"largest Kafka request frame; a larger one closes its connection before anything is read into memory (at least 1024)"`
	MaxConnections   int           `yaml:"max_connections" flag:"kafka-max-connections" check:"positive" help:"open Kafka client connections; past it new ones are closed at once"`
	MaxInFlight      int           `yaml:"max_in_flight" flag:"kafka-max-in-flight" check:"positive" help:"unanswered requests per Kafka connection; past it the agent stops reading the connection"`
	MaxBufferedBytes int64         `yaml:"max_buffered_bytes" flag:"kafka-max-buffered-bytes" check:"positive" help:"request bytes one Kafka connection holds unanswered, and again response bytes not yet written; past it the agent stops reading the connection (at least max_frame_bytes)"`
	Zone             string        `yaml:"zone" flag:"kafka-zone" help:"this agent's availability zone: Kafka clients whose client.id holds floe_az=<zone> get this zone's agents as partition leaders"`
	AgentTTL         time.Duration `yaml:"agent_ttl" flag:"kafka-agent-ttl" check:"positive" help:"how long an agent's heartbeat row lives (it beats every quarter of it): a dead agent leaves the other agents' Kafka Metadata and its classic groups move, this long after its last beat"`

	// Fetch sessions (KIP-227).
	MaxFetchSessions          int           `yaml:"max_fetch_sessions" flag:"kafka-max-fetch-sessions" check:"nonneg" help:"Kafka fetch sessions (KIP-227) the agent holds, like Kafka's max.incremental.fetch.session.cache.slots; when full, one unused for fetch_session_eviction (or an older one with fewer partitions) is evicted, else the client fetches without a session (0: no sessions)"`
	MaxFetchSessionPartitions int           `yaml:"max_fetch_session_partitions" flag:"kafka-max-fetch-session-partitions" check:"positive" help:"partitions of one Kafka fetch session: a full fetch of more gets no session, an incremental fetch growing past it closes its session (the client fetches in full again)"`
	FetchSessionEviction      time.Duration `yaml:"fetch_session_eviction" flag:"kafka-fetch-session-eviction" check:"positive" help:"a Kafka fetch session unused this long is the first evicted when max_fetch_sessions is reached; a session younger than this is never evicted (Kafka's 120 s)"`
	// Producer id expiry (KIP-360 epochs).
	ProducerIDExpiration time.Duration `yaml:"producer_id_expiration" flag:"kafka-producer-id-expiration" check:"nonneg" help:"a producer id whose epoch was not bumped (InitProducerId with an id and epoch) for this long is forgotten by the store, like Kafka's producer.id.expiration.ms; its stale epochs are no longer fenced by InitProducerId (0: never)"`
}

// PostgresSettings locate the metadata store of agent and compactor.
type PostgresSettings struct {
	URL string `yaml:"url" flag:"postgres-url" secret:"url" help:"PostgreSQL URL (required; its password is masked by floe config print)"`
}

// S3Settings locate the object store of agent and compactor.
type S3Settings struct {
	Bucket          string `yaml:"bucket" flag:"s3-bucket" help:"S3 bucket (required; it must exist and accept writes: checked at start)"`
	Prefix          string `yaml:"prefix" flag:"s3-prefix" help:"key prefix inside the bucket (the same for agents and compactor)"`
	Endpoint        string `yaml:"endpoint" flag:"s3-endpoint" help:"S3 endpoint URL for S3-compatible stores (empty: AWS)"`
	Region          string `yaml:"region" flag:"s3-region" env:"AWS_REGION" help:"S3 region (AWS_REGION is read too)"`
	AccessKey       string `yaml:"access_key" flag:"s3-access-key" help:"S3 access key (empty: the AWS credential chain, e.g. AWS_ACCESS_KEY_ID)"`
	SecretKey       string `yaml:"secret_key" flag:"s3-secret-key" secret:"all" help:"S3 secret key (empty: the AWS credential chain, e.g. AWS_SECRET_ACCESS_KEY)"`
	PathStyle       bool   `yaml:"path_style" flag:"s3-path-style" help:"path-style addressing (most S3-compatible servers)"`
	UnsignedPayload bool   `yaml:"unsigned_payload" flag:"s3-unsigned-payload" help:"send uploads as UNSIGNED-PAYLOAD over a plain http:// endpoint too (no SigV4 SHA-256 pass over every uploaded byte); over https:// they always are. Only where the network path is trusted"`
	PutChecksum     string `yaml:"put_checksum" flag:"s3-put-checksum" help:"checksum each upload carries for the store to verify before storing it: crc32c (x-amz-checksum-crc32c; a body damaged on its way is refused and retried) or none (a store that refuses the header)"`
	CAFile          string `yaml:"ca_file" flag:"s3-ca-file" help:"PEM bundle of the CAs that sign the https:// endpoint's certificate, instead of the system's (the Iceberg writer reads it too: it replaces AWS_CA_BUNDLE)"`
}

// DevSettings are floe dev's own.
type DevSettings struct {
	Data string `yaml:"data" flag:"data" help:"folder holding all of floe dev's data (objects/ and metadata.db)"`
}

// CompactorSettings are the background jobs' (package compactor), run by
// floe compactor and inside floe dev.
type CompactorSettings struct {
	MetricsListen    string        `yaml:"metrics_listen" flag:"metrics-listen" cmds:"compactor" help:"HTTP address of floe compactor's /metrics, /healthz (liveness) and /readyz (readiness)"`
	AddrFile         string        `yaml:"addr_file" flag:"addr-file" cmds:"compactor" help:"write floe compactor's bound metrics address here as JSON ({\"metrics\"}), replaced atomically: for listening on port 0"`
	Owner            string        `yaml:"owner" flag:"owner" cmds:"compactor" help:"this replica's name in the job leases (empty: host name and process id)"`
	Interval         time.Duration `yaml:"interval" flag:"interval" check:"positive" help:"time between passes"`
	LeaseTTL         time.Duration `yaml:"lease_ttl" flag:"lease-ttl" check:"positive" help:"how long a job's lease lasts without renewal"`
	Grace            time.Duration `yaml:"grace" flag:"grace" check:"nonneg" help:"how long a dead file stays after it was marked (reads in flight; more than the agents' commit timeout)"`
	OrphanAge        time.Duration `yaml:"orphan_age" flag:"orphan-age" check:"nonneg" help:"age after which an object the metadata does not know is deleted (more than grace + the agents' upload and commit timeouts)"`
	MergeSmallBytes  int64         `yaml:"merge_small_bytes" flag:"merge-small-bytes" check:"nonneg" help:"merge files smaller than this (0: no merging)"`
	MergeTargetBytes int64         `yaml:"merge_target_bytes" flag:"merge-target-bytes" check:"positive" help:"bytes of live batches one merge writes at most"`
	MergeMinAge      time.Duration `yaml:"merge_min_age" flag:"merge-min-age" check:"nonneg" help:"merge only files older than this"`
	CompactMaxBytes  int64         `yaml:"compact_max_bytes" flag:"compact-max-bytes" check:"nonneg" help:"bytes of a partition one keyed compaction reads at most (0: no keyed compaction)"`
	CompactMinAge    time.Duration `yaml:"compact_min_age" flag:"compact-min-age" check:"nonneg" help:"compact by key only batches older than this (and than the topic's min.compaction.lag.ms)"`
}

// Server commands and the sections each reads.
var commandSections = map[string][]string{
	"agent":     {"server", "log", "batcher", "agent", "kafka", "postgres", "s3", "iceberg", "auth", "tls"},
	"dev":       {"server", "log", "batcher", "agent", "kafka", "dev", "compactor", "iceberg", "auth", "tls"},
	"compactor": {"log", "postgres", "s3", "compactor", "iceberg", "auth", "tls"},
}

// DefaultServerConfig returns the defaults of command (agent, dev or
// compactor): the packages' own defaults, and local addresses for dev.
func DefaultServerConfig(command string) Config {
	bd, ad, cd, sd, kd := batcher.DefaultConfig(), agent.DefaultConfig(), compactor.DefaultConfig(), s3store.DefaultConfig(), kafka.DefaultConfig()
	td := tableread.DefaultConfig()
	c := Config{
		Server: ServerSettings{Listen: ":7070", MetricsListen: ":7071", ReadyInterval: 2 * time.Second, DrainTimeout: 15 * time.Second,
			HTTPReadHeaderTimeout: defaultHTTPLimits.ReadHeaderTimeout, HTTPWriteTimeout: defaultHTTPLimits.WriteTimeout,
			HTTPIdleTimeout: defaultHTTPLimits.IdleTimeout, HTTPMaxInFlight: defaultHTTPLimits.MaxInFlight,
			MemoryRoomBytes: defaultMemoryRoom},
		Log: LogSettings{Level: "info", Format: "text"},
		Batcher: BatcherSettings{Linger: bd.Linger, MaxFileBytes: bd.MaxFileBytes, MaxBufferedBytes: bd.MaxBufferedBytes,
			CommitTimeout: bd.CommitTimeout, UploadTimeout: bd.UploadTimeout, MaxFilesPerCommit: bd.MaxFilesPerCommit, SealWhenWaited: bd.SealWhenWaited},
		Agent: AgentSettings{CacheBytes: ad.CacheBytes, MaxRecordBytes: ad.MaxRecordBytes, MaxFetchBytes: ad.MaxFetchBytes,
			MaxFetchRecords: ad.MaxFetchRecords, MaxLoadingBytes: ad.MaxLoadingBytes, ReadaheadBytes: ad.ReadaheadBytes,
			ReplayBytesPerSecond: ad.ReplayBytesPerSecond, ReplayMinLagRecords: ad.ReplayMinLagRecords,
			GroupRetention: ad.GroupRetention, LagMetricsMaxGroups: ad.LagMetricsMaxGroups,
			TableReads: td.MaxReads, TableWindowBytes: td.WindowBytes, TableReadaheadBytes: td.ReadaheadBytes,
			MaxReadRecordBytes: ad.MaxReadRecordBytes, StreamBufferBytes: ad.StreamBufferBytes,
			TimestampBeforeMax: ad.TimestampBeforeMax, TimestampAfterMax: ad.TimestampAfterMax,
			TopicConfigEntryBytes: ad.MaxTopicConfigEntryBytes, TopicConfigBytes: ad.MaxTopicConfigBytes,
			MaxTopics: ad.MaxTopics, MaxPartitionsPerTopic: ad.MaxPartitionsPerTopic, MaxTotalPartitions: ad.MaxTotalPartitions,
			MaxSubscribedPartitions: ad.MaxSubscribedPartitions, MaxACLs: ad.MaxACLs, GRPCMaxRecvInflightBytes: ad.GRPCMaxRecvInFlightBytes,
			GRPCMaxConnections: ad.MaxConnections, GRPCMaxConnectionIdle: ad.GRPCMaxConnectionIdle,
			GRPCMaxConnectionAge: ad.GRPCMaxConnectionAge, GRPCMaxConnectionAgeGrace: ad.GRPCMaxConnectionAgeGrace,
			GRPCKeepaliveTime: ad.GRPCKeepaliveTime, GRPCKeepaliveTimeout: ad.GRPCKeepaliveTimeout, GRPCKeepaliveMinTime: ad.GRPCKeepaliveMinTime},
		Kafka: KafkaSettings{Listen: ":9092", MaxFrameBytes: kd.MaxFrameBytes, MaxConnections: kd.MaxConnections,
			MaxInFlight: kd.MaxInFlight, MaxBufferedBytes: kd.MaxBufferedBytes, AgentTTL: kd.AgentTTL},
		S3:  S3Settings{Region: sd.Region, PutChecksum: sd.PutChecksum},
		Dev: DevSettings{Data: "./data"},
		Compactor: CompactorSettings{MetricsListen: ":7072", Interval: cd.Interval, LeaseTTL: cd.LeaseTTL, Grace: cd.Grace,
			OrphanAge: cd.OrphanAge, MergeSmallBytes: cd.MergeSmallBytes, MergeTargetBytes: cd.MergeTargetBytes, MergeMinAge: cd.MergeMinAge,
			CompactMaxBytes: cd.CompactMaxBytes, CompactMinAge: cd.CompactMinAge},
		Iceberg: DefaultIcebergSettings(),
		Auth:    defaultAuthSettings(),
		TLS:     DefaultTLSSettings(),
	}
	c.Kafka.MaxFetchSessions, c.Kafka.MaxFetchSessionPartitions, c.Kafka.FetchSessionEviction = kd.MaxFetchSessions, kd.MaxFetchSessionPartitions, kd.FetchSessionEviction
	c.Kafka.ProducerIDExpiration = kd.ProducerIDExpiration
	if command == "dev" {
		c.Server.Listen, c.Server.MetricsListen = devGRPCAddr, devMetricsAddr
		c.Kafka.Listen = devKafkaAddr
	}
	return c
}

// setting is one field of Config.
type setting struct {
	section, key string // "batcher", "linger"
	flag         string
	envs         []string // FLOE_SECTION_KEY first, then older names
	help, check  string
	secret       string   // "", "url" or "all"
	cmds         []string // nil: every command of the section
	index        []int    // the field in Config
	typ          reflect.Type
}

func (s setting) name() string { return s.section + "." + s.key }

var durationType = reflect.TypeOf(time.Duration(0))

// allSettings lists Config's settings in order.
func allSettings() []setting {
	var out []setting
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		sf := ct.Field(i)
		for j := range sf.Type.NumField() {
			f := sf.Type.Field(j)
			s := setting{
				section: sf.Tag.Get("yaml"), key: f.Tag.Get("yaml"), flag: f.Tag.Get("flag"),
				help: f.Tag.Get("help"), check: f.Tag.Get("check"), secret: f.Tag.Get("secret"),
				index: []int{i, j}, typ: f.Type,
			}
			s.envs = []string{"FLOE_" + strings.ToUpper(s.section+"_"+s.key)}
			if e := f.Tag.Get("env"); e != "" {
				s.envs = append(s.envs, e)
			}
			if c := f.Tag.Get("cmds"); c != "" {
				s.cmds = strings.Split(c, ",")
			}
			out = append(out, s)
		}
	}
	return out
}

// commandSettings lists the settings command reads.
func commandSettings(command string) []setting {
	var out []setting
	for _, s := range allSettings() {
		if s.usedBy(command) {
			out = append(out, s)
		}
	}
	return out
}

func (s setting) usedBy(command string) bool {
	in := false
	for _, sec := range commandSections[command] {
		in = in || sec == s.section
	}
	if !in {
		return false
	}
	if s.cmds == nil {
		return true
	}
	for _, c := range s.cmds {
		if c == command {
			return true
		}
	}
	return false
}

// field returns the setting's field in c.
func (s setting) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(s.index)
}

// parse sets the setting in c from its text form (an environment variable,
// a flag, a YAML scalar).
func (s setting) parse(c *Config, text string) error {
	v := s.field(c)
	switch {
	case s.typ == durationType:
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration (e.g. 250ms, 10s)", s.name(), text)
		}
		v.SetInt(int64(d))
	case s.typ.Kind() == reflect.Int || s.typ.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("%s: %q is not an integer", s.name(), text)
		}
		v.SetInt(n)
	case s.typ.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return fmt.Errorf("%s: %q is not true or false", s.name(), text)
		}
		v.SetBool(b)
	default:
		v.SetString(text)
	}
	return nil
}

// format returns the setting's value in c as text.
func (s setting) format(c *Config) string {
	v := s.field(c)
	switch {
	case s.typ == durationType:
		return time.Duration(v.Int()).String()
	case s.typ.Kind() == reflect.Int || s.typ.Kind() == reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case s.typ.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// masked returns the setting's value in c as text, its secret hidden.
func (s setting) masked(c *Config) string {
	text := s.format(c)
	switch {
	case text == "":
		return text
	case s.secret == "all":
		return "*****"
	case s.secret == "url":
		return maskURL(text)
	}
	return text
}

// applyEnv sets from the environment (getenv) the settings of command: the
// first of a setting's names that is set wins.
func applyEnv(c *Config, command string, getenv func(string) string, sources map[string]string) error {
	for _, s := range commandSettings(command) {
		for _, name := range s.envs {
			if v := getenv(name); v != "" {
				if err := s.parse(c, v); err != nil {
					return fmt.Errorf("environment %s: %w", name, err)
				}
				sources[s.name()] = "environment " + name
				break
			}
		}
	}
	return nil
}

// validate checks c for command, naming the first bad setting and why.
func (c *Config) validate(command string) error {
	for _, s := range commandSettings(command) {
		v := s.field(c)
		if s.typ.Kind() != reflect.Int && s.typ.Kind() != reflect.Int64 {
			continue
		}
		switch {
		case s.check == "positive" && v.Int() <= 0:
			return fmt.Errorf("%s: %s must be positive", s.name(), s.format(c))
		case s.check == "nonneg" && v.Int() < 0:
			return fmt.Errorf("%s: %s must not be negative", s.name(), s.format(c))
		}
	}
	var lvl levelText
	if err := lvl.check(c.Log.Level); err != nil {
		return err
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		return fmt.Errorf("log.format: %q must be text or json", c.Log.Format)
	}
	if err := c.TLS.validate(command); err != nil {
		return err
	}
	sections := strings.Join(commandSections[command], ",")
	if strings.Contains(sections, "batcher") {
		b := c.Batcher
		switch {
		case b.Linger > time.Minute:
			return fmt.Errorf("batcher.linger: %v must be at most 1m", b.Linger)
		case b.MaxFileBytes < 1024:
			return fmt.Errorf("batcher.max_file_bytes: %d must be at least 1024", b.MaxFileBytes)
		case b.MaxBufferedBytes < int64(b.MaxFileBytes):
			return fmt.Errorf("batcher.max_buffered_bytes: %d must be at least batcher.max_file_bytes (%d)", b.MaxBufferedBytes, b.MaxFileBytes)
		case b.UploadTimeout > 10*time.Minute:
			return fmt.Errorf("batcher.upload_timeout: %v must be at most 10m", b.UploadTimeout)
		case b.CommitTimeout > 10*time.Minute:
			return fmt.Errorf("batcher.commit_timeout: %v must be at most 10m", b.CommitTimeout)
		case b.MaxFilesPerCommit > metadata.MaxCommitFiles:
			return fmt.Errorf("batcher.max_files_per_commit: %d must be at most %d", b.MaxFilesPerCommit, metadata.MaxCommitFiles)
		}
	}
	if strings.Contains(sections, "postgres") && c.Postgres.URL == "" {
		return errors.New("postgres.url: is required (flag -postgres-url, env FLOE_POSTGRES_URL)")
	}
	if strings.Contains(sections, "s3") {
		if c.S3.Bucket == "" {
			return errors.New("s3.bucket: is required (flag -s3-bucket, env FLOE_S3_BUCKET)")
		}
		if pc := c.S3.PutChecksum; pc != s3store.PutChecksumCRC32C && pc != s3store.PutChecksumNone {
			return fmt.Errorf("s3.put_checksum: %q must be %s or %s", pc, s3store.PutChecksumCRC32C, s3store.PutChecksumNone)
		}
		if err := c.s3Config().Validate(); err != nil {
			return fmt.Errorf("s3: %w", err)
		}
	}
	if strings.Contains(sections, "iceberg") {
		if err := c.Iceberg.validate(); err != nil {
			return err
		}
	}
	if strings.Contains(sections, "auth") {
		if err := c.Auth.validate(); err != nil {
			return err
		}
	}
	if strings.Contains(sections, "compactor") {
		cc := c.Compactor
		switch {
		case cc.OrphanAge < cc.Grace:
			return fmt.Errorf("compactor.orphan_age: %v must be at least compactor.grace (%v)", cc.OrphanAge, cc.Grace)
		case cc.MergeSmallBytes > 0 && cc.MergeTargetBytes < cc.MergeSmallBytes:
			return fmt.Errorf("compactor.merge_target_bytes: %d must be at least compactor.merge_small_bytes (%d)", cc.MergeTargetBytes, cc.MergeSmallBytes)
		}
	}
	return nil
}

// levelText checks a log level.
type levelText struct{}

func (levelText) check(text string) error {
	switch strings.ToLower(text) {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("log.level: %q must be debug, info, warn or error", text)
}

// s3Config is the object store's configuration.
func (c *Config) s3Config() s3store.Config {
	s := s3store.DefaultConfig()
	s.Bucket, s.Endpoint, s.Region = c.S3.Bucket, c.S3.Endpoint, c.S3.Region
	s.AccessKey, s.SecretKey, s.PathStyle = c.S3.AccessKey, c.S3.SecretKey, c.S3.PathStyle
	s.UnsignedPayload, s.CAFile, s.PutChecksum = c.S3.UnsignedPayload, c.S3.CAFile, c.S3.PutChecksum
	return s
}
