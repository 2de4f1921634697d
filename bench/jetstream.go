package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStreamConfig configures JetStreamSystem, the peer.
type JetStreamConfig struct {
	// URL is the NATS server's client URL.
	URL string
	// Pid, when positive, is the local nats-server's process id, read from
	// /proc for its CPU time and memory.
	Pid int
	// RecordSize is each message's payload size.
	RecordSize int
	// MaxPending bounds each producer's unacknowledged publishes.
	MaxPending int
}

func (c JetStreamConfig) validate() error {
	switch {
	case c.URL == "":
		return errors.New("bench: JetStreamConfig.URL is empty")
	case c.RecordSize < valueHeader:
		return fmt.Errorf("%w: JetStreamConfig.RecordSize is %d", ErrRecordTooSmall, c.RecordSize)
	case c.MaxPending < 1:
		return fmt.Errorf("bench: JetStreamConfig.MaxPending %d must be at least 1", c.MaxPending)
	}
	return nil
}

// JetStreamSystem drives NATS JetStream through nats.go: one file-storage
// stream with one subject per partition (<topic>.<partition>), published to
// with acknowledged asynchronous publishes (the acknowledgement comes once
// the message is stored) and read with ordered consumers.
type JetStreamSystem struct {
	cfg        JetStreamConfig
	nc         *nats.Conn
	js         jetstream.JetStream
	stream     string
	topic      string
	partitions int
}

var _ System = (*JetStreamSystem)(nil)

// NewJetStreamSystem connects to the server.
func NewJetStreamSystem(cfg JetStreamConfig) (*JetStreamSystem, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.URL, nats.Name("floe-bench"))
	if err != nil {
		return nil, fmt.Errorf("bench: connect to %s: %w", cfg.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	return &JetStreamSystem{cfg: cfg, nc: nc, js: js}, nil
}

// Name implements System.
func (s *JetStreamSystem) Name() string { return "jetstream" }

// Setup implements System: a file-storage stream over <topic>.*.
func (s *JetStreamSystem) Setup(ctx context.Context, topic string, partitions int) error {
	s.stream = "BENCH_" + sanitizeStreamName(topic)
	_, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     s.stream,
		Subjects: []string{topic + ".*"},
		Storage:  jetstream.FileStorage,
		Replicas: 1,
	})
	if err != nil {
		return fmt.Errorf("bench: create stream %s: %w", s.stream, err)
	}
	s.topic, s.partitions = topic, partitions
	return nil
}

func sanitizeStreamName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Close implements System.
func (s *JetStreamSystem) Close() error {
	s.nc.Close()
	return nil
}

// Stats implements System from /proc.
func (s *JetStreamSystem) Stats(context.Context) (ServerStats, error) {
	return pidStats(s.cfg.Pid)
}

// Consume implements System with an ordered consumer over consumer i's
// share of the subjects.
func (s *JetStreamSystem) Consume(ctx context.Context, i, n int, earliest bool, fn func([]byte)) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy}
	if earliest {
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	if n > 1 {
		for p := i; p < s.partitions; p += n {
			cfg.FilterSubjects = append(cfg.FilterSubjects, s.topic+"."+strconv.Itoa(p))
		}
	}
	cons, err := s.js.OrderedConsumer(ctx, s.stream, cfg)
	if err != nil {
		return fmt.Errorf("bench: ordered consumer: %w", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { fn(m.Data()) })
	if err != nil {
		return fmt.Errorf("bench: consume: %w", err)
	}
	<-ctx.Done()
	cc.Stop()
	<-cc.Closed()
	return nil
}

// NewProducer implements System: its own connection and JetStream
// context, publishing asynchronously with at most MaxPending
// unacknowledged messages.
func (s *JetStreamSystem) NewProducer(ctx context.Context, i int) (Producer, error) {
	p := &jsProducer{s: s, id: i, slots: make(chan struct{}, s.cfg.MaxPending)}
	nc, err := nats.Connect(s.cfg.URL, nats.Name(fmt.Sprintf("floe-bench-producer-%d", i)))
	if err != nil {
		return nil, fmt.Errorf("bench: connect to %s: %w", s.cfg.URL, err)
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(s.cfg.MaxPending+1),
		jetstream.WithPublishAsyncTimeout(time.Minute),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) { p.answer(m, nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) { p.answer(m, err) }),
	)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	p.nc, p.js = nc, js
	return p, nil
}

type jsPending struct {
	idx  int
	done func(from, to int, err error)
}

type jsProducer struct {
	s     *JetStreamSystem
	id    int
	nc    *nats.Conn
	js    jetstream.JetStream
	slots chan struct{}

	pending sync.Map // *nats.Msg -> jsPending
}

func (p *jsProducer) answer(m *nats.Msg, err error) {
	v, ok := p.pending.LoadAndDelete(m)
	if !ok {
		return
	}
	pd := v.(jsPending)
	pd.done(pd.idx, pd.idx+1, err)
	<-p.slots
}

func (p *jsProducer) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	for i, t := range b.Intended {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			if i == 0 {
				return ctx.Err()
			}
			done(i, len(b.Intended), ctx.Err())
			return nil
		}
		idx := uint64(b.First) + uint64(i)
		part := (uint64(p.id)*7919 + idx) % uint64(p.s.partitions)
		m := &nats.Msg{Subject: p.s.topic + "." + strconv.FormatUint(part, 10), Data: MakeValue(p.s.cfg.RecordSize, t, idx)}
		p.pending.Store(m, jsPending{idx: i, done: done})
		if _, err := p.js.PublishMsgAsync(m); err != nil {
			if _, mine := p.pending.LoadAndDelete(m); mine {
				<-p.slots
				if i == 0 {
					return fmt.Errorf("bench: publish: %w", err)
				}
				done(i, len(b.Intended), fmt.Errorf("bench: publish: %w", err))
				return nil
			}
		}
	}
	return nil
}

func (p *jsProducer) Close(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	p.nc.Close()
	return nil
}
