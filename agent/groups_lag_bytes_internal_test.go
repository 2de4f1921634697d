package agent

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

func TestPlanBytes(t *testing.T) {
	now := time.Unix(1000, 0)
	prev := bytesFigure{from: 10, hw: 20, bytes: 500, summed: now.Add(-time.Minute)}
	for _, tc := range []struct {
		name         string
		have         bool
		from, hw, ls int64
		at           time.Time
		want         bytesStep
	}{
		{"caught up", true, 20, 20, 0, now, bytesStep{zero: true}},
		{"first sight", false, 10, 20, 0, now, bytesStep{full: true}},
		{"nothing moved", true, 10, 20, 0, now, bytesStep{reuse: true}},
		{"consumed and produced", true, 15, 30, 0, now, bytesStep{subFrom: 10, subTo: 15, addFrom: 20, addTo: 30}},
		{"produced only", true, 10, 25, 0, now, bytesStep{subFrom: 10, subTo: 10, addFrom: 20, addTo: 25}},
		{"position at the old high watermark", true, 20, 25, 0, now, bytesStep{subFrom: 10, subTo: 20, addFrom: 20, addTo: 25}},
		{"position past the old high watermark", true, 21, 25, 0, now, bytesStep{full: true}},
		{"moved back (a reset)", true, 5, 20, 0, now, bytesStep{full: true}},
		{"high watermark back (topic re-created)", true, 10, 15, 0, now, bytesStep{full: true}},
		{"retention passed the position", true, 12, 20, 12, now, bytesStep{full: true}},
		{"retention below the position", true, 12, 20, 10, now, bytesStep{subFrom: 10, subTo: 12, addFrom: 20, addTo: 20}},
		{"refresh due", true, 10, 20, 0, now.Add(lagBytesRefresh), bytesStep{full: true}},
	} {
		if got := planBytes(prev, tc.have, tc.from, tc.hw, tc.ls, tc.at); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// fakeBatches is one partition's log for BatchBytes.
type fakeBatches struct {
	metadata.GroupStore
	batches []metadata.BatchRef
	calls   int
}

func (f *fakeBatches) BatchBytes(_ context.Context, rs []metadata.BatchRange) ([]int64, error) {
	f.calls++
	out := make([]int64, len(rs))
	for i, r := range rs {
		for _, b := range f.batches {
			if b.LastOffset >= r.LastFrom && b.LastOffset < r.LastTo && b.BaseOffset >= r.BaseFrom && b.BaseOffset < r.BaseTo {
				out[i] += b.ByteLength
			}
		}
	}
	return out, nil
}

// TestLagBytesGenerated: on generated histories (appends, commits,
// retention, resets, time passing) the incremental figure always equals
// the whole sum of the batches behind the position, with one BatchBytes
// call per scrape.
func TestLagBytesGenerated(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		f := &fakeBatches{}
		lb := newLagBytes()
		var hw, ls, committed int64
		now := time.Unix(0, 0)
		for step := range 60 {
			switch rng.IntN(6) {
			case 0, 1: // append a batch
				n := int64(1 + rng.IntN(5))
				f.batches = append(f.batches, metadata.BatchRef{BaseOffset: hw, LastOffset: hw + n - 1, ByteLength: 10 + rng.Int64N(90)})
				hw += n
			case 2: // commit forward
				committed = min(hw, committed+rng.Int64N(8))
			case 3: // retention drops the first batch
				if len(f.batches) > 1 {
					f.batches = f.batches[1:]
					ls = f.batches[0].BaseOffset
				}
			case 4: // a reset moves back
				committed = max(0, committed-rng.Int64N(6))
			case 5:
				now = now.Add(time.Duration(rng.IntN(4)) * time.Minute)
			}
			gs := []metadata.GroupLagInputs{{Group: "g", Partitions: []metadata.PartitionLagInput{
				{Committed: committed, HighWatermark: hw, LogStartOffset: ls}}}}
			before := f.calls
			if err := lb.fill(context.Background(), f, gs, now); err != nil {
				t.Fatal(err)
			}
			from := max(committed, ls)
			var want int64
			for _, b := range f.batches {
				if b.LastOffset >= from && b.BaseOffset < hw {
					want += b.ByteLength
				}
			}
			if got := gs[0].Partitions[0].BytesBehind; got != want || f.calls != before+1 {
				t.Fatalf("seed %d step %d (from %d, hw %d, ls %d): %d bytes, want %d (%d calls)", seed, step, from, hw, ls, got, want, f.calls-before)
			}
		}
	}
}
