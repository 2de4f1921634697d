package compactor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/floe-broker/floe/compactor"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// rivalStore plays a second compactor that took the same key first: on
// each upload under v1/files/ it stores its own object under the key
// (a plain put), then hands the compactor's upload, options unchanged, to
// the store. Only the conditional write (If-None-Match: * on S3) keeps the
// rival's object.
type rivalStore struct {
	objectstore.Store
	mu    sync.Mutex // protects keys
	keys  []string   // the keys the rival took, in order
	rival []byte
}

func (r *rivalStore) Put(ctx context.Context, key string, data []byte, opts objectstore.PutOptions) error {
	if strings.HasPrefix(key, "v1/files/") {
		if err := r.Store.Put(ctx, key, r.rival, objectstore.PutOptions{}); err != nil {
			return err
		}
		r.mu.Lock()
		r.keys = append(r.keys, key)
		r.mu.Unlock()
	}
	return r.Store.Put(ctx, key, data, opts)
}

// taken returns the keys the rival took.
func (r *rivalStore) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// checkRivalKept: the pass failed on the upload with ErrExists, the
// rival's objects are intact (not overwritten) and the reads of the
// partitions did not change (nothing was repointed to them).
func checkRivalKept(t *testing.T, e env, rs *rivalStore, err error, what string, reads func() string, before string) {
	t.Helper()
	if !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("%s over a key another compactor holds: pass error %v, want objectstore.ErrExists", what, err)
	}
	keys := rs.taken()
	if len(keys) == 0 {
		t.Fatalf("the %s uploaded nothing", what)
	}
	for _, k := range keys {
		got, gerr := e.store.Get(context.Background(), k, 0, -1)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if !bytes.Equal(got, rs.rival) {
			t.Errorf("the %s overwrote the other compactor's object %s (%d bytes, want its %d)", what, k, len(got), len(rs.rival))
		}
	}
	if after := reads(); after != before {
		t.Errorf("reads changed after the refused %s upload:\nbefore %s\nafter %s", what, before, after)
	}
}

// TestUploadsAreConditional: the compactor's merged and compacted files
// are written with If-None-Match: * (objectstore IfAbsent), so that two
// compactors can never overwrite each other's object: an upload over a
// key another compactor already wrote fails with ErrExists, the other
// object is left as it was and nothing is committed; the next pass, on a
// fresh key, succeeds. On a real S3 server (versitygw) and a local
// directory, each behind the object store's fault wrapper (no faults set)
// as chaos runs it.
func TestUploadsAreConditional(t *testing.T) {
	backends(t, func(t *testing.T, e env) {
		ctx := context.Background()
		faulty := objectstore.WithFaults(e.store, objectstore.FaultConfig{})
		rs := &rivalStore{Store: faulty, rival: []byte("the other compactor's file")}
		ce := env{meta: e.meta, store: rs}
		// The compactors below are one compactor ("a") restarted: the jobs'
		// leases stay theirs.

		// A merge of small files.
		tp, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "merge", Partitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			writeReal(t, e, fmt.Sprint(i), row{tp.ID, 0, []int{2}})
		}
		merged := func() string { s, _ := readBack(t, e, tp.ID, 0); return s }
		before := merged()
		waitStore(t, e, storeNow(t, e)) // the files are older than MergeMinAge 0
		mc := newCompactor(t, ce, "a", func(c *compactor.Config) { c.MergeMinAge = 0 })
		_, err = mc.RunOnce(ctx)
		checkRivalKept(t, e, rs, err, "merge", merged, before)
		mc = newCompactor(t, env{meta: e.meta, store: faulty}, "a", func(c *compactor.Config) { c.MergeMinAge = 0 })
		if r := runOnce(t, mc); r.FilesMerged != 4 {
			t.Fatalf("merge pass without the rival: %+v, want the 4 files merged", r)
		}
		if after := merged(); after != before {
			t.Fatalf("reads changed after the merge:\nbefore %s\nafter %s", before, after)
		}

		// A keyed compaction's rewritten rows.
		rs.keys = nil
		kt, err := e.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "keyed", Partitions: 1,
			Config: map[string]string{"cleanup.policy": "compact"}})
		if err != nil {
			t.Fatal(err)
		}
		writeKeyed(t, e, kt.ID, 0, []kv{"a=1", "b=1"}, []kv{"a=2"})
		writeKeyed(t, e, kt.ID, 0, []kv{"b=2"}) // the active tail
		keyed := func() string { return mustRead(t, e, kt.ID, 0) }
		before = keyed()
		waitStore(t, e, storeNow(t, e)) // the batches are older than CompactMinAge 0
		kc := newCompactor(t, ce, "a", func(c *compactor.Config) { c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		_, err = kc.RunOnce(ctx)
		checkRivalKept(t, e, rs, err, "keyed compaction", keyed, before)
		kc = newCompactor(t, env{meta: e.meta, store: faulty}, "a", func(c *compactor.Config) { c.MergeSmallBytes, c.CompactMinAge = 0, 0 })
		if r := runOnce(t, kc); r.RecordsRemoved != 1 {
			t.Fatalf("compaction pass without the rival: %+v, want a=1 removed", r)
		}
		if got, want := keyed(), "1:b=1 2:a=2 3:b=2"; got != want {
			t.Fatalf("after the compaction: %s, want %s", got, want)
		}
	})
}
