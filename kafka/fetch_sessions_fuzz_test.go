package kafka

import (
	"testing"
	"time"
)

// FuzzFetchSessions drives the session cache with requests read from the
// input (full, incremental and closing fetches of a few session ids,
// partitions added and forgotten, outcomes of every kind) and checks its
// invariants after each: no panic, every session's index matches its
// partitions, no key twice, the partition count is the sum, the bounds
// hold. Run with
//
//	go test -run '^$' -fuzz FuzzFetchSessions -fuzztime 30s ./kafka/
func FuzzFetchSessions(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 1, 0, 5, 4, 9, 2, 1, 1, 7})
	f.Add([]byte{0, 9, 0, 9, 0, 9, 1, 1, 1, 2, 2, 2, 3, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		lim := sessionLimits{maxSessions: 3, maxParts: 6, evictAfter: 10 * time.Second}
		c := newFetchSessions(lim)
		var ids []int32
		now := t0
		next := func() byte {
			if len(in) == 0 {
				return 0
			}
			b := in[0]
			in = in[1:]
			return b
		}
		for len(in) > 0 {
			op, n := next(), int(next()%8)
			var r sessionRequest
			r.owner = string('a' + rune(op%2))
			for range n {
				k := next()
				p := reqPart(string('x'+rune(k%3)), int32(k/3%4), int64(k))
				if k&0x80 != 0 {
					r.forgotten = append(r.forgotten, p.key)
				} else {
					r.parts = append(r.parts, p)
				}
			}
			switch op % 4 {
			case 0:
				r.epoch = 0
			case 1:
				r.epoch = -1
			default:
				r.epoch = int32(next() % 4)
			}
			if len(ids) > 0 && op&0x10 != 0 {
				r.id = ids[int(op)%len(ids)]
			}
			now = now.Add(time.Duration(next()) * 100 * time.Millisecond)
			plan, code := c.begin(r, now)
			if code == 0 {
				outs := make([]partOutcome, len(plan.parts))
				for i := range outs {
					b := next()
					outs[i] = partOutcome{read: b&1 != 0, records: b&2 != 0, hwm: int64(b >> 4), lso: int64(b >> 6)}
					if b&4 != 0 {
						outs[i] = partOutcome{err: 1, hwm: -1, lso: -1}
					}
				}
				id, include := c.finish(plan, outs, now)
				if len(include) != len(plan.parts) {
					t.Fatalf("include %d for %d partitions", len(include), len(plan.parts))
				}
				if id != 0 {
					ids = append(ids, id)
				}
			}
			checkSessions(t, c, lim)
		}
	})
}

// checkSessions checks the cache's invariants.
func checkSessions(t *testing.T, c *fetchSessions, lim sessionLimits) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) > lim.maxSessions {
		t.Fatalf("%d sessions past %d", len(c.byID), lim.maxSessions)
	}
	total := 0
	for id, s := range c.byID {
		if id <= 0 || s.id != id {
			t.Fatalf("session %d under id %d", s.id, id)
		}
		if len(s.parts) > lim.maxParts || len(s.index) != len(s.parts) {
			t.Fatalf("session %d: %d partitions, %d indexed", id, len(s.parts), len(s.index))
		}
		for i, p := range s.parts {
			if s.index[p.key] != i {
				t.Fatalf("session %d: %v at %d indexed %d", id, p.key, i, s.index[p.key])
			}
		}
		total += len(s.parts)
	}
	if total != c.parts {
		t.Fatalf("%d partitions counted, %d held", c.parts, total)
	}
}
