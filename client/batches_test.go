package client

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kbatch"
)

// stored builds what a batches-mode response carries: batches of n
// records each, back to back, base offsets set from 10.
func stored(t *testing.T, batches, n int, comp floev1.Compression) []byte {
	t.Helper()
	var out []byte
	base := int64(10)
	for i := range batches {
		recs := make([]*floev1.Record, n)
		for j := range recs {
			recs[j] = &floev1.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("v%d-%d", i, j)), TimestampMs: int64(1000 + j),
				Headers: []*floev1.Header{{Key: "h", Value: []byte{byte(j)}}}}
		}
		recs[n-1].NullValue, recs[n-1].Value = true, nil
		b, err := EncodeBatch(recs, comp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := kbatch.SetBaseOffset(b, base); err != nil {
			t.Fatal(err)
		}
		base += int64(n)
		out = append(out, b...)
	}
	return out
}

// TestWalkBatchesMatchesDecode: WalkBatches passes the records
// DecodeBatches returns (offsets from from on, timestamps, values, nulls),
// plain and compressed, and refuses a damaged buffer.
func TestWalkBatchesMatchesDecode(t *testing.T) {
	for _, comp := range []floev1.Compression{floev1.Compression_COMPRESSION_NONE, floev1.Compression_COMPRESSION_ZSTD} {
		b := stored(t, 3, 4, comp)
		for _, from := range []int64{0, 10, 13, 15, 21, 22} {
			want, err := DecodeBatches(b, 7, from, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []*floev1.Record
			n, err := WalkBatches(b, from, 0, func(r *kbatch.Record) error {
				got = append(got, &floev1.Record{Offset: r.Offset, TimestampMs: r.Timestamp, Value: bytes.Clone(r.Value), NullValue: r.Value == nil})
				return nil
			})
			if err != nil || n != len(want) || len(got) != len(want) {
				t.Fatalf("%v from %d: %d records, %v; want %d", comp, from, n, err, len(want))
			}
			for i := range want {
				w, g := want[i], got[i]
				if g.Offset != w.Offset || g.TimestampMs != w.TimestampMs || !bytes.Equal(g.Value, w.Value) || g.NullValue != w.NullValue {
					t.Fatalf("%v from %d record %d: got %+v, want %+v", comp, from, i, g, w)
				}
			}
		}
		bad := bytes.Clone(b)
		bad[len(bad)-2] ^= 0xff
		if _, err := WalkBatches(bad, 0, 0, func(*kbatch.Record) error { return nil }); !errors.Is(err, kbatch.ErrCorrupt) {
			t.Fatalf("%v damaged: %v, want ErrCorrupt", comp, err)
		}
	}
}
