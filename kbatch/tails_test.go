package kbatch

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestAppendBatchOfTails: a batch built of tails is byte for byte
// EncodeAt's of the same records (gaps, nulls, empties, headers,
// timestamps out of order), appended after what dst held.
func TestAppendBatchOfTails(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	bytesOf := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	for round := range 200 {
		n := 1 + rng.IntN(20)
		recs := make([]Record, n)
		off := int64(rng.IntN(1 << 40))
		for i := range recs {
			r := Record{Offset: off, Timestamp: 1_700_000_000_000 + int64(rng.IntN(100000)) - 50000, Key: bytesOf(), Value: bytesOf()}
			for range rng.IntN(3) {
				r.Headers = append(r.Headers, Header{Key: string(bytesOf()), Value: bytesOf()})
			}
			recs[i] = r
			off += 1 + int64(rng.IntN(1000))
		}
		want, err := EncodeAt(recs, DefaultEncodeOptions())
		if err != nil {
			t.Fatal(err)
		}
		tails := make([]TailRecord, n)
		for i, r := range recs {
			tail := AppendTail(nil, r.Key, r.Value, len(r.Headers), func(j int) (string, []byte) { return r.Headers[j].Key, r.Headers[j].Value })
			tails[i] = TailRecord{Offset: r.Offset, Timestamp: r.Timestamp, Tail: tail}
		}
		prefix := []byte("before")
		got, err := AppendBatchOfTails(append([]byte{}, prefix...), tails)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("round %d: the batch of tails differs from EncodeAt's:\n%x\n%x", round, got[len(prefix):], want)
		}
		size := HeaderSize
		for i := range tails {
			size += tails[i].RecordLen(recs[0].Offset, min(tails[0].Timestamp, minTS(recs)))
		}
		if size != len(want) {
			t.Fatalf("round %d: RecordLen sums to %d, the batch is %d bytes", round, size, len(want))
		}
	}
	if _, err := AppendBatchOfTails(nil, nil); err == nil {
		t.Fatal("no records: no error")
	}
	if _, err := AppendBatchOfTails(nil, []TailRecord{{Offset: 5}, {Offset: 5}}); err == nil {
		t.Fatal("an offset twice: no error")
	}
}

func minTS(recs []Record) int64 {
	m := recs[0].Timestamp
	for _, r := range recs {
		m = min(m, r.Timestamp)
	}
	return m
}
