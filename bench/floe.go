package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/kpartition"
	"github.com/floe-broker/floe/kbatch"
)

// MaxSubscribePartitions is the partitions one floe subscription covers;
// a consumer with more opens several.
const MaxSubscribePartitions = 1024

// FloeConfig configures FloeSystem.
type FloeConfig struct {
	// Addrs are the agents' gRPC addresses; producer i uses Addrs[i%len],
	// consumer i Addrs[(i+1)%len] (another agent than its producer's).
	Addrs []string
	// MetricsAddrs are the agents' /metrics addresses (host:port).
	MetricsAddrs []string
	// RecordSize is each record's value size (plus an 8-byte key).
	RecordSize int
	// MaxInFlight bounds each producer's unanswered requests.
	MaxInFlight int
	// TLS, optional, dials the agents with TLS.
	TLS *tls.Config
	// Records drives the per-record API (Produce, records in Subscribe)
	// instead of the batch data plane (ProduceBatches, batches in
	// Subscribe), for comparison.
	Records bool
	// TopicConfig, optional, is the config of the topics Setup creates
	// (floe_table.go: a catch-up from the Iceberg table).
	TopicConfig map[string]string
	// Affinity sends each partition's batches to the agent that
	// DescribePlacement prefers for it (client.Router from Addrs[0]):
	// each request is split by agent (floe_affinity.go); consumers read
	// each partition from that agent too (client.SubscribeAffinityBatches).
	// Batches only.
	Affinity bool
}

func (c FloeConfig) validate() error {
	switch {
	case len(c.Addrs) == 0:
		return errors.New("bench: FloeConfig.Addrs is empty")
	case c.RecordSize < valueHeader:
		return fmt.Errorf("%w: FloeConfig.RecordSize is %d", ErrRecordTooSmall, c.RecordSize)
	case c.MaxInFlight < 1:
		return fmt.Errorf("bench: FloeConfig.MaxInFlight %d must be at least 1", c.MaxInFlight)
	}
	return nil
}

// FloeSystem drives floe agents through the Go client.
type FloeSystem struct {
	cfg      FloeConfig
	routerMu sync.Mutex     // guards router
	router   *client.Router // Affinity: the topic's routes (made on first use after Setup)
	// written (guarded by routerMu), set by Reconnect with Affinity: each
	// partition's agent address as the router had it before the restart,
	// the agent that wrote its files. The restarted agents get new node
	// ids, so the placement they answer moves partitions; a catch-up read
	// follows written instead, so that each agent loads only its own files.
	written []string
	clients []*client.Client
	scraper *Scraper
	topic   string
	parts   int32 // the topic's partitions (set by Setup, else asked)
}

var _ System = (*FloeSystem)(nil)

// NewFloeSystem connects to the agents (lazily).
func NewFloeSystem(cfg FloeConfig) (*FloeSystem, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &FloeSystem{cfg: cfg, scraper: NewScraper(cfg.MetricsAddrs)}
	var opts []grpc.DialOption
	if cfg.TLS != nil {
		opts = append(opts, client.WithTLS(cfg.TLS))
	}
	for _, a := range cfg.Addrs {
		c, err := client.Dial(a, opts...)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.clients = append(s.clients, c)
	}
	return s, nil
}

// Name implements System.
func (s *FloeSystem) Name() string { return "floe" }

// Setup implements System: it creates the topic.
func (s *FloeSystem) Setup(ctx context.Context, topic string, partitions int) error {
	if _, err := s.clients[0].CreateTopic(ctx, topic, int32(partitions), s.cfg.TopicConfig); err != nil {
		return fmt.Errorf("bench: create topic %s: %w", topic, err)
	}
	s.topic, s.parts = topic, int32(partitions)
	if s.cfg.Affinity {
		s.waitPlacement(ctx)
	}
	s.routerMu.Lock()
	s.written = nil
	s.routerMu.Unlock()
	return s.closeRouter()
}

// DropTopic implements TopicDropper.
func (s *FloeSystem) DropTopic(ctx context.Context, topic string) error {
	if _, err := s.clients[0].Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: topic}); err != nil {
		return fmt.Errorf("bench: delete topic %s: %w", topic, err)
	}
	return nil
}

// Close implements System.
func (s *FloeSystem) Close() error {
	errs := []error{s.closeRouter()}
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Disconnect implements Reconnecter: with Affinity it keeps each
// partition's route (written: the agent the producers wrote it through)
// and closes the router, which is made again on next use.
func (s *FloeSystem) Disconnect() error {
	s.routerMu.Lock()
	if s.router != nil && s.cfg.Affinity && s.parts > 0 {
		s.written = make([]string, s.parts)
		for p := range s.written {
			s.written[p] = s.router.Route(int32(p)).Addr()
		}
	}
	s.routerMu.Unlock()
	return s.closeRouter()
}

// Reconnect implements Reconnecter: each client's connection is waited
// for until its agent answers (DescribeTopic, waiting for the connection
// to be ready).
func (s *FloeSystem) Reconnect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, reconnectWait)
	defer cancel()
	for _, c := range s.clients {
		if _, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic}, grpc.WaitForReady(true)); err != nil {
			return fmt.Errorf("bench: agent %s after restart: %w", c.Addr(), err)
		}
	}
	return nil
}

// waitPlacement waits, up to placementWait, until the placement spreads
// the topic's partitions over every agent the harness dials: agents that
// have just started are not all in the agents table yet, and a router made
// before they are sends every partition to the others for its first
// refresh (files of every partition, which each agent then loads for the
// partitions it reads). Past the wait it goes on with what there is.
func (s *FloeSystem) waitPlacement(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, placementWait)
	defer cancel()
	for {
		pl, err := s.clients[0].Topics.DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: s.topic})
		used := map[int32]bool{}
		for _, a := range pl.GetPartitionAgents() {
			used[a] = true
		}
		if err == nil && (len(pl.GetAgents()) == 0 || len(used) >= min(len(s.clients), int(s.parts))) {
			return // placed over every agent, or no placement (no agents table) to wait for
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// placementWait bounds waitPlacement.
const placementWait = 30 * time.Second

// clientAt is the harness's client of the agent at addr (nil: none).
func (s *FloeSystem) clientAt(addr string) *client.Client {
	for _, c := range s.clients {
		if c.Addr() == addr {
			return c
		}
	}
	return nil
}

// reconnectWait bounds Reconnect.
const reconnectWait = time.Minute

// Stats implements System from the agents' metrics.
func (s *FloeSystem) Stats(ctx context.Context) (ServerStats, error) {
	if len(s.scraper.Endpoints) == 0 {
		return ServerStats{Metrics: Metrics{}}, nil
	}
	per, err := s.scraper.Scrape(ctx)
	if err != nil {
		return ServerStats{}, err
	}
	st := ServerStats{Metrics: Total(per)}
	st.CPUSeconds = st.Metrics.Sum("process_cpu_seconds_total")
	for _, m := range per {
		st.RSSBytes = append(st.RSSBytes, m.Sum("process_resident_memory_bytes"))
	}
	return st, nil
}

// Consume implements System with subscriptions of up to
// MaxSubscribePartitions partitions each; with Affinity each partition is
// read from its preferred agent (falling back to Addrs[0]), and the
// consumers share the partitions by agent (affinityShare).
func (s *FloeSystem) Consume(ctx context.Context, i, n int, earliest bool, fn func([]byte)) error {
	c := s.clients[(i+1)%len(s.clients)]
	desc, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic})
	if err != nil {
		return fmt.Errorf("bench: describe topic %s: %w", s.topic, err)
	}
	var router *client.Router // Affinity: each partition read from its agent
	if s.cfg.Affinity && !s.cfg.Records {
		if router, err = s.routerFor(ctx); err != nil {
			return err
		}
	}
	var (
		mine   []int32
		pinned map[string][]int32 // written routes: agent address -> partitions read there
	)
	if router != nil {
		s.routerMu.Lock()
		owner := s.written
		s.routerMu.Unlock()
		if len(owner) != int(desc.GetTopic().GetPartitions()) {
			owner = make([]string, desc.GetTopic().GetPartitions())
			for p := range owner {
				owner[p] = router.Route(int32(p)).Addr()
			}
		} else {
			pinned = map[string][]int32{}
		}
		mine = affinityShare(owner, i, n)
		for _, p := range mine {
			if pinned != nil {
				pinned[owner[p]] = append(pinned[owner[p]], p)
			}
		}
	} else {
		for p := int32(i); p < desc.GetTopic().GetPartitions(); p += int32(n) {
			mine = append(mine, p)
		}
	}
	type job struct {
		parts []int32
		c     *client.Client // nil: through the router
	}
	var jobs []job
	switch {
	case pinned != nil:
		for addr, parts := range pinned {
			pc := s.clientAt(addr)
			if pc == nil {
				return fmt.Errorf("bench: partitions %v were written through %s, an agent the harness does not dial", parts, addr)
			}
			for lo := 0; lo < len(parts); lo += MaxSubscribePartitions {
				jobs = append(jobs, job{parts: parts[lo:min(lo+MaxSubscribePartitions, len(parts))], c: pc})
			}
		}
	default:
		for lo := 0; lo < len(mine); lo += MaxSubscribePartitions {
			j := job{parts: mine[lo:min(lo+MaxSubscribePartitions, len(mine))]}
			if router == nil {
				j.c = c
			}
			jobs = append(jobs, j)
		}
	}
	start := &floev1.StartPosition{Position: &floev1.StartPosition_Latest{Latest: true}}
	if earliest {
		start = &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // one fn call at a time
		errMu    sync.Mutex
		firstErr error
	)
	for _, j := range jobs {
		parts := j.parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &floev1.SubscribeRequest{Topic: s.topic, Partitions: parts, Start: start, MaxBytes: 4 << 20, Batches: !s.cfg.Records}
			next := map[int32]int64{} // batches: partition -> offset due
			seen := map[int32]bool{}  // batches: next holds an offset delivered
			// walk hands over the records of a batches answer from offset
			// from on: every record checked (CRC, fields) and handed over
			// without building records; offsets must follow on from the
			// last one handed over, one by one.
			walk := func(r *floev1.SubscribeResponse, from int64) error {
				p := r.GetPartition()
				mu.Lock()
				defer mu.Unlock()
				_, err := client.WalkBatches(r.GetBatches(), max(from, next[p]), 0, func(kr *kbatch.Record) error {
					if seen[p] && kr.Offset != next[p] {
						return fmt.Errorf("bench: partition %d: record at offset %d, expected %d", p, kr.Offset, next[p])
					}
					seen[p], next[p] = true, kr.Offset+1
					fn(kr.Value)
					return nil
				})
				if err != nil {
					return err
				}
				next[p] = max(next[p], r.GetNextOffset())
				return nil
			}
			var err error
			if j.c == nil {
				err = client.SubscribeAffinityBatches(ctx, router, req, client.ResumeOptions{Lend: true}, walk)
			} else {
				// Lent: fn keeps no value it is handed (it counts them, reads a
				// time stamp), so each answer's receive buffer is reused.
				err = j.c.SubscribeLent(ctx, req, func(r *floev1.SubscribeResponse) error {
					if len(r.GetBatches()) == 0 {
						mu.Lock()
						defer mu.Unlock()
						for _, rec := range r.GetRecords() {
							fn(rec.GetValue())
						}
						return nil
					}
					return walk(r, 0)
				})
			}
			if err != nil && ctx.Err() == nil {
				errMu.Lock()
				firstErr = errors.Join(firstErr, fmt.Errorf("bench: subscribe: %w", err))
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// NewProducer implements System: a ProduceBatchesStream (ProduceStream
// with FloeConfig.Records) with at most MaxInFlight unanswered requests.
func (s *FloeSystem) NewProducer(ctx context.Context, i int) (Producer, error) {
	c := s.clients[i%len(s.clients)]
	if !s.cfg.Records && s.parts <= 0 {
		desc, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic})
		if err != nil {
			return nil, fmt.Errorf("bench: describe topic %s: %w", s.topic, err)
		}
		s.parts = desc.GetTopic().GetPartitions()
	}
	if s.cfg.Affinity && !s.cfg.Records {
		return s.newRoutedProducer(ctx, i)
	}
	return s.newFloeProducer(c, i), nil
}

func (s *FloeSystem) newFloeProducer(c *client.Client, i int) *floeProducer {
	pctx, cancel := context.WithCancel(context.Background())
	return &floeProducer{
		c: c, topic: s.topic, size: s.cfg.RecordSize, id: uint64(i), records: s.cfg.Records, parts: s.parts,
		slots: make(chan struct{}, s.cfg.MaxInFlight), ctx: pctx, cancel: cancel, arena: recordArena{size: s.cfg.RecordSize},
	}
}

type floePending struct {
	done func(err error)
}

// floeProducer pipelines produce requests on one stream, reopened after a
// failure.
type floeProducer struct {
	c     *client.Client
	topic string
	size  int
	id    uint64
	slots chan struct{}
	// arena: Send's records (keys and values reused: records are
	// keyed by producer id and schedule index, values of size bytes).
	arena recordArena
	// records: the per-record API; else batches encoded here, one per
	// partition of parts (Kafka's partitioner, as the agent's).
	records bool
	parts   int32

	ctx    context.Context // lifetime of the streams
	cancel context.CancelFunc
	recv   sync.WaitGroup // receivers

	sendMu  sync.Mutex // serialises Send
	mu      sync.Mutex // guards stream, pending, nextID
	stream  produceStream
	pending map[uint64]floePending
	nextID  uint64
}

func (p *floeProducer) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.records {
		// The request holds the values themselves, and gRPC may read a
		// sent message lazily: fresh ones every time.
		p.arena = recordArena{size: p.size}
	}
	return p.sendRecs(p.arena.records(p.id, b), func(err error) { done(0, len(b.Intended), err) })
}

// sendRecs sends recs as one request, a slot taken; done reports it.
func (p *floeProducer) sendRecs(recs []*floev1.Record, done func(err error)) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	if p.stream == nil {
		st, err := p.open()
		if err != nil {
			p.mu.Unlock()
			<-p.slots
			return fmt.Errorf("bench: open produce stream: %w", err)
		}
		p.stream = st
		p.pending = map[uint64]floePending{}
		p.recv.Add(1)
		go p.receive(st, p.pending)
	}
	st, pending := p.stream, p.pending
	p.nextID++
	id := p.nextID
	pending[id] = floePending{done: done}
	p.mu.Unlock()
	// Not under mu: Send may wait for flow control while answers arrive.
	err := st.send(id, recs)
	if err != nil {
		p.mu.Lock()
		_, mine := pending[id]
		delete(pending, id)
		if p.stream == st {
			p.stream = nil // the receiver fails what else is pending
		}
		p.mu.Unlock()
		if !mine {
			return nil // the receiver already answered it with the stream's error
		}
		<-p.slots
		return fmt.Errorf("bench: produce stream send: %w", err)
	}
	return nil
}

// receive answers the requests of one stream until it breaks.
func (p *floeProducer) receive(st produceStream, pending map[uint64]floePending) {
	defer p.recv.Done()
	for {
		resp, err := st.recv()
		if err != nil {
			p.mu.Lock()
			if p.stream == st {
				p.stream = nil
			}
			left := make([]floePending, 0, len(pending))
			for id, pd := range pending {
				left = append(left, pd)
				delete(pending, id)
			}
			p.mu.Unlock()
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				err = errors.New("bench: produce stream closed")
			}
			for _, pd := range left {
				pd.done(err)
				<-p.slots
			}
			return
		}
		p.mu.Lock()
		pd, ok := pending[resp.GetRequestId()]
		delete(pending, resp.GetRequestId())
		p.mu.Unlock()
		if !ok {
			continue
		}
		var rerr error
		if c := codes.Code(resp.GetErrorCode()); c != codes.OK {
			rerr = status.Error(c, resp.GetErrorMessage())
		}
		pd.done(rerr)
		<-p.slots
	}
}

// Close half-closes the stream, waits for the answers (bounded by ctx)
// and ends the stream.
func (p *floeProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.stream != nil {
		_ = p.stream.closeSend()
	}
	p.mu.Unlock()
	drained := make(chan struct{})
	go func() {
		p.recv.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	p.cancel()
	<-drained
	return nil
}

// produceStream is a ProduceStream or a ProduceBatchesStream.
type produceStream interface {
	send(id uint64, recs []*floev1.Record) error
	recv() (*floev1.ProduceStreamResponse, error) // the answer's id and error only
	closeSend() error
}

// open opens the producer's stream.
func (p *floeProducer) open() (produceStream, error) {
	if p.records {
		st, err := p.c.Log.ProduceStream(p.ctx)
		return &recordStream{st: st, topic: p.topic}, err
	}
	st, err := p.c.Log.ProduceBatchesStream(p.ctx)
	return &batchStream{st: st, topic: p.topic, parts: p.parts}, err
}

type recordStream struct {
	st    floev1.LogService_ProduceStreamClient
	topic string
}

func (s *recordStream) send(id uint64, recs []*floev1.Record) error {
	return s.st.Send(&floev1.ProduceStreamRequest{RequestId: id, Request: &floev1.ProduceRequest{Topic: s.topic, Records: recs}})
}
func (s *recordStream) recv() (*floev1.ProduceStreamResponse, error) { return s.st.Recv() }
func (s *recordStream) closeSend() error                             { return s.st.CloseSend() }

type batchStream struct {
	st    floev1.LogService_ProduceBatchesStreamClient
	topic string
	parts int32
}

// send encodes recs as one batch per partition (by key, as the agent
// partitions) and sends them as one request.
func (s *batchStream) send(id uint64, recs []*floev1.Record) error {
	byPart := map[int32][]*floev1.Record{}
	var order []int32
	for _, r := range recs {
		p := kpartition.ForKey(r.GetKey(), s.parts)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], r)
	}
	req := &floev1.ProduceBatchesRequest{Topic: s.topic, Partitions: make([]*floev1.PartitionBatches, len(order))}
	for i, p := range order {
		b, err := client.EncodeBatch(byPart[p], floev1.Compression_COMPRESSION_NONE, nil)
		if err != nil {
			return fmt.Errorf("bench: encode batch: %w", err)
		}
		req.Partitions[i] = &floev1.PartitionBatches{Partition: p, Batches: b}
	}
	return s.st.Send(&floev1.ProduceBatchesStreamRequest{RequestId: id, Request: req})
}

func (s *batchStream) recv() (*floev1.ProduceStreamResponse, error) {
	m, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	return &floev1.ProduceStreamResponse{RequestId: m.GetRequestId(), ErrorCode: m.GetErrorCode(), ErrorMessage: m.GetErrorMessage()}, nil
}
func (s *batchStream) closeSend() error { return s.st.CloseSend() }
