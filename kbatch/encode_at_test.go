package kbatch

import (
	"bytes"
	"reflect"
	"testing"
)

func TestEncodeAt(t *testing.T) {
	recs := []Record{
		{Offset: 100, Timestamp: 1000, Key: []byte("k"), Value: []byte("v0"), Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
		{Offset: 101, Timestamp: 999, Value: []byte{}},
		{Offset: 102, Timestamp: 1005, Key: []byte{}, Value: nil},
	}
	// Dense offsets: the same bytes as Encode at the same base offset.
	got, err := EncodeAt(recs, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	want, err := Encode(recs, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := SetBaseOffset(want, 100); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeAt of dense offsets differs from Encode:\n%x\n%x", got, want)
	}
	// Gaps: the offsets come back, the batch spans them.
	gapped := []Record{recs[0], recs[2], {Offset: 110, Timestamp: 1010, Value: []byte("last")}}
	gapped[1].Offset = 105
	b, err := EncodeAt(gapped, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	info, out, err := DecodeStored(b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != 100 || info.LastOffsetDelta != 10 || info.RecordCount != 3 || info.FirstTimestamp != 1000 || info.MaxTimestamp != 1010 {
		t.Fatalf("header %+v", info)
	}
	for i := range out {
		if out[i].Offset != gapped[i].Offset || out[i].Timestamp != gapped[i].Timestamp || !reflect.DeepEqual(out[i].Key, gapped[i].Key) ||
			!reflect.DeepEqual(out[i].Value, gapped[i].Value) || len(out[i].Headers) != len(gapped[i].Headers) {
			t.Errorf("record %d: %+v, want %+v", i, out[i], gapped[i])
		}
	}
	if _, err := EncodeAt([]Record{{Offset: 5}, {Offset: 5}}, DefaultEncodeOptions()); err == nil {
		t.Error("repeated offset accepted")
	}
	if _, err := EncodeAt(nil, DefaultEncodeOptions()); err == nil {
		t.Error("no records accepted")
	}
}
