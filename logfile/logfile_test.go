package logfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"reflect"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

type appended struct {
	topic     int64
	partition int32
	recs      []kbatch.Record
}

// buildFile writes one batch per (topic, partition) for 3 topics of 40
// partitions, cycling through every codec.
func buildFile(t *testing.T) ([]byte, []appended, *Writer) {
	t.Helper()
	w := NewWriter(1 << 20)
	var in []appended
	i := 0
	for topic := int64(1); topic <= 3; topic++ {
		for p := int32(0); p < 40; p++ {
			recs := makeRecords(1+i%7, 20+i%50, 1700000000000+int64(i)*1000, "t")
			c := allCodecs[i%len(allCodecs)]
			e, err := w.Append(topic*100, p, encode(t, recs, c))
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if e.TopicID != topic*100 || e.Partition != p || e.RecordCount != int32(len(recs)) ||
				e.MaxTimestamp != recs[len(recs)-1].Timestamp || e.ProducerID != -1 {
				t.Fatalf("entry %+v does not describe the batch", e)
			}
			in = append(in, appended{topic * 100, p, recs})
			i++
		}
	}
	return w.Finish(), in, w
}

func TestRoundTrip(t *testing.T) {
	w := NewWriter(0)
	var in []appended
	for i := range 120 {
		recs := makeRecords(1+i%7, 20+i%50, 1700000000000+int64(i)*1000, "t")
		if _, err := w.Append(int64(i/40)*100, int32(i%40), encode(t, recs, allCodecs[i%len(allCodecs)])); err != nil {
			t.Fatal(err)
		}
		in = append(in, appended{int64(i/40) * 100, int32(i % 40), recs})
	}
	wantLen := w.Len()
	written := w.Entries()
	file := w.Finish()
	if len(file) != wantLen {
		t.Fatalf("Len() = %d before Finish, file is %d bytes", wantLen, len(file))
	}
	entries, err := ReadIndex(file)
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	if !reflect.DeepEqual(entries, written) {
		t.Fatalf("ReadIndex entries differ from the writer's")
	}
	for i, e := range entries {
		if e.TopicID != in[i].topic || e.Partition != in[i].partition {
			t.Fatalf("entry %d is %d/%d, want %d/%d", i, e.TopicID, e.Partition, in[i].topic, in[i].partition)
		}
		b, err := Batch(file, e)
		if err != nil {
			t.Fatalf("Batch %d: %v", i, err)
		}
		b = bytes.Clone(b)
		base := int64(i) * 1000
		if err := kbatch.SetBaseOffset(b, base); err != nil {
			t.Fatal(err)
		}
		info, recs, err := kbatch.Decode(b, 0)
		if err != nil {
			t.Fatalf("Decode batch %d: %v", i, err)
		}
		if info.Compression != allCodecs[i%len(allCodecs)] || info.RecordCount != e.RecordCount {
			t.Fatalf("batch %d: %v with %d records, entry says %d", i, info.Compression, info.RecordCount, e.RecordCount)
		}
		assertRecords(t, recs, in[i].recs, base)
	}
}

func TestEmptyFile(t *testing.T) {
	w := NewWriter(0)
	if w.Len() != MinFileSize {
		t.Fatalf("Len() = %d, want %d", w.Len(), MinFileSize)
	}
	file := w.Finish()
	if len(file) != MinFileSize {
		t.Fatalf("empty file is %d bytes", len(file))
	}
	entries, err := ReadIndex(file)
	if err != nil || len(entries) != 0 {
		t.Fatalf("ReadIndex = %v, %v", entries, err)
	}
}

func TestAppendRejects(t *testing.T) {
	good := encode(t, makeRecords(2, 10, 1, "x"), kbatch.None)
	w := NewWriter(0)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	if _, err := w.Append(1, 0, bad); !errors.Is(err, kbatch.ErrCorrupt) {
		t.Errorf("Append of a bad CRC = %v", err)
	}
	if _, err := w.Append(1, 0, append(bytes.Clone(good), 0)); err == nil {
		t.Error("Append with trailing bytes succeeded")
	}
	if _, err := w.Append(1, -1, good); err == nil {
		t.Error("Append to partition -1 succeeded")
	}
	if n := len(w.Entries()); n != 0 || w.Len() != MinFileSize {
		t.Fatalf("rejected appends left %d entries, Len %d", n, w.Len())
	}
	// A batch with a real base offset is stored with the placeholder.
	shifted := bytes.Clone(good)
	if err := kbatch.SetBaseOffset(shifted, 999); err != nil {
		t.Fatal(err)
	}
	e, err := w.Append(1, 0, shifted)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint64(shifted) != 999 {
		t.Fatal("Append modified its input")
	}
	file := w.Finish()
	b, err := Batch(file, e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, good) {
		t.Fatal("stored batch differs from the batch with base offset 0")
	}
	if _, err := w.Append(1, 0, good); err == nil {
		t.Fatal("Append after Finish succeeded")
	}
	if again := w.Finish(); !bytes.Equal(again, file) {
		t.Fatal("a second Finish returned another file")
	}
}

func TestBatchBounds(t *testing.T) {
	file, _, w := buildFile(t)
	e := w.Entries()[3]
	cases := map[string]Entry{
		"offset in header":      {ByteOffset: 0, ByteLength: e.ByteLength},
		"negative offset":       {ByteOffset: -100, ByteLength: e.ByteLength},
		"past the end":          {ByteOffset: int64(len(file)), ByteLength: e.ByteLength},
		"into the trailer":      {ByteOffset: int64(len(file)) - 70, ByteLength: 66},
		"overflowing end":       {ByteOffset: math.MaxInt64 - 10, ByteLength: 100},
		"huge length":           {ByteOffset: e.ByteOffset, ByteLength: math.MaxInt64},
		"shorter than a header": {ByteOffset: e.ByteOffset, ByteLength: 60},
		"wrong length":          {ByteOffset: e.ByteOffset, ByteLength: e.ByteLength + 1},
		"not at a batch":        {ByteOffset: e.ByteOffset + 1, ByteLength: e.ByteLength},
	}
	for name, bad := range cases {
		if _, err := Batch(file, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Batch = %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Batch(file[:10], e); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Batch of a truncated file = %v", err)
	}
}

// smallFile is a file of three small batches.
func smallFile(t *testing.T) []byte {
	w := NewWriter(0)
	for i, c := range []kbatch.Compression{kbatch.None, kbatch.Snappy, kbatch.None} {
		if _, err := w.Append(int64(i), int32(i), encode(t, makeRecords(1+i, 5, 100, "s"), c)); err != nil {
			t.Fatal(err)
		}
	}
	return w.Finish()
}

func TestEveryByteFlipDetected(t *testing.T) {
	file := smallFile(t)
	for i := range file {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(file)
			b[i] ^= mask
			if _, err := ReadIndex(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: ReadIndex = %v, want ErrCorrupt", i, mask, err)
			}
		}
	}
}

func TestEveryTruncationDetected(t *testing.T) {
	file := smallFile(t)
	for n := range len(file) {
		if _, err := ReadIndex(file[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: ReadIndex = %v, want ErrCorrupt", n, err)
		}
		if _, err := ReadIndex(file[len(file)-n:]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("first %d bytes cut: ReadIndex = %v, want ErrCorrupt", len(file)-n, err)
		}
	}
	if _, err := ReadIndex(append(bytes.Clone(file), 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatal("a file with a trailing byte passed")
	}
}

// TestSemanticCorruption edits fields and reseals the checksums, so that
// the checks behind them are what must catch the edit.
func TestSemanticCorruption(t *testing.T) {
	file := smallFile(t)
	size := len(file)
	footerOff := size - TrailerSize - (footerCountSize + 3*EntrySize)
	be := binary.BigEndian
	cases := map[string]func(b []byte){
		"header version": func(b []byte) { be.PutUint16(b[4:], 2) },
		"header flags":   func(b []byte) { be.PutUint16(b[6:], 1) },
		"trailer version": func(b []byte) {
			be.PutUint16(b[size-TrailerSize+trVersion:], 2)
		},
		"trailer flags": func(b []byte) { be.PutUint16(b[size-TrailerSize+trFlags:], 4) },
		"footer length not 4+50n": func(b []byte) {
			be.PutUint32(b[size-TrailerSize:], footerCountSize+3*EntrySize-1)
		},
		"footer length huge":  func(b []byte) { be.PutUint32(b[size-TrailerSize:], math.MaxUint32) },
		"entry count high":    func(b []byte) { be.PutUint32(b[footerOff:], 4) },
		"entry count huge":    func(b []byte) { be.PutUint32(b[footerOff:], math.MaxUint32) },
		"entry count low":     func(b []byte) { be.PutUint32(b[footerOff:], 2) },
		"first entry offset":  func(b []byte) { be.PutUint64(b[footerOff+4+enByteOffset:], 9) },
		"gap between entries": func(b []byte) { be.PutUint64(b[footerOff+4+EntrySize+enByteOffset:], 500) },
		"entry past footer": func(b []byte) {
			be.PutUint32(b[footerOff+4+2*EntrySize+enByteLength:], 10000)
		},
		"entry short of footer": func(b []byte) {
			l := be.Uint32(b[footerOff+4+2*EntrySize+enByteLength:])
			be.PutUint32(b[footerOff+4+2*EntrySize+enByteLength:], l-1)
		},
		"entry under batch header": func(b []byte) {
			be.PutUint32(b[footerOff+4+enByteLength:], 60)
		},
		"negative partition": func(b []byte) { be.PutUint32(b[footerOff+4+enPartition:], math.MaxUint32) },
		"zero records":       func(b []byte) { be.PutUint32(b[footerOff+4+enRecordCount:], 0) },
	}
	for name, edit := range cases {
		b := bytes.Clone(file)
		edit(b)
		resealFile(b)
		if _, err := ReadIndex(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ReadIndex = %v, want ErrCorrupt", name, err)
		}
	}
	// Resealing an unedited file changes nothing.
	b := bytes.Clone(file)
	resealFile(b)
	if !bytes.Equal(b, file) {
		t.Fatal("resealFile changed a valid file")
	}
}

// FileCRC is the CRC-32C of the whole finished file, empty or not, from a
// fresh buffer or a reused one holding other bytes.
func TestFileCRC(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	full, _, w := buildFile(t)
	if got, want := w.FileCRC(), crc32.Checksum(full, castagnoli); got != want {
		t.Errorf("120 batches: FileCRC %08x, want %08x", got, want)
	}
	empty := NewWriter(0)
	file := empty.Finish()
	if got, want := empty.FileCRC(), crc32.Checksum(file, castagnoli); got != want {
		t.Errorf("empty: FileCRC %08x, want %08x", got, want)
	}
	reused := bytes.Repeat([]byte{0xa5}, 1<<16)
	rw := NewWriterBuffer(reused)
	if _, err := rw.Append(7, 3, encode(t, makeRecords(5, 100, 1700000000000, "r"), kbatch.None)); err != nil {
		t.Fatal(err)
	}
	file = rw.Finish()
	if got, want := rw.FileCRC(), crc32.Checksum(file, castagnoli); got != want {
		t.Errorf("reused buffer: FileCRC %08x, want %08x", got, want)
	}
}

// ReadIndexPrefix takes a known prefix CRC: the right one passes, a wrong
// one fails as corruption, and an n outside the body is ignored.
func TestReadIndexPrefix(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	file, _, _ := buildFile(t)
	n := len(file) / 2
	right := crc32.Checksum(file[:n], castagnoli)
	for _, tc := range []struct {
		name   string
		crc    uint32
		n      int
		wantOK bool
	}{
		{"right", right, n, true},
		{"wrong", right ^ 1, n, false},
		{"none", 0, 0, true},
		{"past the body, ignored", 12345, len(file) - 1, true},
		{"negative, ignored", 12345, -3, true},
	} {
		_, err := ReadIndexPrefix(file, func(bodyEnd int) (uint32, int) { return tc.crc, tc.n })
		if (err == nil) != tc.wantOK || err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.wantOK)
		}
	}
}
