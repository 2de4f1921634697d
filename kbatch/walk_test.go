package kbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// walkAll collects what WalkStored passes to fn (copied).
func walkAll(b []byte, limit int) (Info, []Record, error) {
	var recs []Record
	info, err := WalkStored(b, limit, func(r *Record) error {
		c := *r
		c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
		if r.Key == nil {
			c.Key = nil
		}
		if r.Value == nil {
			c.Value = nil
		}
		recs = append(recs, c)
		return nil
	})
	return info, recs, err
}

// FuzzWalkStored: WalkStored accepts exactly what DecodeStored accepts and
// sees the same records, and never panics.
func FuzzWalkStored(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC && len(data) >= HeaderSize {
			data = bytes.Clone(data)
			binary.BigEndian.PutUint32(data[offBatchLength:], uint32(len(data)-lengthPrefix))
			reseal(data)
		}
		dinfo, drecs, derr := DecodeStored(data, fuzzLimit)
		winfo, wrecs, werr := walkAll(data, fuzzLimit)
		if (derr == nil) != (werr == nil) {
			t.Fatalf("DecodeStored error %v, WalkStored error %v", derr, werr)
		}
		if derr != nil {
			return
		}
		if dinfo != winfo || len(drecs) != len(wrecs) {
			t.Fatalf("header or count differ: %+v %d, %+v %d", dinfo, len(drecs), winfo, len(wrecs))
		}
		for i := range drecs {
			if !reflect.DeepEqual(drecs[i], wrecs[i]) {
				t.Fatalf("record %d: DecodeStored %+v, WalkStored %+v", i, drecs[i], wrecs[i])
			}
		}
	})
}

// TestWalkStoredStops: fn's error is returned as is and stops the walk;
// a damaged batch is refused before fn sees anything.
func TestWalkStoredStops(t *testing.T) {
	b, err := Encode(manyRecords(5, 10, 1), DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	if _, err := WalkStored(b, 0, func(*Record) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("WalkStored: err %v after %d records, want the fn's error after 1", err, n)
	}
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 1
	n = 0
	if _, err := WalkStored(bad, 0, func(*Record) error { n++; return nil }); !errors.Is(err, ErrCorrupt) || n != 0 {
		t.Fatalf("damaged batch: err %v after %d records, want ErrCorrupt before any", err, n)
	}
}

// TestParseStoredVerified: the header ParseStored returns, without the
// CRC check (a damaged record passes), and the other checks still made.
func TestParseStoredVerified(t *testing.T) {
	b, err := Encode(manyRecords(5, 10, 1), DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseStored(b)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 1
	if _, err := ParseStored(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ParseStored of a damaged batch: %v", err)
	}
	if got, err := ParseStoredVerified(bad); err != nil || got != want {
		t.Fatalf("ParseStoredVerified: %+v, %v; want %+v", got, err, want)
	}
	if _, err := ParseStoredVerified(b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ParseStoredVerified of a truncated batch: %v, want ErrCorrupt", err)
	}
}
