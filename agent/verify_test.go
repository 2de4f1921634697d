package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/objectstore"
)

// wholeGets counts the whole-file reads made through it.
type wholeGets struct {
	objectstore.Store
	n atomic.Int64
}

func (s *wholeGets) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	if off == 0 { // whole-file loads ask for the recorded size + 1; batches start past the file header
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key, off, length)
}

// A whole file loaded into the read cache is checked against its CRC-32C
// first: a flipped byte that no Kafka batch CRC covers (the first batch's
// partition leader epoch) makes the read DataLoss, and the file is not
// cached (the next read loads it again and, the object repaired, gets
// the records). Before the check, the damaged file was served and cached.
func TestCorruptWholeFileIsDataLossNotCached(t *testing.T) {
	mem := objectstore.NewMemory()
	var gets *wholeGets
	w, r, _ := writerAndReader(t, mem, func(s objectstore.Store) objectstore.Store { gets = &wholeGets{Store: s}; return gets },
		func(*agent.Config) {})
	produceFiles(t, w, "t", 1, 4<<10)
	ctx := context.Background()
	var key string
	if err := mem.List(ctx, "", func(o objectstore.ObjectInfo) error { key = o.Key; return nil }); err != nil || key == "" {
		t.Fatalf("find the stored file: %q, %v", key, err)
	}
	good, err := mem.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	bad[logfile.HeaderSize+12] ^= 0x01 // the first batch's partition leader epoch
	if err := mem.Put(ctx, key, bad, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0); code(err) != codes.DataLoss {
			t.Fatalf("fetch %d of a corrupt file: %v, want DataLoss", i, err)
		}
	}
	if n := gets.n.Load(); n != 2 {
		t.Fatalf("%d whole-file loads for two reads of a corrupt file, want 2 (it must not be cached)", n)
	}
	if err := mem.Put(ctx, key, good, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != 4 {
		t.Fatalf("fetch of the repaired file: %d records, %v; want 4", len(f.GetRecords()), err)
	}
}
