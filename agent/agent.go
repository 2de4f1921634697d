// Package agent is floe's gRPC front end: it validates requests, produces
// into the batcher, serves fetches and subscriptions from the object store
// (through a read cache of recent files) and administers topics.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/readpath"
)

// Producer appends batches for commit (batcher.Batcher).
type Producer interface {
	Append(ctx context.Context, topicID int64, partition int32, batch []byte) (*batcher.Pending, error)
}

// ObjectReader reads stored files (objectstore.Store).
type ObjectReader interface {
	Get(ctx context.Context, key string, off, length int64) ([]byte, error)
}

// Agent serves floe's gRPC API.
type Agent struct {
	floev1.UnimplementedTopicServiceServer
	floev1.UnimplementedLogServiceServer
	floev1.UnimplementedGroupServiceServer

	cfg      Config
	meta     metadata.Store
	store    ObjectReader
	producer Producer
	log      *slog.Logger
	m        *metrics

	topics *topicCache
	cache  *readpath.Cache
	hub    *hub
	loads  *readpath.Loader // object store reads on cache misses, bounded in bytes
	index  *readpath.Index  // recent batches and high watermarks (readpath/index.go)
	grp    *groups          // consumer group subscriptions, replay budgets, lag (groups_state.go)

	schemas schemaCache // compiled value schemas (schema.go)
	cluster clusterRef  // the live agents DescribePlacement names (placement.go)

	// streamMem is the stream budget (StreamBufferBytes) of every
	// subscription and produce stream (streambudget.go).
	streamMem *streamBudget
	// readers counts the partitions subscriptions read (topics_limits.go).
	readers *partitionReaders
	// admin is the AdminService (admin.go).
	admin *adminServer

	tables    TableReader  // offsets below the raw log start (table.go); nil: none
	tableOnce sync.Once    // makes tableSeen
	tableSeen *tableTopics // topics whose table serves them
}

// Options are an Agent's collaborators.
type Options struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// Tables serves offsets below the raw log start of topics that set
	// retention.raw.ms from their Iceberg tables (nil: OutOfRange there).
	Tables TableReader
}

// New builds an agent. Call Run to follow commit notices and OnCommit from
// the batcher's hook.
func New(cfg Config, meta metadata.Store, store ObjectReader, producer Producer, opts Options) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if meta == nil || store == nil || producer == nil {
		return nil, errors.New("agent: metadata, store and producer are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Object store errors are marked so that they reach clients as
	// Unavailable whatever wraps them.
	store = markedReader{store}
	a := &Agent{
		cfg: cfg, meta: meta, store: store, producer: producer,
		log:   opts.Logger,
		m:     newMetrics(opts.Registry),
		cache: readpath.NewCache(cfg.CacheBytes),
		hub:   newHub(),

		streamMem: newStreamBudget(cfg.StreamBufferBytes),
		readers:   &partitionReaders{max: int64(cfg.MaxSubscribedPartitions)},
		tables:    opts.Tables,
	}
	// A topic the read index watches is re-read by the index poll, which
	// drops it once gone: its name need not be looked up again meanwhile.
	a.topics = newTopicCache(meta, cfg.TopicCacheTTL, func(id int64) bool { return a.index.Watches(id) })
	a.loads = readpath.NewLoader(store, a.cache, cfg.readPath())
	a.index = readpath.NewIndex(cfg.IndexMaxPartitions, cfg.IndexMaxBatches)
	a.grp = newGroups(a, opts.Registry)
	a.admin = &adminServer{store: meta, maxACLs: cfg.MaxACLs}
	return a, nil
}

// Register adds the agent's services to s, a server built with
// GRPCServerOptions.
func (a *Agent) Register(s grpc.ServiceRegistrar) {
	floev1.RegisterTopicServiceServer(s, a)
	floev1.RegisterLogServiceServer(s, a)
	floev1.RegisterGroupServiceServer(s, a)
	floev1.RegisterAdminServiceServer(s, a.admin) // admin.go
}

// OnCommit is the batcher's hook: it caches the file, records its batches
// in the read index and wakes readers. The file's buffer goes back to the
// batcher (f.Release) once it has left the read cache and every answer
// that references it has been written (readpath.Cache.AddVerifiedOwned).
// The file is cached as verified: each of its batches had its CRC checked
// at the edge when it was produced (kbatch.ParseInfo, before the batcher
// took it) and the batcher copies batches into the file unchanged, so its
// readers skip the per-batch CRCs as they do for a file whose body CRC-32C
// held when it was loaded.
func (a *Agent) OnCommit(f batcher.CommittedFile) {
	if f.Release != nil {
		a.cache.AddVerifiedOwned(f.Key, f.Data, func([]byte) { f.Release() }).Release()
	} else {
		a.cache.AddVerified(f.Key, f.Data)
	}
	a.index.CommittedFile(f)
	n := metadata.Notice{Partitions: make([]metadata.PartitionNotice, 0, len(f.Commits))}
	for i, c := range f.Commits {
		if f.Results[i].Err != nil {
			continue
		}
		n.Partitions = append(n.Partitions, metadata.PartitionNotice{TopicID: c.TopicID, Partition: c.Partition})
	}
	a.hub.notify(n)
}

// Run follows the metadata store's commit notices until ctx ends,
// resubscribing after failures. It returns once the whole-file loads in
// progress have ended.
func (a *Agent) Run(ctx context.Context) error {
	defer a.loads.Close()
	expired := make(chan struct{})
	go func() { defer close(expired); a.grp.expireLoop(ctx) }()
	defer func() { <-expired }()
	for {
		ch, err := a.meta.Notices(ctx)
		if err == nil {
			a.followNotices(ctx, ch)
		} else {
			a.log.Warn("commit notices unavailable, readers fall back to polling", "err", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		// The notice stream broke: wake everyone (they re-check) and retry.
		a.hub.notify(metadata.Notice{All: true})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// CreateTopic implements floev1.TopicServiceServer.
func (a *Agent) CreateTopic(ctx context.Context, req *floev1.CreateTopicRequest) (*floev1.CreateTopicResponse, error) {
	if req.GetPartitions() <= 0 || req.GetPartitions() > metadata.MaxPartitions {
		return nil, status.Errorf(codes.InvalidArgument, "partitions %d must be within 1..%d", req.GetPartitions(), metadata.MaxPartitions)
	}
	if err := a.cfg.checkTopicConfig(req.GetConfig()); err != nil {
		return nil, err
	}
	existing, err := a.meta.ListTopics(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := a.cfg.checkTopicCounts(existing, req.GetPartitions()); err != nil {
		return nil, err
	}
	t, err := a.meta.CreateTopic(ctx, metadata.TopicSpec{Name: req.GetName(), Partitions: req.GetPartitions(), Config: req.GetConfig()})
	if err != nil {
		return nil, toStatus(err)
	}
	return &floev1.CreateTopicResponse{Topic: topicPB(t)}, nil
}

// DeleteTopic implements floev1.TopicServiceServer.
func (a *Agent) DeleteTopic(ctx context.Context, req *floev1.DeleteTopicRequest) (*floev1.DeleteTopicResponse, error) {
	if err := metadata.ValidateTopicName(req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	t, cached := a.topics.peek(req.GetName())
	if err := a.meta.DeleteTopic(ctx, req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	a.topics.forget(req.GetName())
	if cached {
		// Its readers here re-read at once and learn that it is gone.
		a.topics.dropID(t.ID)
		a.hub.notify(metadata.Notice{Partitions: a.index.DropTopic(t.ID)})
	}
	return &floev1.DeleteTopicResponse{}, nil
}

// ListTopics implements floev1.TopicServiceServer.
// It answers one page (pageTopics) within the fetch limit.
func (a *Agent) ListTopics(ctx context.Context, req *floev1.ListTopicsRequest) (*floev1.ListTopicsResponse, error) {
	if req.GetPageSize() < 0 {
		return nil, errf(codes.InvalidArgument, "list topics: page_size %d must not be negative", req.GetPageSize())
	}
	ts, err := a.meta.ListTopics(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	page, next := pageTopics(ts, req.GetPageToken(), int(req.GetPageSize()), a.cfg.MaxFetchBytes)
	return &floev1.ListTopicsResponse{Topics: page, NextPageToken: next}, nil
}

// DescribeTopic implements floev1.TopicServiceServer.
func (a *Agent) DescribeTopic(ctx context.Context, req *floev1.DescribeTopicRequest) (*floev1.DescribeTopicResponse, error) {
	if err := metadata.ValidateTopicName(req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	d, err := a.meta.DescribeTopic(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &floev1.DescribeTopicResponse{Topic: topicPB(d.Topic)}
	for _, p := range d.PartitionStates {
		resp.Partitions = append(resp.Partitions, &floev1.PartitionInfo{
			Partition: p.Partition, LogStartOffset: p.LogStartOffset, HighWatermark: p.HighWatermark})
	}
	a.describeStorage(ctx, d.ID, resp)
	a.describeIceberg(ctx, d, resp)
	a.describeTableStarts(ctx, d.ID, resp) // table.go
	return resp, nil
}

func topicPB(t metadata.Topic) *floev1.Topic {
	return &floev1.Topic{Id: t.ID, Name: t.Name, Partitions: t.Partitions, Config: t.Config, CreatedAtMs: t.CreatedAt.UnixMilli()}
}

// topicPartition resolves a topic and checks the partition exists.
func (a *Agent) topicPartition(ctx context.Context, name string, partition int32) (metadata.Topic, error) {
	t, err := a.topics.get(ctx, name)
	if err != nil {
		return t, toStatus(err)
	}
	if partition < 0 || partition >= t.Partitions {
		return t, status.Errorf(codes.NotFound, "partition %d of topic %q does not exist (it has %d)", partition, name, t.Partitions)
	}
	return t, nil
}

func errf(c codes.Code, format string, args ...any) error {
	return status.Error(c, fmt.Sprintf(format, args...))
}
