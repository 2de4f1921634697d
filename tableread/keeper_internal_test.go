package tableread

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeeper: a partition's rows are kept from its floor (the read-ahead
// holds those below it; p has none) up to the first that does not fit
// in its share (p's below hi always), whatever the order in which the
// partitions' rows come (runs of one, or interleaved), as a plain model
// of the rule keeps them; a row it does not want (never decoded) it
// would not have kept.
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
		// Each partition's floor: none, within its offsets, or all.
		floors := make([]int64, parts)
		for q := range floors {
			switch rng.IntN(4) {
			case 0:
				floors[q] = math.MinInt64
			case 1:
				floors[q] = math.MaxInt64
			default:
				floors[q] = int64(rng.IntN(300))
			}
		}
		floor := func(q int32) int64 { return floors[q] }
		if round%3 == 0 {
			floor = nil
		}
		k := keeper{p: p, hi: hi, share: share, floor: floor, parts: map[int32]*kept{}}
		for _, r := range rows {
			if !k.wants(r.part, r.rec.Offset) {
				continue // not decoded
			}
			k.add(r)
		}
		// The model: per partition, in arrival order.
		for q := range int32(parts) {
			var want []int64
			spent, cut := int64(0), int64(math.MaxInt64)
			from := int64(0)
			if floor != nil && q != p {
				from = max(0, floors[q])
			}
			for _, r := range rows {
				if r.part != q || r.rec.Offset >= cut || r.rec.Offset < from {
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
			gotLo, gotHi := from, int64(math.MaxInt64)
			if kq != nil {
				for _, r := range kq.rows {
					got = append(got, r.rec.Offset)
				}
				gotLo, gotHi = kq.lo, kq.hi
			}
			if !slices.Equal(got, want) || gotHi != cut || gotLo != from {
				t.Fatalf("round %d partition %d (p %d, hi %d, share %d, from %d): kept %v of [%d, %d), want %v of [%d, %d)", round, q, p, hi, share, from, got, gotLo, gotHi, want, from, cut)
			}
		}
	}
}
