package metadatatest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testAgentsRule holds BeatAgent and LeaveAgent to metadata.PlanAgentBeat
// on generated cases: a model applies the rule to rows kept on a clock of
// its own while the store applies it on its clock. Rows beat with a ttl of
// 1 ms have expired by the next step (each step waits 3 ms), those of an
// hour are live, so both clocks agree on every row's liveness. Node ids are
// the store's: a kept one must be the row's, a new one larger than every
// one seen.
func testAgentsRule(t *testing.T, s metadata.Store) {
	c := ctx(t)
	rng := rand.New(rand.NewPCG(20, 848))
	ids := []string{"a", "b", "c", "d"}
	model := map[string]metadata.AgentRow{}
	now := time.Unix(1_700_000_000, 0) // the model's clock
	var maxNode int32
	for step := range 60 {
		now = now.Add(3 * time.Millisecond)
		id := ids[rng.IntN(len(ids))]
		if rng.IntN(6) == 0 {
			if err := s.LeaveAgent(c, id); err != nil {
				t.Fatalf("step %d: LeaveAgent(%s): %v", step, id, err)
			}
			delete(model, id)
			time.Sleep(3 * time.Millisecond)
			continue
		}
		ttl := time.Hour
		if rng.IntN(3) == 0 {
			ttl = time.Millisecond
		}
		a := metadata.AgentInfo{ID: id, Host: "10.0.0." + id, Port: int32(9000 + step), Zone: ids[rng.IntN(2)]}
		if rng.IntN(3) != 0 { // else an agent of an earlier release: no gRPC address
			a.GRPCAddr = fmt.Sprintf("10.0.0.%s:%d", id, 7000+step)
		}
		rows := make([]metadata.AgentRow, 0, len(model))
		for _, r := range model {
			rows = append(rows, r)
		}
		plan := metadata.PlanAgentBeat(rows, a, now, ttl)
		live, err := s.BeatAgent(c, a, ttl)
		if err != nil {
			t.Fatalf("step %d: BeatAgent(%s, %v): %v", step, id, ttl, err)
		}
		self := a
		for _, g := range live {
			if g.ID == id {
				self.NodeID = g.NodeID
			}
		}
		switch {
		case plan.KeepNodeID && self.NodeID != plan.NodeID:
			t.Fatalf("step %d: %s's live row has node id %d, store answered %d", step, id, plan.NodeID, self.NodeID)
		case !plan.KeepNodeID && self.NodeID <= maxNode:
			t.Fatalf("step %d: %s needs a new node id, store gave %d (largest seen %d)", step, id, self.NodeID, maxNode)
		}
		maxNode = max(maxNode, self.NodeID)
		if want := plan.Live(self); !reflect.DeepEqual(live, want) {
			t.Fatalf("step %d: BeatAgent(%s, %v) = %+v, the rule says %+v", step, id, ttl, live, want)
		}
		for _, r := range plan.Expired {
			delete(model, r.ID)
		}
		model[id] = metadata.AgentRow{AgentInfo: self, ExpiresAt: plan.ExpiresAt}
		time.Sleep(3 * time.Millisecond)
	}
}
