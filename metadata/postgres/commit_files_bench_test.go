package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
)

// BenchmarkCommitFilesTwoAgents: two committers (two agents) write files
// of one batch to each of the same 16 partitions, on a durable cluster
// (fsync and synchronous commit on), k files at a time: one CommitFiles
// call for the k files (together) or k CommitFile calls one after the
// other (one-by-one, the batcher before multi-file commits). Each reports
// files/s, transactions/s and the p99 of the time from the start of a
// set to its last file's answer; the log says together's rate over
// one-by-one's, measured in the same run.
//
//	go test -run '^$' -bench BenchmarkCommitFilesTwoAgents -benchtime 400x ./metadata/postgres/
func BenchmarkCommitFilesTwoAgents(b *testing.B) {
	pg, err := services.StartPostgres(context.Background(), services.DefaultPostgresConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Stop()
	for _, k := range []int{4} {
		rates := map[bool]float64{}
		for _, together := range []bool{false, true} {
			name := fmt.Sprintf("files=%d/one-by-one", k)
			if together {
				name = fmt.Sprintf("files=%d/together", k)
			}
			b.Run(name, func(b *testing.B) { rates[together] = benchTwoAgents(b, pg.AdminURL, k, together) })
		}
		if rates[false] > 0 {
			b.Logf("files=%d: together / one-by-one files/s: %.2f (%.0f vs %.0f)", k, rates[true]/rates[false], rates[true], rates[false])
		}
	}
}

func benchTwoAgents(b *testing.B, dsn string, k int, together bool) float64 {
	const (
		agents     = 2
		partitions = 16
	)
	ctx := context.Background()
	s, err := Open(ctx, dsn, DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic(ctx, metadata.TopicSpec{Name: fmt.Sprintf("two-%d", time.Now().UnixNano()), Partitions: partitions})
	if err != nil {
		b.Fatal(err)
	}
	file := func(key string) metadata.FileCommit {
		f := metadata.FileCommit{Key: key, Size: 100 * partitions}
		for p := range int32(partitions) {
			f.Batches = append(f.Batches, metadata.BatchCommit{TopicID: tp.ID, Partition: p, ByteOffset: 100 * int64(p),
				ByteLength: 100, RecordCount: 10, ProducerID: -1, BaseSequence: metadata.NoSequence})
		}
		return f
	}
	var (
		next  atomic.Int64
		mu    sync.Mutex
		times []time.Duration
		wg    sync.WaitGroup
		errs  = make(chan error, agents)
		txns  atomic.Int64
	)
	b.ResetTimer()
	start := time.Now()
	for g := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				set := make([]metadata.FileCommit, k)
				for j := range set {
					set[j] = file(fmt.Sprintf("two/%d/%d/%d/%d", tp.ID, g, i, j))
				}
				t0 := time.Now()
				var err error
				if together {
					_, err = s.CommitFiles(ctx, set)
					txns.Add(1)
				} else {
					for _, f := range set {
						if _, err = s.CommitFile(ctx, f); err != nil {
							break
						}
						txns.Add(1)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				times = append(times, time.Since(t0))
				mu.Unlock()
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
	rate := float64(b.N*k) / elapsed.Seconds()
	b.ReportMetric(rate, "files/s")
	b.ReportMetric(float64(txns.Load())/elapsed.Seconds(), "txns/s")
	b.ReportMetric(float64(metadatatest.Percentile(times, 99))/float64(time.Millisecond), "set-p99-ms")
	return rate
}
