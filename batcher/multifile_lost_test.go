package batcher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/objectstore"
)

// A multi-file commit whose transaction fails in each way the fault
// wrapper knows, on each real backend: three files (plain and idempotent
// batches, two partitions) wait behind a first file's commit and go into
// one CommitFiles call. Every producer of those files hears the truth:
//   - answer lost twice, then learned: each gets its real offsets, once;
//   - answer always lost: each hears "outcome unknown", the log holds the
//     files once, and the idempotent producer's retry gets its original
//     offsets as duplicates;
//   - refused: each fails definitely, the log holds none of them, and the
//     idempotent retry is accepted as new;
//   - hung: each hears "outcome unknown", the log holds none of them.
func TestMultiFileCommitFaultsRealBackends(t *testing.T) {
	for name, open := range backends(t) {
		for _, tc := range []struct {
			mode    string
			fault   func(*metafault.Store)
			landed  bool // the set is in the log afterwards
			answer  string
			timeout time.Duration
		}{
			{"lost-then-learned", func(m *metafault.Store) {
				m.Next(metafault.OpCommit, 2, metafault.Fault{Mode: metafault.AnswerLost})
			}, true, "offsets", 5 * time.Second},
			{"always-lost", func(m *metafault.Store) {
				m.Always(metafault.OpCommit, metafault.Fault{Mode: metafault.AnswerLost})
			}, true, "unknown", time.Second},
			{"refused", func(m *metafault.Store) {
				m.Next(metafault.OpCommit, 1, metafault.Fault{Mode: metafault.Refused})
			}, false, "failed", 5 * time.Second},
			{"hung", func(m *metafault.Store) {
				m.Always(metafault.OpCommit, metafault.Fault{Mode: metafault.Hung})
			}, false, "unknown", time.Second},
		} {
			t.Run(name+"/"+tc.mode, func(t *testing.T) {
				ctx := context.Background()
				inner := open(t)
				meta := metafault.Wrap(inner)
				topic, err := inner.CreateTopic(ctx, metadata.TopicSpec{Name: "multi-" + tc.mode, Partitions: 2})
				if err != nil {
					t.Fatal(err)
				}
				pid, _, err := inner.InitProducer(ctx)
				if err != nil {
					t.Fatal(err)
				}
				cfg := manualConfig()
				cfg.CommitTimeout = tc.timeout
				cfg.MaxFilesPerCommit = 16
				e := &gatedEnv{gate: newGate(meta), reg: prometheus.NewRegistry(), logs: &logCapture{}}
				e.b, err = batcher.New(cfg, objectstore.NewMemory(), e.gate, batcher.Options{Metrics: batcher.NewMetrics(e.reg)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = e.b.Close(context.Background()) })
				app := func(part int32, data []byte) *batcher.Pending {
					t.Helper()
					p, err := e.b.Append(ctx, topic.ID, part, data)
					if err != nil {
						t.Fatal(err)
					}
					return p
				}
				first := app(0, batch(t, 1, "first"))
				e.b.Flush()
				<-e.gate.arrived
				meta.Next(metafault.OpCommit, 1, metafault.Fault{}) // the first file's commit passes
				tc.fault(meta)
				idem0, idem1 := idemBatch(t, pid, 0, 2), idemBatch(t, pid, 2, 1)
				type produced struct {
					what string
					p    *batcher.Pending
					want int64
				}
				var ps []produced
				ps = append(ps, produced{"file B plain p0", app(0, batch(t, 3, "b")), 1},
					produced{"file B idempotent p1", app(1, idem0), 0})
				e.b.Flush()
				awaitUploads(t, e.reg, 2)
				ps = append(ps, produced{"file C idempotent p1", app(1, idem1), 2},
					produced{"file C plain p1", app(1, batch(t, 2, "c")), 3})
				e.b.Flush()
				awaitUploads(t, e.reg, 3)
				ps = append(ps, produced{"file D plain p0", app(0, batch(t, 1, "d")), 4})
				e.b.Flush()
				awaitUploads(t, e.reg, 4)
				close(e.gate.open)

				wantOffset(t, "first file", first, 0)
				for _, p := range ps {
					r, err := p.p.Wait(ctx)
					var fe *batcher.FlushError
					switch tc.answer {
					case "offsets":
						if err != nil || r.BaseOffset != p.want || r.Duplicate {
							t.Errorf("%s: %+v, %v; want offset %d", p.what, r, err, p.want)
						}
					case "unknown":
						if !errors.As(err, &fe) || !fe.Ambiguous || fe.Stage != batcher.StageCommit {
							t.Errorf("%s: %+v, %v; want outcome unknown", p.what, r, err)
						}
					case "failed":
						if !errors.As(err, &fe) || fe.Ambiguous || !errors.Is(err, metadata.ErrNotApplied) {
							t.Errorf("%s: %+v, %v; want a definite failure", p.what, r, err)
						}
					}
				}
				if n, sum := metricValue(t, e.reg, "floe_batcher_commit_files"); n != 2 || sum != 4 {
					t.Errorf("files per commit: %v commits of %v files, want 2 of 4 (the three waiting files together)", n, sum)
				}
				meta.Reset()
				states, err := inner.PartitionStates(ctx, topic.ID)
				if err != nil {
					t.Fatal(err)
				}
				want0, want1 := int64(1), int64(0)
				if tc.landed {
					want0, want1 = 5, 5
				}
				if states[0].HighWatermark != want0 || states[1].HighWatermark != want1 {
					t.Fatalf("high watermarks %d, %d; want %d, %d", states[0].HighWatermark, states[1].HighWatermark, want0, want1)
				}
				// The idempotent producer retries its first batch: the
				// original offset if the set landed, else a new one.
				retry := app(1, idem0)
				e.b.Flush()
				r, err := retry.Wait(ctx)
				if err != nil {
					t.Fatalf("idempotent retry: %v", err)
				}
				if tc.landed && (!r.Duplicate || r.BaseOffset != 0) || !tc.landed && (r.Duplicate || r.BaseOffset != 0) {
					t.Fatalf("idempotent retry: %+v (set landed: %v)", r, tc.landed)
				}
			})
		}
	}
}
