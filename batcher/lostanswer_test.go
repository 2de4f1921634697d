package batcher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// backends opens each real metadata backend behind a fault wrapper.
func backends(t *testing.T) map[string]func(t *testing.T) metadata.Store {
	return map[string]func(t *testing.T) metadata.Store{
		"sqlite": func(t *testing.T) metadata.Store {
			s, err := sqlite.Open(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(t *testing.T) metadata.Store {
			s, err := postgres.Open(context.Background(), testenv.Postgres(t), postgres.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// lostAnswerEnv opens a backend behind a fault wrapper, creates a topic
// and an idempotent producer, and starts a batcher whose files are sealed
// by Flush, with the commit deadline given (closed by the test's cleanup).
func lostAnswerEnv(t *testing.T, open func(t *testing.T) metadata.Store, topicName string, partitions int32,
	commitTimeout time.Duration) (metadata.Store, *metafault.Store, metadata.Topic, int64, *batcher.Batcher, batcher.Config) {
	t.Helper()
	ctx := context.Background()
	inner := open(t)
	meta := metafault.Wrap(inner)
	topic, err := inner.CreateTopic(ctx, metadata.TopicSpec{Name: topicName, Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	pid, _, err := inner.InitProducer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := batcher.DefaultConfig()
	cfg.Linger = time.Minute
	cfg.CommitTimeout = commitTimeout
	b, err := batcher.New(cfg, objectstore.NewMemory(), meta, batcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return inner, meta, topic, pid, b, cfg
}

func idemBatch(t *testing.T, pid int64, seq int32, n int) []byte {
	t.Helper()
	recs := make([]kbatch.Record, n)
	for i := range recs {
		recs[i] = kbatch.Record{Timestamp: 1700000000000, Value: []byte("idem")}
	}
	opts := kbatch.DefaultEncodeOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
	b, err := kbatch.Encode(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A commit that lands but whose answer is lost, on each real backend: the
// batcher retries the same file key, learns the first commit's offsets, and
// each producer (idempotent or not) gets its real offsets exactly once; the
// log holds every record once.
func TestLostCommitAnswerRealBackends(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			inner, meta, topic, pid, b, _ := lostAnswerEnv(t, open, "lost-"+name, 2, 5*time.Second)

			// Two lost answers in a row: the third attempt learns the outcome.
			meta.Next(metafault.OpCommit, 2, metafault.Fault{Mode: metafault.AnswerLost})
			plain, err := b.Append(ctx, topic.ID, 0, batch(t, 3, "plain"))
			if err != nil {
				t.Fatal(err)
			}
			idem, err := b.Append(ctx, topic.ID, 1, idemBatch(t, pid, 0, 4))
			if err != nil {
				t.Fatal(err)
			}
			b.Flush()
			for _, c := range []struct {
				p    *batcher.Pending
				want int64
			}{{plain, 0}, {idem, 0}} {
				r, err := c.p.Wait(ctx)
				if err != nil {
					t.Fatalf("producer answered %v, want its offsets", err)
				}
				if r.BaseOffset != c.want || r.Duplicate {
					t.Fatalf("result %+v, want base %d, not a duplicate", r, c.want)
				}
			}
			if got := meta.Injected(metafault.OpCommit, metafault.AnswerLost); got != 2 {
				t.Fatalf("%d lost answers injected, want 2", got)
			}
			if got := meta.Calls(metafault.OpCommit); got != 3 {
				t.Fatalf("%d commit calls, want 3 (one file, retried by key)", got)
			}

			// The next batches follow on: nothing was written twice.
			plain2, err := b.Append(ctx, topic.ID, 0, batch(t, 2, "plain2"))
			if err != nil {
				t.Fatal(err)
			}
			idem2, err := b.Append(ctx, topic.ID, 1, idemBatch(t, pid, 4, 1))
			if err != nil {
				t.Fatal(err)
			}
			b.Flush()
			if r, err := plain2.Wait(ctx); err != nil || r.BaseOffset != 3 {
				t.Fatalf("second plain batch: %+v %v, want base 3", r, err)
			}
			if r, err := idem2.Wait(ctx); err != nil || r.BaseOffset != 4 {
				t.Fatalf("second idempotent batch: %+v %v, want base 4", r, err)
			}
			states, err := inner.PartitionStates(ctx, topic.ID)
			if err != nil {
				t.Fatal(err)
			}
			if states[0].HighWatermark != 5 || states[1].HighWatermark != 5 {
				t.Fatalf("high watermarks %+v, want 5 and 5: a lost answer duplicated records", states)
			}
		})
	}
}

// When every answer is lost until the commit deadline, producers hear that
// the outcome is unknown; an idempotent producer's retry of the same batch
// then gets the original offsets, never a copy.
func TestOutcomeUnknownThenIdempotentRetryRealBackends(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			inner, meta, topic, pid, b, cfg := lostAnswerEnv(t, open, "unknown-"+name, 1, 500*time.Millisecond)

			meta.Always(metafault.OpCommit, metafault.Fault{Mode: metafault.AnswerLost})
			data := idemBatch(t, pid, 0, 3)
			p, err := b.Append(ctx, topic.ID, 0, data)
			if err != nil {
				t.Fatal(err)
			}
			b.Flush()
			start := time.Now()
			_, err = p.Wait(ctx)
			if d := time.Since(start); d > cfg.CommitTimeout+2*time.Second {
				t.Errorf("answered after %v, commit deadline %v", d, cfg.CommitTimeout)
			}
			var fe *batcher.FlushError
			if !errors.As(err, &fe) || !fe.Ambiguous {
				t.Fatalf("got %v, want an ambiguous FlushError (outcome unknown)", err)
			}
			meta.Reset()

			// The retry is a new file with the same producer batch.
			retry, err := b.Append(ctx, topic.ID, 0, data)
			if err != nil {
				t.Fatal(err)
			}
			b.Flush()
			r, err := retry.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.BaseOffset != 0 || !r.Duplicate {
				t.Fatalf("retry got %+v, want the original offset 0 as a duplicate", r)
			}
			states, err := inner.PartitionStates(ctx, topic.ID)
			if err != nil {
				t.Fatal(err)
			}
			if states[0].HighWatermark != 3 {
				t.Fatalf("high watermark %d, want 3", states[0].HighWatermark)
			}
		})
	}
}
