package logfile

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

// FuzzReadIndex feeds arbitrary bytes to ReadIndex, with reseal first
// recomputing the checksums so that mutations reach the checks behind
// them. It must never panic; what it accepts must be consistent.
func FuzzReadIndex(f *testing.F) {
	golden, err := os.ReadFile(goldenPath)
	if err != nil {
		f.Fatal(err)
	}
	empty := NewWriter(0).Finish()
	for _, seed := range [][]byte{golden, golden[:len(golden)-1], golden[1:], golden[:len(golden)/2],
		golden[len(golden)-TrailerSize:], empty, empty[:len(empty)-1]} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, reseal bool) {
		if reseal {
			data = bytes.Clone(data)
			resealFile(data)
		}
		entries, err := ReadIndex(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(entries) > len(data)/kbatch.HeaderSize {
			t.Fatalf("%d entries in %d bytes", len(entries), len(data))
		}
		next := int64(HeaderSize)
		for i, e := range entries {
			if e.ByteOffset != next {
				t.Fatalf("entry %d at %d, want %d", i, e.ByteOffset, next)
			}
			next += e.ByteLength
			b, err := Batch(data, e)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Batch %d: %v", i, err)
			}
			if err == nil {
				_, _, _ = kbatch.Decode(b, 1<<20) // must not panic either
			}
		}
		if footerOff := int64(len(data)) - TrailerSize - footerCountSize - int64(len(entries))*EntrySize; next != footerOff {
			t.Fatalf("entries end at %d, footer at %d", next, footerOff)
		}
	})
}
