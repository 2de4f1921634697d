package batcher_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// A paused S3 server (SIGSTOP: connections open, no answers) fails every
// waiting producer, definitely, within the upload deadline; once the
// server is resumed nothing they were told failed is committed, even the
// PUTs the server completes late. Measures the time from the pause to
// every producer answered.
func TestRealBackendsPausedS3(t *testing.T) {
	cfg := batcher.DefaultConfig()
	cfg.Linger = 5 * time.Millisecond
	cfg.UploadTimeout = 2 * time.Second
	cfg.CommitTimeout = 2 * time.Second
	e := newRealEnv(t, cfg)
	ctx := context.Background()
	warm, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "warm", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Produce(ctx, warm.ID, 0, batch(t, 1, "warm")); err != nil {
		t.Fatal(err)
	}
	topic, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "paused", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	commits0 := e.commit.commits.Load()

	resume := testenv.PauseS3(t)
	paused := time.Now()
	const producers = 16
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // protects answered and errs
		answered time.Duration
		errs     []error
	)
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A client's usual timeout, longer than the batcher's deadlines.
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := e.b.Produce(pctx, topic.ID, int32(i%4), batch(t, 2, "paused"))
			mu.Lock()
			defer mu.Unlock()
			answered = max(answered, time.Since(paused))
			errs = append(errs, err)
		}()
		if i == producers/2 {
			time.Sleep(50 * time.Millisecond) // several files
		}
	}
	wg.Wait()
	t.Logf("paused S3: %d producers all answered %v after the pause (upload deadline %v, linger %v)",
		producers, answered.Round(time.Millisecond), cfg.UploadTimeout, cfg.Linger)
	for _, err := range errs {
		var fe *batcher.FlushError
		if !errors.As(err, &fe) || fe.Stage != batcher.StageUpload || fe.Ambiguous {
			t.Fatalf("producer during the pause got %v, want a definite upload failure", err)
		}
	}
	if limit := cfg.Linger + 50*time.Millisecond + cfg.UploadTimeout + time.Second; answered > limit {
		t.Fatalf("last producer answered %v after the pause, past the deadline bound %v", answered, limit)
	}

	resume()
	// Give the server time to finish the PUTs it had received, then stop
	// the batcher: nothing is left in flight.
	time.Sleep(time.Second)
	if err := e.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.commit.commits.Load() - commits0; n != 0 {
		t.Fatalf("%d commits of files whose producers were told they failed", n)
	}
	for p := range topic.Partitions {
		refs, st, err := e.meta.FindBatches(ctx, topic.ID, p, 0, 1<<20)
		if err != nil || len(refs) != 0 || st.HighWatermark != 0 {
			t.Fatalf("partition %d after the pause: %d batches, high watermark %d, %v", p, len(refs), st.HighWatermark, err)
		}
	}
	landed := 0
	if err := e.s3.List(ctx, "v1/", func(objectstore.ObjectInfo) error { landed++; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d objects in the bucket after the resume (1 warm-up file, the rest unreferenced)", landed)
}
