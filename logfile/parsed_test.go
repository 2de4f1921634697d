package logfile

import (
	"bytes"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

// AppendParsed writes the same file as Append, and trusts the caller's
// check: it does not compute the batch's CRC again.
func TestAppendParsed(t *testing.T) {
	a, b := NewWriter(0), NewWriter(0)
	for i, c := range allCodecs {
		batch := encode(t, makeRecords(3+i, 50, int64(100*i), "p"), c)
		info, err := kbatch.ParseInfo(batch)
		if err != nil {
			t.Fatal(err)
		}
		ea, err := a.Append(7, int32(i), batch)
		if err != nil {
			t.Fatal(err)
		}
		eb, err := b.AppendParsed(7, int32(i), batch, info)
		if err != nil {
			t.Fatal(err)
		}
		if ea != eb {
			t.Fatalf("codec %v: entry %+v, Append gave %+v", c, eb, ea)
		}
	}
	if fa, fb := a.Finish(), b.Finish(); !bytes.Equal(fa, fb) {
		t.Fatal("AppendParsed and Append wrote different files")
	}

	good := encode(t, makeRecords(2, 10, 1, "x"), kbatch.None)
	info, err := kbatch.ParseInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(0)
	damaged := bytes.Clone(good)
	damaged[len(damaged)-1] ^= 1 // after the check: the caller's word is taken
	if _, err := w.AppendParsed(1, 0, damaged, info); err != nil {
		t.Fatalf("AppendParsed re-checked the batch: %v", err)
	}
	if _, err := w.AppendParsed(1, 0, append(bytes.Clone(good), 0), info); err == nil {
		t.Error("AppendParsed with a length that does not match the info succeeded")
	}
	if _, err := w.AppendParsed(1, 0, good[:10], info); err == nil {
		t.Error("AppendParsed of 10 bytes succeeded")
	}
	if _, err := w.AppendParsed(1, -1, good, info); err == nil {
		t.Error("AppendParsed to partition -1 succeeded")
	}
	w.Finish()
	if _, err := w.AppendParsed(1, 0, good, info); err == nil {
		t.Error("AppendParsed after Finish succeeded")
	}
}
