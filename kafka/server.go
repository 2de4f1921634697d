package kafka

import (
	"context"
	"errors"
	"fmt"
	"github.com/floe-broker/floe/batcher"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
)

// Backend is what the Kafka front end needs of an agent (*agent.Agent, in
// agent/kafkabridge.go). Its errors are gRPC statuses (errors.go maps
// them to Kafka error codes).
type Backend interface {
	KafkaLimits() agent.KafkaLimits
	KafkaTopic(ctx context.Context, name string) (metadata.Topic, error)
	KafkaTopicByID(ctx context.Context, id int64) (metadata.Topic, error)
	KafkaTopics(ctx context.Context) ([]metadata.Topic, error)
	KafkaPartitionStates(ctx context.Context, topicID int64) ([]metadata.PartitionState, error)
	KafkaListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error)
	KafkaInitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error)
	// KafkaExpireProducerEpochs forgets at most limit producer ids not
	// bumped for after (metadata.ProducerStore.ExpireProducerEpochs).
	KafkaExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error)
	// KafkaNewWriter is the batcher's view of one connection's produce
	// requests (nil: none kept); KafkaAppend finds it in its context
	// (batcher.WithWriter).
	KafkaNewWriter() *batcher.Writer
	KafkaAppend(ctx context.Context, topic string, partition int32, batch []byte) (*agent.KafkaPending, error)
	KafkaRead(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (agent.KafkaBatches, error)
	KafkaReadHeld(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (agent.KafkaHeld, error)
	KafkaWake(tps []metadata.TopicPartition) []<-chan struct{}
	KafkaCreateTopic(ctx context.Context, name string, partitions int32, config map[string]string) (metadata.Topic, error)
	KafkaDeleteTopic(ctx context.Context, name string) error
	KafkaCommitOffsets(ctx context.Context, group, memberID string, memberEpoch int32, offsets []metadata.OffsetCommit) error
	KafkaGroupHeartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error)
	KafkaFetchOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error)
	KafkaListGroups(ctx context.Context) ([]metadata.GroupListing, error)
	KafkaDescribeGroup(ctx context.Context, group string) (metadata.GroupDescription, error)
	KafkaDeleteGroup(ctx context.Context, group string) error
	KafkaDeleteOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) error
	KafkaBeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error)
	KafkaLeaveAgent(ctx context.Context, id string) error
	KafkaProducers(ctx context.Context, topicID int64, partition int32, limit int) ([]metadata.ProducerInfo, error)
	// The gRPC TopicService's own methods: the Kafka APIs of the same
	// name map onto them one to one.
	AlterTopicConfig(ctx context.Context, req *floev1.AlterTopicConfigRequest) (*floev1.AlterTopicConfigResponse, error)
	DeleteRecords(ctx context.Context, req *floev1.DeleteRecordsRequest) (*floev1.DeleteRecordsResponse, error)
}

var _ Backend = (*agent.Agent)(nil)

// Options are a Server's collaborators.
type Options struct {
	Logger *slog.Logger
	// Guard enforces authentication and ACLs (nil or off: every
	// connection may do everything).
	Guard *access.Guard
	// Credentials, for SASL (nil: SaslHandshake offers no mechanism).
	Credentials Credentials
	// ACLs backs CreateAcls, DescribeAcls, DeleteAcls and the SCRAM
	// credential APIs (nil: they answer SECURITY_DISABLED).
	ACLs auth.Store
	// Registry receives the server's metrics (metrics.go; nil: none).
	Registry prometheus.Registerer
}

// Server serves the Kafka protocol on listeners given to Serve.
type Server struct {
	cfg      Config
	be       Backend
	log      *slog.Logger
	opts     Options
	groups   *coordinator   // classic-protocol groups (groups.go)
	agents   *cluster       // the live agents (cluster.go)
	held     atomic.Int64   // bytes every connection holds (respbudget.go)
	owned    *ownedCache    // KIP-848 members\' owned partitions (68_consumer_group_heartbeat.go)
	sessions *fetchSessions // fetch sessions (fetch_sessions.go)
	regex    *regexSubs     // KIP-848 regex subscriptions (regex_subscriptions.go)
	slots    chan struct{}  // one per open connection (MaxConnections)
	requests *requestCounts // requests read, per API key (request_counts.go)

	mu    sync.Mutex // protects conns
	conns map[*conn]struct{}
}

// New builds a server.
func New(cfg Config, be Backend, opts Options) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if be == nil {
		return nil, errors.New("kafka: a backend is required")
	}
	if opts.Guard.Enabled() && opts.Credentials == nil {
		return nil, errors.New("kafka: authentication is on but no SASL credential store is given")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, be: be, log: opts.Logger, opts: opts, slots: make(chan struct{}, cfg.MaxConnections), conns: map[*conn]struct{}{}}
	s.groups = newCoordinator(s)
	s.requests = newRequestCounts()
	s.agents = newCluster(s)
	s.sessions = newFetchSessions(sessionLimits{maxSessions: cfg.MaxFetchSessions, maxParts: cfg.MaxFetchSessionPartitions, evictAfter: cfg.FetchSessionEviction})
	s.owned = &ownedCache{m: map[memberKey][]metadata.TopicPartition{}, max: cfg.MaxGroups * 10}
	s.regex = newRegexSubs(cfg.AgentTTL/4, be.KafkaTopics, cfg.MaxGroups*10)
	if err := s.registerMetrics(opts.Registry); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve accepts connections on lis until ctx ends (or lis fails), then
// closes lis and every connection and returns once their goroutines have
// ended. Produces already appended are waited for (their records are not
// withdrawn) before it returns.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.agents.start(ctx, lis.Addr())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		s.groups.run(ctx)
	}()
	go func() {
		defer wg.Done()
		s.expireProducersLoop(ctx) // producer_expiry.go
	}()
	go func() {
		defer wg.Done()
		s.agents.run(ctx)
	}()
	stop := context.AfterFunc(ctx, func() { lis.Close() })
	defer stop()
	var err error
	for {
		var nc net.Conn
		nc, err = lis.Accept()
		if err != nil {
			if ctx.Err() != nil {
				err = nil
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.log.Warn("kafka: connection refused: kafka.max_connections reached", "remote", nc.RemoteAddr().String(), "max", s.cfg.MaxConnections)
			nc.Close()
			continue
		}
		c := newConn(s, nc)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve(ctx)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			<-s.slots
		}()
	}
	cancel()
	lis.Close()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("kafka: accept: %w", err)
	}
	return nil
}

// Connections returns the number of open client connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
