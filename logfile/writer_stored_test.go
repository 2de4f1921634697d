package logfile

import (
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

// A compacted batch (fewer records than offsets) is refused by Append,
// which takes produced batches, and accepted by AppendStored.
func TestAppendStored(t *testing.T) {
	recs := []kbatch.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")}}
	b, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	c, kept, err := kbatch.Filter(b, 0, func(r kbatch.Record) bool { return r.Offset == 1 })
	if err != nil || kept != 1 {
		t.Fatal(kept, err)
	}
	w := NewWriter(0)
	if _, err := w.Append(1, 0, c); err == nil {
		t.Fatal("Append accepted a compacted batch")
	}
	e, err := w.AppendStored(1, 0, c)
	if err != nil || e.RecordCount != 1 {
		t.Fatalf("AppendStored: %+v, %v", e, err)
	}
	f := w.Finish()
	entries, err := ReadIndex(f)
	if err != nil || len(entries) != 1 {
		t.Fatalf("read back: %v, %v", entries, err)
	}
	got, err := Batch(f, entries[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, rs, err := kbatch.DecodeStored(got, 0); err != nil || len(rs) != 1 || rs[0].Offset != 1 || string(rs[0].Value) != "2" {
		t.Fatalf("decoded %+v, %v", rs, err)
	}
}
