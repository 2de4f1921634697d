package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// compactedSample encodes five records with codec c and keeps those at
// offset deltas 1 and 3, as a compacted topic stores them.
func compactedSample(t testing.TB, c Compression) (orig, filtered []byte) {
	recs := make([]Record, 5)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(1000 + i), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	opts := DefaultEncodeOptions()
	opts.Compression = c
	orig, err := Encode(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetBaseOffset(orig, 100); err != nil {
		t.Fatal(err)
	}
	filtered, kept, err := Filter(orig, 0, func(r Record) bool { return (r.Offset-100)%2 == 1 })
	if err != nil || kept != 2 {
		t.Fatalf("filter: kept %d, %v", kept, err)
	}
	return orig, filtered
}

// A filtered batch keeps its header (base offset, last offset delta,
// timestamps) and its records' offsets; only the stored-batch decoder
// accepts it, the produce-side decoder still refuses it.
func TestFilterKeepsOffsets(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			orig, b := compactedSample(t, c)
			info, recs, err := DecodeStored(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			oi, _ := ParseInfo(orig)
			if info.BaseOffset != 100 || info.LastOffsetDelta != 4 || info.RecordCount != 2 ||
				info.FirstTimestamp != oi.FirstTimestamp || info.MaxTimestamp != oi.MaxTimestamp || info.Compression != c {
				t.Fatalf("header %+v, original %+v", info, oi)
			}
			if len(recs) != 2 || recs[0].Offset != 101 || recs[1].Offset != 103 ||
				string(recs[0].Value) != "v1" || string(recs[1].Value) != "v3" || recs[1].Timestamp != 1003 {
				t.Fatalf("records %+v", recs)
			}
			if _, _, err := Decode(b, 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("strict Decode of a compacted batch: %v, want ErrCorrupt", err)
			}
			if err := Split(b, func([]byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("strict Split of a compacted batch: %v, want ErrCorrupt", err)
			}
			n := 0
			if err := SplitStored(append(bytes.Clone(b), orig...), func([]byte) error { n++; return nil }); err != nil || n != 2 {
				t.Fatalf("SplitStored: %d batches, %v", n, err)
			}
			// Filtering again: all kept returns the same bytes, none nil.
			same, kept, err := Filter(b, 0, func(Record) bool { return true })
			if err != nil || kept != 2 || !bytes.Equal(same, b) {
				t.Fatalf("keep all: kept %d, equal %v, %v", kept, bytes.Equal(same, b), err)
			}
			none, kept, err := Filter(b, 0, func(Record) bool { return false })
			if err != nil || kept != 0 || none != nil {
				t.Fatalf("keep none: %d, %v, %v", kept, none, err)
			}
			last, kept, err := Filter(b, 0, func(r Record) bool { return r.Offset == 103 })
			if err != nil || kept != 1 {
				t.Fatal(kept, err)
			}
			if _, recs, err := DecodeStored(last, 0); err != nil || len(recs) != 1 || recs[0].Offset != 103 {
				t.Fatalf("filtered twice: %+v, %v", recs, err)
			}
		})
	}
}

// The stored-batch decoder still refuses what no compaction produces:
// more records than offsets, deltas past LastOffsetDelta or not
// increasing.
func TestDecodeStoredRejects(t *testing.T) {
	_, b := compactedSample(t, None)
	be := binary.BigEndian
	cases := map[string]func(b []byte){
		"count over offsets": func(b []byte) { be.PutUint32(b[offRecordCount:], 6) },
		"delta past last":    func(b []byte) { be.PutUint32(b[offLastOffsetDelta:], 2) },
		"zero records":       func(b []byte) { be.PutUint32(b[offRecordCount:], 0) },
		"negative last":      func(b []byte) { be.PutUint32(b[offLastOffsetDelta:], 0xffffffff) },
	}
	for name, damage := range cases {
		d := bytes.Clone(b)
		damage(d)
		reseal(d)
		if _, _, err := DecodeStored(d, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// Records out of order: swap the two kept records.
	info, _ := ParseStored(b)
	data := b[HeaderSize:info.BatchLength]
	n, k := binary.Varint(data)
	first := data[:k+int(n)]
	swapped := append(append(append([]byte(nil), b[:HeaderSize]...), data[len(first):]...), first...)
	reseal(swapped)
	if _, _, err := DecodeStored(swapped, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decreasing deltas: %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeStored feeds arbitrary bytes (CRC fixed on demand) to the
// stored-batch decoder and to Filter: neither may panic, whatever they
// accept has increasing offsets within the batch, and anything the strict
// decoder accepts the lenient one accepts identically.
func FuzzDecodeStored(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, c := range allCodecs {
		_, b := compactedSample(f, c)
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC && len(data) >= HeaderSize {
			data = bytes.Clone(data)
			binary.BigEndian.PutUint32(data[offBatchLength:], uint32(len(data)-lengthPrefix))
			reseal(data)
		}
		info, recs, err := DecodeStored(data, fuzzLimit)
		sinfo, srecs, serr := Decode(data, fuzzLimit)
		if serr == nil && (err != nil || info != sinfo || len(recs) != len(srecs)) {
			t.Fatalf("strict Decode accepts what DecodeStored does not: %v", err)
		}
		out, kept, ferr := Filter(data, fuzzLimit, func(r Record) bool { return r.Offset%2 == 0 })
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("DecodeStored error %v wraps neither ErrCorrupt nor ErrTooLarge", err)
			}
			return
		}
		if len(recs) != int(info.RecordCount) {
			t.Fatalf("%d records, header says %d", len(recs), info.RecordCount)
		}
		for i, r := range recs {
			if r.Offset < info.BaseOffset || r.Offset > info.BaseOffset+int64(info.LastOffsetDelta) ||
				(i > 0 && r.Offset <= recs[i-1].Offset) {
				t.Fatalf("record %d at offset %d (base %d, last delta %d)", i, r.Offset, info.BaseOffset, info.LastOffsetDelta)
			}
		}
		if ferr != nil {
			t.Fatalf("Filter refuses what DecodeStored accepts: %v", ferr)
		}
		if out == nil {
			return
		}
		_, frecs, err := DecodeStored(out, fuzzLimit*2)
		if err != nil || len(frecs) != kept {
			t.Fatalf("filtered batch: %d records (kept %d), %v", len(frecs), kept, err)
		}
	})
}
