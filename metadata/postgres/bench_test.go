package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

// BenchmarkCommitFile commits files of one batch per partition (see
// metadatatest.BenchCommitFile); p50-x-limit compares the median with a
// one-row INSERT round trip on the same server, measured in the same run.
func BenchmarkCommitFile(b *testing.B) {
	s, err := Open(context.Background(), testenv.Postgres(b), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	limit := rawCommitMedian(b, s, 500)
	b.Logf("limit: one-row INSERT round trip median %v", limit)
	metadatatest.BenchCommitFiles(b, s, limit)
}

// BenchmarkRawCommit is the limit: a one-row INSERT in its own implicit
// transaction, one round trip.
func BenchmarkRawCommit(b *testing.B) {
	s, err := Open(context.Background(), testenv.Postgres(b), DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	createRawTable(b, s)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := s.pool.Exec(context.Background(), "INSERT INTO bench_raw (v) VALUES ($1)", int64(i)); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(metadatatest.Percentile(times, 50))/float64(time.Millisecond), "p50-ms")
}

func createRawTable(tb testing.TB, s *Store) {
	if _, err := s.pool.Exec(context.Background(), "CREATE TABLE IF NOT EXISTS bench_raw (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v bigint)"); err != nil {
		tb.Fatal(err)
	}
}

// rawCommitMedian measures the median one-row INSERT round trip.
func rawCommitMedian(tb testing.TB, s *Store, n int) time.Duration {
	createRawTable(tb, s)
	times := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if _, err := s.pool.Exec(context.Background(), "INSERT INTO bench_raw (v) VALUES ($1)", int64(i)); err != nil {
			tb.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	return metadatatest.Percentile(times, 50)
}

// BenchmarkConcurrentCommits measures commits per second with 16
// committers, each committing one-batch files to its own partition (so
// that only what all commits share serialises them), with the commit notice
// sent by pg_notify inside each commit's transaction (notify=in-commit, the
// previous release) and by the store's notifier after the commits
// (notify=after-commit, the default), on the test server (fsync off) and on
// a durable cluster of its own (fsync and synchronous commit on). Each
// reports commits/s; x-in-commit is after-commit's rate over in-commit's,
// measured in the same run.
//
//	go test -run '^$' -bench BenchmarkConcurrentCommits -benchtime 4000x ./metadata/postgres/
func BenchmarkConcurrentCommits(b *testing.B) {
	for _, durable := range []bool{false, true} {
		b.Run(fmt.Sprintf("durable=%v", durable), func(b *testing.B) {
			dsn := testenv.Postgres(b)
			if durable {
				cfg := services.DefaultPostgresConfig()
				pg, err := services.StartPostgres(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pg.Stop()
				dsn = pg.AdminURL
			}
			rates := map[bool]float64{}
			for _, inCommit := range []bool{true, false} {
				name := "notify=after-commit"
				if inCommit {
					name = "notify=in-commit"
				}
				b.Run(name, func(b *testing.B) {
					rates[inCommit] = benchConcurrentCommits(b, dsn, inCommit)
				})
			}
			if rates[true] > 0 && rates[false] > 0 {
				b.Logf("after-commit / in-commit: %.2f (%.0f vs %.0f commits/s)", rates[false]/rates[true], rates[false], rates[true])
			}
		})
	}
}

// benchConcurrentCommits runs b.N commits from 16 goroutines and returns
// the commits per second. A listener on a second store must hear of the
// last commit of each committer.
func benchConcurrentCommits(b *testing.B, dsn string, inCommit bool) float64 {
	const committers = 16
	ctx := context.Background()
	opts := DefaultOptions()
	opts.NotifyInCommit = inCommit
	opts.MaxConns = committers + 2
	s, err := Open(ctx, dsn, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	reader, err := Open(ctx, dsn, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	notices, err := reader.Notices(lctx)
	if err != nil {
		b.Fatal(err)
	}
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("conc-%d", time.Now().UnixNano()), Partitions: committers})
	if err != nil {
		b.Fatal(err)
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, committers)
	)
	b.ResetTimer()
	start := time.Now()
	for g := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				_, err := s.CommitFile(ctx, metadata.FileCommit{Key: fmt.Sprintf("conc/%d/%d", tp.ID, i), Size: 1000,
					Batches: []metadata.BatchCommit{{TopicID: tp.ID, Partition: int32(g), ByteLength: 1000, RecordCount: 10,
						ProducerID: -1, BaseSequence: metadata.NoSequence}}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "commits/s")
	// Every partition's last high watermark is announced to the other store.
	states, err := s.PartitionStates(ctx, tp.ID)
	if err != nil {
		b.Fatal(err)
	}
	want := map[[2]int64]int64{}
	for _, st := range states {
		if st.HighWatermark > 0 {
			want[[2]int64{tp.ID, int64(st.Partition)}] = st.HighWatermark
		}
	}
	timeout := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case n := <-notices:
			if n.All {
				return rate
			}
			for _, p := range n.Partitions {
				k := [2]int64{p.TopicID, int64(p.Partition)}
				if hw, ok := want[k]; ok && p.HighWatermark >= hw {
					delete(want, k)
				}
			}
		case <-timeout:
			b.Fatalf("the other store did not hear of %v", want)
		}
	}
	return rate
}
