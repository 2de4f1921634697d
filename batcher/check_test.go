package batcher_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// Append checks each batch once, at the edge: a batch with a bad CRC is
// refused and never reaches a file. AppendParsed takes the caller's check
// (it stores the bytes it is given without computing their CRC again), and
// still refuses an info that does not describe the bytes.
func TestAppendChecksOnce(t *testing.T) {
	e := newEnv(t, fastConfig(), nil)
	tp := e.topic(t, "check", 1)
	ctx := context.Background()
	good := batch(t, 3, "c")
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if _, err := e.b.Append(ctx, tp.ID, 0, bad); !errors.Is(err, kbatch.ErrCorrupt) {
		t.Fatalf("Append of a bad CRC: %v, want ErrCorrupt", err)
	}
	info, err := kbatch.ParseInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.AppendParsed(ctx, tp.ID, 0, append(bytes.Clone(good), 0), info); !errors.Is(err, kbatch.ErrCorrupt) {
		t.Fatalf("AppendParsed with a wrong length: %v, want ErrCorrupt", err)
	}
	if n := e.store.puts.Load(); n != 0 {
		t.Fatalf("%d PUTs after refused batches", n)
	}
	// The caller vouches for these bytes: the file holds them as given.
	vouched := bytes.Clone(good)
	vouched[len(vouched)-1] ^= 1
	p, err := e.b.AppendParsed(ctx, tp.ID, 0, vouched, info)
	if err != nil {
		t.Fatal(err)
	}
	e.b.Flush()
	res, err := p.Wait(ctx)
	if err != nil || res.BaseOffset != 0 {
		t.Fatalf("AppendParsed: %+v, %v", res, err)
	}
	var keys []string
	err = e.mem.List(ctx, "", func(o objectstore.ObjectInfo) error { keys = append(keys, o.Key); return nil })
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v", keys, err)
	}
	file, err := e.mem.Get(ctx, keys[0], 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := logfile.ReadIndex(file)
	if err != nil || len(entries) != 1 {
		t.Fatalf("index %v, %v", entries, err)
	}
	stored := file[entries[0].ByteOffset : entries[0].ByteOffset+entries[0].ByteLength]
	if !bytes.Equal(stored[8:], vouched[8:]) {
		t.Fatal("the stored batch is not the bytes handed to AppendParsed")
	}
}
