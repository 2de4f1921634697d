package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
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
	cfg     FloeConfig
	clients []*client.Client
	scraper *Scraper
	topic   string
}

var _ System = (*FloeSystem)(nil)

// NewFloeSystem connects to the agents (lazily).
func NewFloeSystem(cfg FloeConfig) (*FloeSystem, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &FloeSystem{cfg: cfg, scraper: NewScraper(cfg.MetricsAddrs)}
	for _, a := range cfg.Addrs {
		c, err := client.Dial(a)
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
	if _, err := s.clients[0].CreateTopic(ctx, topic, int32(partitions), nil); err != nil {
		return fmt.Errorf("bench: create topic %s: %w", topic, err)
	}
	s.topic = topic
	return nil
}

// Close implements System.
func (s *FloeSystem) Close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

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
// MaxSubscribePartitions partitions each.
func (s *FloeSystem) Consume(ctx context.Context, i, n int, earliest bool, fn func([]byte)) error {
	c := s.clients[(i+1)%len(s.clients)]
	desc, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: s.topic})
	if err != nil {
		return fmt.Errorf("bench: describe topic %s: %w", s.topic, err)
	}
	var mine []int32
	for p := int32(i); p < desc.GetTopic().GetPartitions(); p += int32(n) {
		mine = append(mine, p)
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
	for lo := 0; lo < len(mine); lo += MaxSubscribePartitions {
		parts := mine[lo:min(lo+MaxSubscribePartitions, len(mine))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &floev1.SubscribeRequest{Topic: s.topic, Partitions: parts, Start: start, MaxBytes: 4 << 20}
			err := c.Subscribe(ctx, req, func(r *floev1.SubscribeResponse) error {
				mu.Lock()
				defer mu.Unlock()
				for _, rec := range r.GetRecords() {
					fn(rec.GetValue())
				}
				return nil
			})
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

// NewProducer implements System: a ProduceStream with at most
// MaxInFlight unanswered requests.
func (s *FloeSystem) NewProducer(ctx context.Context, i int) (Producer, error) {
	pctx, cancel := context.WithCancel(context.Background())
	return &floeProducer{
		c: s.clients[i%len(s.clients)], topic: s.topic, size: s.cfg.RecordSize, id: uint64(i),
		slots: make(chan struct{}, s.cfg.MaxInFlight), ctx: pctx, cancel: cancel,
	}, nil
}

type floePending struct {
	n    int
	done func(from, to int, err error)
}

// floeProducer pipelines produce requests on one stream, reopened after a
// failure.
type floeProducer struct {
	c     *client.Client
	topic string
	size  int
	id    uint64
	slots chan struct{}

	ctx    context.Context // lifetime of the streams
	cancel context.CancelFunc
	recv   sync.WaitGroup // receivers

	sendMu  sync.Mutex // serialises Send
	mu      sync.Mutex // guards stream, pending, nextID
	stream  floev1.LogService_ProduceStreamClient
	pending map[uint64]floePending
	nextID  uint64
}

func (p *floeProducer) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	recs := make([]*floev1.Record, len(b.Intended))
	for i, t := range b.Intended {
		idx := uint64(b.First) + uint64(i)
		key := make([]byte, 8)
		binary.BigEndian.PutUint64(key, p.id<<40|idx)
		recs[i] = &floev1.Record{Key: key, Value: MakeValue(p.size, t, idx)}
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	if p.stream == nil {
		st, err := p.c.Log.ProduceStream(p.ctx)
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
	pending[id] = floePending{n: len(recs), done: done}
	p.mu.Unlock()
	// Not under mu: Send may wait for flow control while answers arrive.
	err := st.Send(&floev1.ProduceStreamRequest{RequestId: id, Request: &floev1.ProduceRequest{Topic: p.topic, Records: recs}})
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
func (p *floeProducer) receive(st floev1.LogService_ProduceStreamClient, pending map[uint64]floePending) {
	defer p.recv.Done()
	for {
		resp, err := st.Recv()
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
				pd.done(0, pd.n, err)
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
		pd.done(0, pd.n, rerr)
		<-p.slots
	}
}

// Close half-closes the stream, waits for the answers (bounded by ctx)
// and ends the stream.
func (p *floeProducer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.stream != nil {
		_ = p.stream.CloseSend()
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
