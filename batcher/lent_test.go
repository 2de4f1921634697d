package batcher_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// A lent batch (AppendParsedLent) is read until its file is laid out and
// not after: its done runs once, after the copy, and the lender may then
// overwrite the bytes — which this test does, so a done called before
// the copy stores the scribbled bytes and fails the comparison. A
// refused append never calls done (the buffer stays the caller's).
func TestAppendParsedLentReturnsAfterLayout(t *testing.T) {
	cfg := fastConfig()
	cfg.Linger = time.Minute // sealed by Flush only
	e := newEnv(t, cfg, nil)
	tp := e.topic(t, "lent", 2)
	ctx := context.Background()

	var origs, lent [][]byte
	var done [4]atomic.Int32
	var waits []func() error
	for i := range 4 {
		b := batch(t, 3+i, "lent")
		info, err := kbatch.ParseInfo(b)
		if err != nil {
			t.Fatal(err)
		}
		origs = append(origs, bytes.Clone(b))
		lent = append(lent, b)
		p, err := e.b.AppendParsedLent(ctx, tp.ID, int32(i%2), b, info, func() {
			done[i].Add(1)
			for j := range b {
				b[j] = 0xEE // the lender reuses its buffer
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, func() error { _, err := p.Wait(ctx); return err })
	}
	for i := range done {
		if n := done[i].Load(); n != 0 {
			t.Fatalf("batch %d: done called %d times before its file was laid out", i, n)
		}
	}
	// Refused: done is never called.
	info, _ := kbatch.ParseInfo(origs[0])
	var refused atomic.Int32
	if _, err := e.b.AppendParsedLent(ctx, tp.ID, 0, append(bytes.Clone(origs[0]), 0), info, func() { refused.Add(1) }); !errors.Is(err, kbatch.ErrCorrupt) {
		t.Fatalf("AppendParsedLent with a wrong length: %v, want ErrCorrupt", err)
	}
	e.b.Flush()
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	for i := range done {
		if n := done[i].Load(); n != 1 {
			t.Fatalf("batch %d: done called %d times, want 1", i, n)
		}
	}
	if n := refused.Load(); n != 0 {
		t.Fatalf("done of a refused batch called %d times", n)
	}

	var keys []string
	if err := e.mem.List(ctx, "", func(o objectstore.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	file, err := e.mem.Get(ctx, keys[0], 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := logfile.ReadIndex(file)
	if err != nil || len(entries) != len(origs) {
		t.Fatalf("index %v, %v", entries, err)
	}
	var stored [][]byte
	for _, en := range entries {
		stored = append(stored, file[en.ByteOffset:en.ByteOffset+en.ByteLength])
	}
	// Laid out by partition: 0, 2 then 1, 3.
	for k, i := range []int{0, 2, 1, 3} {
		if !bytes.Equal(stored[k][8:], origs[i][8:]) {
			t.Fatalf("batch %d: the file holds other bytes than those lent (done came before the copy)", i)
		}
	}
	checkDense(t, e, tp, map[int32]int64{0: 3 + 5, 1: 4 + 6})
}
