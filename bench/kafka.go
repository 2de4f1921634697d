package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaConfig configures KafkaSystem: the one franz-go workload, pointed at
// floe's Kafka listener or at an Apache Kafka broker.
type KafkaConfig struct {
	// Name names the system in reports ("floe-kafka", "kafka", ...).
	Name string
	// Brokers are the seed addresses (host:port).
	Brokers []string
	// RecordSize is each record's value size (plus an 8-byte key, as
	// FloeSystem sends).
	RecordSize int
	// MaxBuffered bounds each producer's unacknowledged records.
	MaxBuffered int
	// MaxInFlight is each producer's produce requests in flight per
	// broker. 0 or 1: an idempotent producer, which franz-go allows only
	// one (a record that falls due while a request is out waits for its
	// answer: up to one whole produce round trip, an agent's linger
	// included, before it is even sent). Above 1 (at most 5, Kafka's
	// bound; the Java client's default is 5 with idempotence on):
	// idempotence off, acks=all still, requests pipelined.
	MaxInFlight int
	// Stats, optional, reads the servers' figures (floe: its agents'
	// metrics); else Pid, when positive, is read from /proc (a local
	// broker's JVM).
	Stats func(context.Context) (ServerStats, error)
	Pid   int
	// TopicConfigs, optional, are the configs of the topics Setup creates.
	TopicConfigs map[string]*string
}

func (c KafkaConfig) validate() error {
	switch {
	case c.Name == "":
		return errors.New("bench: KafkaConfig.Name is empty")
	case len(c.Brokers) == 0:
		return errors.New("bench: KafkaConfig.Brokers is empty")
	case c.RecordSize < valueHeader:
		return fmt.Errorf("%w: KafkaConfig.RecordSize is %d", ErrRecordTooSmall, c.RecordSize)
	case c.MaxBuffered < 1:
		return fmt.Errorf("bench: KafkaConfig.MaxBuffered %d must be at least 1", c.MaxBuffered)
	case c.MaxInFlight < 0 || c.MaxInFlight > 5:
		return fmt.Errorf("bench: KafkaConfig.MaxInFlight %d must be within [0, 5]", c.MaxInFlight)
	}
	return nil
}

// KafkaSystem drives a Kafka-protocol broker through franz-go: acks=all
// idempotent produces to a partition chosen like the other systems'
// (spread over producers and indexes), and direct partition consumers.
type KafkaSystem struct {
	cfg        KafkaConfig
	admin      *kgo.Client
	topic      string
	partitions int
}

var _ System = (*KafkaSystem)(nil)

// NewKafkaSystem opens the admin connection (lazily, as franz-go does).
func NewKafkaSystem(cfg KafkaConfig) (*KafkaSystem, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, fmt.Errorf("bench: kafka client: %w", err)
	}
	return &KafkaSystem{cfg: cfg, admin: cl}, nil
}

// Name implements System.
func (s *KafkaSystem) Name() string { return s.cfg.Name }

// Setup implements System: creates the topic with replication factor 1.
func (s *KafkaSystem) Setup(ctx context.Context, topic string, partitions int) error {
	resp, err := kadm.NewClient(s.admin).CreateTopic(ctx, int32(partitions), 1, s.cfg.TopicConfigs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("bench: create topic %s on %s: %w", topic, s.cfg.Name, err)
	}
	s.topic, s.partitions = topic, partitions
	return nil
}

// DropTopic implements TopicDropper.
func (s *KafkaSystem) DropTopic(ctx context.Context, topic string) error {
	resp, err := kadm.NewClient(s.admin).DeleteTopics(ctx, topic)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				err = r.Err
			}
		}
	}
	if err != nil {
		return fmt.Errorf("bench: delete topic %s on %s: %w", topic, s.cfg.Name, err)
	}
	return nil
}

// Close implements System.
func (s *KafkaSystem) Close() error {
	s.admin.Close()
	return nil
}

// Stats implements System.
func (s *KafkaSystem) Stats(ctx context.Context) (ServerStats, error) {
	if s.cfg.Stats != nil {
		return s.cfg.Stats(ctx)
	}
	return pidStats(s.cfg.Pid)
}

// Consume implements System: consumer i of n reads partitions i, i+n, ...
// from the start or the end.
func (s *KafkaSystem) Consume(ctx context.Context, i, n int, earliest bool, fn func([]byte)) error {
	start := kgo.NewOffset().AtEnd()
	if earliest {
		start = kgo.NewOffset().AtStart()
	}
	parts := map[int32]kgo.Offset{}
	for p := i; p < s.partitions; p += n {
		parts[int32(p)] = start
	}
	if len(parts) == 0 {
		<-ctx.Done()
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.topic: parts}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return fmt.Errorf("bench: kafka consumer: %w", err)
	}
	defer cl.Close()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			// A new topic's partitions may be unknown to the broker
			// answering for a moment: the client retries those.
			if !kerr.IsRetriable(fe.Err) {
				return fmt.Errorf("bench: fetch from %s: %w", s.cfg.Name, fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { fn(r.Value) })
	}
}

// NewProducer implements System: its own client, at most MaxBuffered
// records unacknowledged, lingering 1 ms so that a burst of records
// shares requests, MaxInFlight requests in flight.
func (s *KafkaSystem) NewProducer(ctx context.Context, i int) (Producer, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...),
		kgo.DefaultProduceTopic(s.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(s.cfg.MaxBuffered),
		kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20),
		// A request of full 1 MiB batches for 16 partitions passes 16 MiB,
		// floe's default kafka.max_frame_bytes (Apache Kafka's limit is
		// 100 MiB, franz-go's default request bound too): the agent would
		// close the connection and the client resend it for ever.
		kgo.BrokerMaxWriteBytes(16 << 20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(time.Minute)}
	if s.cfg.MaxInFlight > 1 {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(s.cfg.MaxInFlight))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("bench: kafka producer: %w", err)
	}
	return &kafkaProducer{s: s, id: i, cl: cl}, nil
}

type kafkaProducer struct {
	s  *KafkaSystem
	id int
	cl *kgo.Client
}

func (p *kafkaProducer) Send(ctx context.Context, b *Batch, done func(from, to int, err error)) error {
	for i, t := range b.Intended {
		if err := ctx.Err(); err != nil {
			if i == 0 {
				return err
			}
			done(i, len(b.Intended), err)
			return nil
		}
		idx := uint64(b.First) + uint64(i)
		key := make([]byte, 8)
		binary.BigEndian.PutUint64(key, idx)
		r := &kgo.Record{Key: key, Value: MakeValue(p.s.cfg.RecordSize, t, idx),
			Partition: int32((uint64(p.id)*7919 + idx) % uint64(p.s.partitions))}
		// Produce blocks while MaxBuffered records are outstanding, and
		// returns (calling the promise with ctx's error) once ctx ends.
		p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) { done(i, i+1, err) })
	}
	return nil
}

func (p *kafkaProducer) Close(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := p.cl.Flush(fctx)
	p.cl.Close()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("bench: kafka producer flush: %w", err)
	}
	return nil
}
