package metadatatest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testGroupConcurrent: members heartbeat concurrently (on PostgreSQL,
// stable heartbeats take the one-statement path while others rebalance),
// some leave and rejoin. A client drops a partition locally before the
// heartbeat that releases it and takes one only from a heartbeat answer, so
// under one lock of the client-side view no partition may ever be held by
// two clients; at the end every partition is held once.
func testGroupConcurrent(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "conc", 16)
	const grp, members, timeout = "conc", 5, 5 * time.Second
	var mu sync.Mutex // protects holder
	holder := map[tp]string{}
	var failed error
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failed == nil {
			failed = err
		}
	}
	// apply drops what c no longer holds and takes what it was given,
	// checking that nobody else holds it.
	apply := func(c *client, next map[tp]bool) {
		mu.Lock()
		defer mu.Unlock()
		for p := range c.held {
			if !next[p] && holder[p] == c.id {
				delete(holder, p)
			}
		}
		for p := range next {
			if o, ok := holder[p]; ok && o != c.id && failed == nil {
				failed = fmt.Errorf("partition %v given to %s while %s holds it", p, c.id, o)
			}
			holder[p] = c.id
		}
		c.held = next
	}
	stop := time.Now().Add(2 * time.Second)
	var settled atomic.Int32 // members that saw the group stable
	var wg sync.WaitGroup
	clients := make([]*client, members)
	for i := range members {
		c := &client{id: fmt.Sprintf("c%d", i), held: map[tp]bool{}}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			beat := func() bool {
				resp, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: c.id, MemberEpoch: c.epoch,
					Subscription: []string{"conc"}, Owned: c.owned(), SessionTimeout: timeout})
				if err != nil {
					fail(fmt.Errorf("heartbeat of %s: %w", c.id, err))
					return false
				}
				c.epoch = resp.MemberEpoch
				next := map[tp]bool{}
				for _, p := range resp.Assigned {
					next[p] = true
				}
				apply(c, next)
				return true
			}
			for time.Now().Before(stop) {
				if !beat() {
					return
				}
				if rand.IntN(25) == 0 {
					apply(c, map[tp]bool{}) // release everything, then leave
					if _, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: c.id,
						MemberEpoch: metadata.LeaveEpoch}); err != nil {
						fail(err)
						return
					}
					c.epoch = metadata.JoinEpoch
				}
				time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
			}
			// Settle: beat until the group is stable and this member holds
			// its target, then keep beating until every member got there: a
			// member that stopped early would expire after its session
			// timeout (under load, settling can take that long) and lose
			// its partitions while its client still holds them.
			seen := false
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
				if !beat() {
					return
				}
				if !seen {
					d, err := s.DescribeGroup(ctx(t), grp)
					if err != nil {
						fail(err)
						return
					}
					if d.State == metadata.GroupStable && len(d.Members) == members {
						seen = true
						settled.Add(1)
					}
				}
				if settled.Load() == members {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			fail(errors.New("not stable within 20s"))
		}()
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	// One more beat each: a member that settled first may not have
	// received partitions released after its last beat.
	for _, c := range clients {
		resp, err := s.Heartbeat(ctx(t), metadata.HeartbeatRequest{Group: grp, MemberID: c.id, MemberEpoch: c.epoch,
			Owned: c.owned(), SessionTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		next := map[tp]bool{}
		for _, p := range resp.Assigned {
			next[p] = true
		}
		apply(c, next)
	}
	if failed != nil {
		t.Fatal(failed)
	}
	if len(holder) != int(tpc.Partitions) {
		t.Fatalf("stable: %d of %d partitions held: %v", len(holder), tpc.Partitions, holder)
	}
	for _, c := range clients {
		if n := len(c.held); n < 3 || n > 4 {
			t.Errorf("%s holds %d partitions, want 3 or 4 (16 over 5)", c.id, n)
		}
	}
}
