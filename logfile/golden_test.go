package logfile

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-v1.floe")

const goldenPath = "testdata/golden-v1.floe"

type goldenBatch struct {
	topic     int64
	partition int32
	gzip      bool // stored-block gzip instead of no compression
	opts      kbatch.EncodeOptions
	recs      []kbatch.Record
}

// goldenBatches is the fixed content of the golden file: 2 topics, 3
// partitions, 4 batches with fixed timestamps, uncompressed or gzip with
// stored deflate blocks (byte-for-byte reproducible whatever the gzip
// library).
func goldenBatches() []goldenBatch {
	plain := kbatch.DefaultEncodeOptions()
	idem := kbatch.EncodeOptions{Compression: kbatch.None, ProducerID: 1000, ProducerEpoch: 2, BaseSequence: 5}
	return []goldenBatch{
		{topic: 7, partition: 0, opts: plain, recs: []kbatch.Record{
			{Timestamp: 1735689600000, Key: []byte("user-1"), Value: []byte(`{"event":"login"}`),
				Headers: []kbatch.Header{{Key: "trace-id", Value: []byte("abc123")}}},
			{Timestamp: 1735689600250, Key: []byte("user-2"), Value: []byte(`{"event":"click"}`)},
			{Timestamp: 1735689600100, Key: nil, Value: []byte("no key")},
		}},
		{topic: 7, partition: 1, gzip: true, opts: plain, recs: []kbatch.Record{
			{Timestamp: 1735689601000, Key: []byte("k"), Value: bytes.Repeat([]byte("gzip "), 20)},
			{Timestamp: 1735689601001, Key: []byte("k"), Value: []byte{},
				Headers: []kbatch.Header{{Key: "null", Value: nil}, {Key: "", Value: []byte("v")}}},
		}},
		{topic: 42, partition: 0, opts: plain, recs: []kbatch.Record{
			{Timestamp: 1735689602000, Key: nil, Value: nil},
		}},
		{topic: 7, partition: 0, opts: idem, recs: []kbatch.Record{
			{Timestamp: 1735689603000, Key: []byte("user-1"), Value: []byte(`{"event":"logout"}`)},
			{Timestamp: 1735689603000, Key: []byte("user-3"), Value: []byte(`{"event":"login"}`)},
		}},
	}
}

// goldenEntries is the index of the golden file, written out so that a
// change in the layout cannot go unnoticed.
var goldenEntries = []Entry{
	{TopicID: 7, Partition: 0, ByteOffset: 8, ByteLength: 152, RecordCount: 3, MaxTimestamp: 1735689600250, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	{TopicID: 7, Partition: 1, ByteOffset: 160, ByteLength: 211, RecordCount: 2, MaxTimestamp: 1735689601001, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	{TopicID: 42, Partition: 0, ByteOffset: 371, ByteLength: 68, RecordCount: 1, MaxTimestamp: 1735689602000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
	{TopicID: 7, Partition: 0, ByteOffset: 439, ByteLength: 122, RecordCount: 2, MaxTimestamp: 1735689603000, ProducerID: 1000, ProducerEpoch: 2, BaseSequence: 5},
}

func writeGolden(t *testing.T) []byte {
	w := NewWriter(0)
	for _, g := range goldenBatches() {
		var b []byte
		if g.gzip {
			b = gzipStoredBatch(t, g.recs)
		} else {
			var err error
			if b, err = kbatch.Encode(g.recs, g.opts); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Append(g.topic, g.partition, b); err != nil {
			t.Fatal(err)
		}
	}
	return w.Finish()
}

func TestGolden(t *testing.T) {
	file := writeGolden(t)
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, file, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run go test ./logfile -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(file, golden) {
		t.Fatalf("Writer output (%d bytes) differs from %s (%d bytes): the format changed; "+
			"if on purpose, bump the format version and rerun with -update", len(file), goldenPath, len(golden))
	}
	entries, err := ReadIndex(golden)
	if err != nil {
		t.Fatalf("ReadIndex(golden): %v", err)
	}
	if !reflect.DeepEqual(entries, goldenEntries) {
		t.Fatalf("ReadIndex(golden) =\n%+v\nwant\n%+v", entries, goldenEntries)
	}
	gb := goldenBatches()
	base := int64(500)
	for i, e := range entries {
		b, err := Batch(golden, e)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Clone(b)
		if err := kbatch.SetBaseOffset(b, base); err != nil {
			t.Fatal(err)
		}
		info, recs, err := kbatch.Decode(b, 0)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if want := map[bool]kbatch.Compression{false: kbatch.None, true: kbatch.Gzip}[gb[i].gzip]; info.Compression != want {
			t.Fatalf("batch %d compression %v, want %v", i, info.Compression, want)
		}
		assertRecords(t, recs, gb[i].recs, base)
		base += int64(len(recs))
	}
}
