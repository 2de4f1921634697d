package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// saramaConfig is a sarama configuration for b, with quick retries.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sarama-test"
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 3 * time.Second
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// saramaMessages makes n messages with keys and headers.
func saramaMessages(topic string, n int) []*sarama.ProducerMessage {
	out := make([]*sarama.ProducerMessage, n)
	for i := range out {
		out[i] = &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%7)),
			Value:     sarama.StringEncoder(fmt.Sprintf("sarama %d of %s", i, topic)),
			Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: fmt.Appendf(nil, "%d", i)}},
			Timestamp: time.UnixMilli(1700000000000 + int64(i))}
	}
	return out
}

// saramaGroupMember consumes a topic in a group, marking every message
// it gets (sarama commits the marks every 100 ms).
type saramaGroupMember struct {
	mu   sync.Mutex // protects got
	got  map[string]*sarama.ConsumerMessage
	done chan struct{}
	cg   sarama.ConsumerGroup
}

func (m *saramaGroupMember) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (m *saramaGroupMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (m *saramaGroupMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		m.got[string(msg.Value)] = msg
		m.mu.Unlock()
		s.MarkMessage(msg, "") // committed every 100 ms
	}
	return nil
}

func (m *saramaGroupMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.got)
}

func startSaramaMember(t *testing.T, ctx context.Context, addr, group, topic string) *saramaGroupMember {
	t.Helper()
	cfg := saramaConfig()
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &saramaGroupMember{got: map[string]*sarama.ConsumerMessage{}, done: make(chan struct{}), cg: cg}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, m); err != nil && ctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return m
}

// TestSarama: sarama produces with every codec, idempotent, and a group of
// two consumes and commits, then a third member joins; every message comes
// back with its key, headers and timestamp, and the positions reach the end.
func TestSarama(t *testing.T) {
	b := startBroker(t, nil)
	admin := newClient(t, b)
	const topic = "sarama"
	createTopic(t, admin, topic, 6)
	codecs := []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD}
	var sent []*sarama.ProducerMessage
	for i, codec := range codecs {
		cfg := saramaConfig()
		cfg.Producer.Compression = codec
		cfg.Producer.Idempotent = i%2 == 0
		if cfg.Producer.Idempotent {
			cfg.Net.MaxOpenRequests = 1
		}
		p, err := sarama.NewSyncProducer([]string{b.addr}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		msgs := saramaMessages(fmt.Sprintf("%s-%s", topic, codec), 40)
		for _, m := range msgs {
			m.Topic = topic
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("codec %s: %v", codec, err)
		}
		p.Close()
		sent = append(sent, msgs...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m1 := startSaramaMember(t, ctx, b.addr, "sarama-g", topic)
	m2 := startSaramaMember(t, ctx, b.addr, "sarama-g", topic)
	waitFor(t, "the first half", func() bool { return m1.count()+m2.count() >= len(sent) })
	m3 := startSaramaMember(t, ctx, b.addr, "sarama-g", topic)
	waitFor(t, "three members", func() bool {
		d := describeGroup(t, admin, "sarama-g")
		return d.State == "Stable" && len(d.Members) == 3
	})
	more := saramaMessages("late", 60)
	for _, m := range more {
		m.Topic = topic
	}
	p, err := sarama.NewSyncProducer([]string{b.addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SendMessages(more); err != nil {
		t.Fatal(err)
	}
	p.Close()
	sent = append(sent, more...)
	members := []*saramaGroupMember{m1, m2, m3}
	got := func() map[string]*sarama.ConsumerMessage {
		out := map[string]*sarama.ConsumerMessage{}
		for _, m := range members {
			m.mu.Lock()
			for k, v := range m.got {
				out[k] = v
			}
			m.mu.Unlock()
		}
		return out
	}
	waitFor(t, "every message", func() bool { return len(got()) >= len(sent) })
	if m3.count() == 0 {
		t.Fatal("the third member got nothing")
	}
	all := got()
	for _, s := range sent {
		v, _ := s.Value.Encode()
		k, _ := s.Key.Encode()
		g, ok := all[string(v)]
		if !ok {
			t.Fatalf("message %q lost", v)
		}
		if string(g.Key) != string(k) || !g.Timestamp.Equal(s.Timestamp) || len(g.Headers) != 1 || string(g.Headers[0].Value) != string(s.Headers[0].Value) {
			t.Fatalf("message %q came back as key %q ts %v headers %v", v, g.Key, g.Timestamp, g.Headers)
		}
	}
	waitFor(t, "positions at the end", func() bool {
		resp, err := b.c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "sarama-g"})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, o := range resp.GetOffsets() {
			sum += o.GetOffset()
		}
		return sum == int64(len(sent))
	})
	cancel()
	for _, m := range members {
		<-m.done
		m.cg.Close()
	}
}
