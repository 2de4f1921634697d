package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// TestTwoAgentsPostgresS3: two agents on one PostgreSQL and one S3 bucket
// both serve every partition: a Kafka producer on agent A, a Kafka
// consumer on agent B reads exactly what was sent, and a position
// committed through B is what A's OffsetFetch answers.
func TestTwoAgentsPostgresS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agents := pgAgents(t, 2, nil)
	a, b := agents[0], agents[1]
	pa := newClient(t, a, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	createTopic(t, pa, "pg", 3)
	want := sentRecords("pg", 150)
	produceAll(t, pa, want)
	cb := newClient(t, b, kgo.ConsumeTopics("pg"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	sameRecords(t, want, consumeN(t, cb, len(want)))

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "pg-group", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "pg"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 2, 7
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if r, err := commit.RequestWith(ctx, cb); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit through B: %v %+v", err, r)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "pg-group"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "pg", Partitions: []int32{2}}}
	fr, err := fetch.RequestWith(ctx, pa)
	if err != nil {
		t.Fatal(err)
	}
	if got := fr.Groups[0].Topics[0].Partitions[0].Offset; got != 7 {
		t.Fatalf("A's OffsetFetch: %d, want 7", got)
	}
}

// pgAgents runs n agents with Kafka listeners on one PostgreSQL database
// and one S3 bucket (each agent with a store connection of its own).
func pgAgents(t *testing.T, n int, mutate func(*kafka.Config)) []*broker {
	t.Helper()
	dsn := testenv.Postgres(t)
	env := testenv.S3(t)
	cfg := s3store.DefaultConfig()
	cfg.Endpoint, cfg.Region, cfg.AccessKey, cfg.SecretKey, cfg.Bucket, cfg.PathStyle = env.Endpoint, env.Region, env.AccessKey, env.SecretKey, env.Bucket, true
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var out []*broker
	for range n {
		s, err := postgres.Open(ctx, dsn, postgres.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, startBrokerOn(t, s, store, mutate))
	}
	return out
}
