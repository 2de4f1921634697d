package compactor_test

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
)

// raceStore runs race, once, inside the first lease call owner makes
// after it took the lease of dropping deleted topics' tables: between the
// drop job's listing of tables and topics and what it does next.
type raceStore struct {
	metadata.Store
	owner string
	race  func()
	mu    sync.Mutex // protects armed, done
	armed bool
	done  bool
}

func (s *raceStore) AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	run := owner == s.owner && s.armed && !s.done
	if run {
		s.done = true
	}
	if owner == s.owner && job == compactor.JobIcebergDrop {
		s.armed = true
	}
	s.mu.Unlock()
	if run {
		s.race()
	}
	return s.Store.AcquireLease(ctx, job, owner, ttl)
}

// TestIcebergDropRecreatedRace: the drop job lists the tables and the
// topics (the topic is deleted), then, before it drops, the topic is
// created again and another compactor renames the old table out of the
// way and appends the new topic's records to a new table of the same
// name. That new table is kept, with its rows; the renamed old table is
// dropped by a later pass.
func TestIcebergDropRecreatedRace(t *testing.T) {
	iceBackends(t, func(t *testing.T, e iceEnv) {
		ctx := context.Background()
		rnd := mrand.New(mrand.NewPCG(31, 32))
		cfg := map[string]string{"iceberg.lag": "0"}
		old := createTopic(t, e.env, "re", 1, cfg)
		produce(t, e.env, old.ID, []int32{0}, 4, produced{}, rnd)
		w, _ := e.writer(t)
		runOnce(t, iceCompactor(t, e, "w", w, nil))
		if err := e.meta.DeleteTopic(ctx, old.Name); err != nil {
			t.Fatal(err)
		}
		want := produced{}
		var again metadata.Topic
		rs := &raceStore{Store: e.meta, owner: "drop", race: func() {
			again = createTopic(t, e.env, "re", 1, cfg)
			produce(t, e.env, again.ID, []int32{0}, 3, want, rnd)
			runOnce(t, iceCompactor(t, e, "other", w, nil)) // renames the old table, appends to a new one
		}}
		drop := func(c *compactor.Config) {
			c.IcebergMaintain.DropDeletedTopics = true
			c.IcebergMaintain.Interval = time.Millisecond
		}
		runOnce(t, iceCompactor(t, iceEnv{env: env{meta: rs, store: e.store}, cfg: e.cfg}, "drop", w, drop))
		if !rs.done {
			t.Fatal("the race did not run")
		}
		checkTable(t, w, again.Name, want)
		retired := table.Identifier{iceberg.DefaultNamespace, fmt.Sprintf("re_x%d", old.ID)}
		if ok, err := w.Catalog().CheckTableExists(ctx, retired); err != nil || !ok {
			t.Fatalf("the old table renamed to %v: %v, %v", retired, ok, err)
		}
		time.Sleep(5 * time.Millisecond) // the drop job's interval
		runOnce(t, iceCompactor(t, e, "drop2", w, drop))
		if ok, err := w.Catalog().CheckTableExists(ctx, retired); err != nil || ok {
			t.Errorf("the old table %v: %v, %v; want it dropped", retired, ok, err)
		}
		checkTable(t, w, again.Name, want)
	})
}
