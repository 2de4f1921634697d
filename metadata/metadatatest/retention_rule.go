package metadatatest

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testRetentionRule holds the backend's RetentionPass (its SQL) to the Go
// rule, metadata.RetentionRule, on generated cases: partitions of random
// batches (sizes, counts, files), log starts moved by DeleteRecords,
// retention by time (everything expired, or nothing) and by size, holds,
// and what the caller says it knows of the partitions' bytes (nothing,
// or upper bounds counted to an older high watermark). A second pass
// given the first one's figures moves nothing more.
func testRetentionRule(t *testing.T, s metadata.Store) {
	c := ctx(t)
	rnd := rand.New(rand.NewPCG(71, 72))
	for round := range 20 {
		const parts = 6
		tp := createTopic(t, s, "rule"+string(rune('a'+round)), parts)
		for range 1 + rnd.IntN(6) {
			var bs []metadata.BatchCommit
			for p := range int32(parts) {
				if rnd.IntN(3) == 0 {
					continue
				}
				b := plain(tp.ID, p, int32(1+rnd.IntN(5)))
				b.ByteLength = int64(1 + rnd.IntN(500))
				bs = append(bs, b)
			}
			if len(bs) > 0 {
				commit(t, s, file(key(), bs...))
			}
		}
		states, err := s.PartitionStates(c, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if rnd.IntN(3) == 0 && st.HighWatermark > 0 {
				if _, err := s.DeleteRecords(c, tp.ID, st.Partition, rnd.Int64N(st.HighWatermark+1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		r := metadata.Retention{Ms: []int64{-1, 0, 24 * 60 * 60 * 1000}[rnd.IntN(3)], Bytes: -1, Delete: true}
		if rnd.IntN(3) > 0 {
			r.Bytes = rnd.Int64N(1500)
		}
		if rnd.IntN(2) == 0 {
			r.Hold = map[int32]int64{}
			for p := range int32(parts) {
				if rnd.IntN(3) > 0 {
					r.Hold[p] = rnd.Int64N(20)
				}
			}
		}
		if rnd.IntN(3) == 0 { // retention.raw.ms: applies where a table holds (Hold)
			r.HasRaw, r.RawMs = true, []int64{0, 24 * 60 * 60 * 1000}[rnd.IntN(2)]
			if r.Ms >= 0 {
				r.RawMs = min(r.RawMs, r.Ms)
			}
		}
		ms := r.Raw().Ms // the time limit the rule applies
		before := map[int32]metadata.PartitionState{}
		batches := map[int32][]metadata.RetentionBatch{}
		var minAppend, maxAppend int64 = 1 << 62, 0
		if states, err = s.PartitionStates(c, tp.ID); err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			before[st.Partition] = st
			refs, _, err := s.FindBatches(c, tp.ID, st.Partition, st.LogStartOffset, 1<<40)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range refs {
				batches[st.Partition] = append(batches[st.Partition], metadata.RetentionBatch{BaseOffset: b.BaseOffset,
					LastOffset: b.LastOffset, ByteLength: b.ByteLength, AppendMs: b.LogAppendTime})
				minAppend, maxAppend = min(minAppend, b.LogAppendTime), max(maxAppend, b.LogAppendTime)
			}
		}
		// retention.ms 0 expires every batch appended before now: let the
		// store's clock pass the last append.
		time.Sleep(3 * time.Millisecond)
		cutoff := maxAppend + 1 // Ms 0: all expired
		if ms > 0 {
			cutoff = minAppend - 1 // a day: none
		}
		// What the caller knows: nothing (every partition), or a subset
		// with upper bounds of their bytes.
		var known []metadata.RetentionKnown
		look := map[int32]bool{}
		if rnd.IntN(2) == 0 {
			known = []metadata.RetentionKnown{}
			for _, st := range states {
				if rnd.IntN(4) == 0 {
					continue
				}
				look[st.Partition] = true
				k := metadata.RetentionKnown{Partition: st.Partition, HighWatermark: -1}
				if rnd.IntN(3) > 0 {
					k.HighWatermark = st.LogStartOffset + rnd.Int64N(st.HighWatermark-st.LogStartOffset+1)
					for _, b := range batches[st.Partition] {
						if b.BaseOffset < k.HighWatermark {
							k.Bytes += b.ByteLength
						}
					}
					k.Bytes += rnd.Int64N(3) * rnd.Int64N(400)
				}
				known = append(known, k)
			}
		}
		checks, err := s.RetentionPass(c, tp.ID, r, known)
		if err != nil {
			t.Fatalf("round %d: RetentionPass: %v", round, err)
		}
		checked := map[int32]metadata.RetentionCheck{}
		for _, ch := range checks {
			checked[ch.State.Partition] = ch
		}
		after, err := s.PartitionStates(c, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range after {
			b := before[st.Partition]
			want := b.LogStartOffset
			if b.LogStartOffset < b.HighWatermark && (known == nil || look[st.Partition]) {
				want = metadata.RetentionRule(b, batches[st.Partition], r, cutoff)
				ch, ok := checked[st.Partition]
				if !ok {
					t.Errorf("round %d partition %d: not checked", round, st.Partition)
				} else if ch.Moved != (want > b.LogStartOffset) || ch.State.LogStartOffset != want {
					t.Errorf("round %d partition %d: check %+v, want log start %d", round, st.Partition, ch, want)
				}
				var kept int64
				for _, bt := range batches[st.Partition] {
					if bt.LastOffset >= want {
						kept += bt.ByteLength
					}
				}
				if r.Bytes >= 0 && ch.KeptBytes < kept {
					t.Errorf("round %d partition %d: kept bytes %d, under the %d kept", round, st.Partition, ch.KeptBytes, kept)
				}
			} else if _, ok := checked[st.Partition]; ok {
				t.Errorf("round %d partition %d: checked, not asked for", round, st.Partition)
			}
			if st.LogStartOffset != want {
				t.Errorf("round %d partition %d (%+v, %d batches), retention %+v, known %+v: log start %d, the rule says %d",
					round, st.Partition, b, len(batches[st.Partition]), r, known, st.LogStartOffset, want)
			}
		}
		// Again with what the first pass found: nothing more moves.
		var again []metadata.RetentionKnown
		for _, ch := range checks {
			again = append(again, metadata.RetentionKnown{Partition: ch.State.Partition, HighWatermark: ch.State.HighWatermark, Bytes: ch.KeptBytes})
		}
		if r.Bytes < 0 || len(again) == 0 {
			continue
		}
		if ms == 0 {
			continue // the first pass emptied what it could; a later append time would differ
		}
		checks, err = s.RetentionPass(c, tp.ID, r, again)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range checks {
			if ch.Moved {
				t.Errorf("round %d partition %d: moved again to %d", round, ch.State.Partition, ch.State.LogStartOffset)
			}
		}
	}
}
