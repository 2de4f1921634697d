// Command confluentgo checks confluent-kafka-go (librdkafka through cgo)
// against a floe agent's Kafka listener: an idempotent producer sends
// keyed records with a header in every codec, a group of two consumers
// (range, then a third member joins) reads them back and commits, and the
// program prints "OK <n>" once every record came back exactly as sent.
// Usage: confluentgo <bootstrap> <topic>. Run by TestConfluentKafkaGo.
package main

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func main() {
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
}

func run(bootstrap, topic string) error {
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	want := map[string]string{}
	for _, codec := range codecs {
		cfg := kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true, "compression.codec": codec, "linger.ms": 5}
		if d := os.Getenv("FLOE_RDKAFKA_DEBUG"); d != "" {
			cfg["debug"] = d
		}
		p, err := kafka.NewProducer(&cfg)
		if err != nil {
			return err
		}
		reports := make(chan kafka.Event, 20)
		for i := range 20 {
			k, v := fmt.Sprintf("%s-%d", codec, i), fmt.Sprintf("value %s %d", codec, i)
			want[k] = v
			err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
				Key: []byte(k), Value: []byte(v), Headers: []kafka.Header{{Key: "codec", Value: []byte(codec)}}}, reports)
			if err != nil {
				return err
			}
		}
		for range 20 {
			select {
			case ev := <-reports:
				if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
					return fmt.Errorf("%s: delivery: %v", codec, ev)
				}
			case <-time.After(30 * time.Second):
				return fmt.Errorf("%s: no delivery report in 30 s", codec)
			}
		}
		p.Close()
	}

	got := map[string]string{}
	newConsumer := func() (*kafka.Consumer, error) {
		c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": "confluent-go",
			"auto.offset.reset": "earliest", "enable.auto.commit": false, "session.timeout.ms": 6000})
		if err != nil {
			return nil, err
		}
		return c, c.Subscribe(topic, nil)
	}
	var cs []*kafka.Consumer
	for range 2 {
		c, err := newConsumer()
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	deadline := time.Now().Add(90 * time.Second)
	joined := false
	for len(got) < len(want) {
		if time.Now().After(deadline) {
			return fmt.Errorf("read %d of %d records", len(got), len(want))
		}
		if !joined && len(got) >= len(want)/2 {
			c, err := newConsumer() // a third member: a rebalance
			if err != nil {
				return err
			}
			cs, joined = append(cs, c), true
		}
		for _, c := range cs {
			ev := c.Poll(100)
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			if m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
			k := string(m.Key)
			if len(m.Headers) != 1 || m.Headers[0].Key != "codec" {
				return fmt.Errorf("record %s: headers %v", k, m.Headers)
			}
			got[k] = string(m.Value)
			if _, err := c.CommitMessage(m); err != nil {
				fmt.Fprintln(os.Stderr, "commit (a rebalance may fence it):", err)
			}
		}
	}
	for _, c := range cs {
		c.Close()
	}
	var keys []string
	for k, v := range want {
		if got[k] != v {
			return fmt.Errorf("record %s: got %q, want %q", k, got[k], v)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("OK", len(keys))
	return nil
}
