package tableread

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeeper: a partition's rows are kept up to the first that does not
// fit in its share (p's below hi always), whatever the order in which
// the partitions' rows come (runs of one, or interleaved), as a plain
// model of the rule keeps them.
func TestKeeper(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for round := range 300 {
		parts := 1 + rng.IntN(5)
		p := int32(rng.IntN(parts))
		hi := int64(rng.IntN(200))
		share := int64(rng.IntN(20000))
		// The rows: each partition's offsets increasing, the partitions in
		// runs (round even) or interleaved (odd).
		var rows []row
		next := make([]int64, parts)
		for range rng.IntN(400) {
			q := int32(rng.IntN(parts))
			if round%2 == 0 && len(rows) > 0 && rng.IntN(8) != 0 {
				q = rows[len(rows)-1].part
			}
			o := next[q]
			next[q] += 1 + int64(rng.IntN(3))
			rows = append(rows, row{part: q, rec: recOf(o, 0, make([]byte, rng.IntN(300)))})
		}
		k := keeper{p: p, hi: hi, share: share, parts: map[int32]*kept{}}
		for _, r := range rows {
			k.add(r)
		}
		// The model: per partition, in arrival order.
		for q := range int32(parts) {
			var want []int64
			spent, cut := int64(0), int64(math.MaxInt64)
			for _, r := range rows {
				if r.part != q || r.rec.Offset >= cut {
					continue
				}
				n := int64(r.size())
				if spent+n > share && (q != p || r.rec.Offset >= hi) {
					cut = r.rec.Offset
					continue
				}
				spent += n
				want = append(want, r.rec.Offset)
			}
			kq := k.parts[q]
			var got []int64
			gotHi := int64(math.MaxInt64)
			if kq != nil {
				for _, r := range kq.rows {
					got = append(got, r.rec.Offset)
				}
				gotHi = kq.hi
			}
			if !slices.Equal(got, want) || gotHi != cut {
				t.Fatalf("round %d partition %d (p %d, hi %d, share %d): kept %v up to %d, want %v up to %d", round, q, p, hi, share, got, gotHi, want, cut)
			}
		}
	}
}
