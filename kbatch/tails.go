package kbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A record's tail is the part of its encoding that does not depend on
// the batch it is in: key, value, header count and headers. A reader
// that rebuilds batches from stored rows (tableread) encodes each row's
// tail once, into one buffer, and builds batches of tails with
// AppendBatchOfTails: no Record, no copy of a key or value per record.

// AppendTail appends the tail of a record of key, value (nil: null) and
// headers, headers(j) being header j of n: what Encode writes after the
// record's offset delta.
func AppendTail(dst, key, value []byte, n int, headers func(j int) (string, []byte)) []byte {
	dst = appendBytes(dst, key)
	dst = appendBytes(dst, value)
	dst = binary.AppendVarint(dst, int64(n))
	for j := range n {
		k, v := headers(j)
		dst = binary.AppendVarint(dst, int64(len(k)))
		dst = append(dst, k...)
		dst = appendBytes(dst, v)
	}
	return dst
}

// TailRecord is a record as its offset, its timestamp (unix ms) and its
// tail (AppendTail).
type TailRecord struct {
	Offset    int64
	Timestamp int64
	Tail      []byte
}

// RecordLen is the bytes r takes in a batch whose first offset and
// timestamp are base and first.
func (r *TailRecord) RecordLen(base, first int64) int {
	n := r.bodyLen(base, first)
	return varintLen(int64(n)) + n
}

func (r *TailRecord) bodyLen(base, first int64) int {
	return 1 + varintLen(r.Timestamp-first) + varintLen(r.Offset-base) + len(r.Tail)
}

// AppendBatchOfTails appends to dst one uncompressed v2 record batch of
// records, byte for byte what EncodeAt(records as Records,
// DefaultEncodeOptions()) returns: the base offset is records[0].Offset,
// offsets strictly increasing within MaxInt32 of it.
func AppendBatchOfTails(dst []byte, records []TailRecord) ([]byte, error) {
	if len(records) == 0 {
		return nil, errors.New("kbatch: encode: no records")
	}
	base, last := records[0].Offset, records[len(records)-1].Offset
	first, maxTS := records[0].Timestamp, records[0].Timestamp
	for i := range records {
		if i > 0 && records[i].Offset <= records[i-1].Offset {
			return nil, fmt.Errorf("kbatch: encode: offset %d after %d: not increasing", records[i].Offset, records[i-1].Offset)
		}
		first, maxTS = min(first, records[i].Timestamp), max(maxTS, records[i].Timestamp)
	}
	if base < 0 || last-base > math.MaxInt32 {
		return nil, fmt.Errorf("kbatch: encode: offsets %d to %d do not fit one batch", base, last)
	}
	if maxTS-first < 0 {
		return nil, fmt.Errorf("kbatch: encode: timestamps %d and %d too far apart", first, maxTS)
	}
	size := 0
	for i := range records {
		n := records[i].bodyLen(base, first)
		if err := checkRecordLen(n, i); err != nil {
			return nil, err
		}
		size += varintLen(int64(n)) + n
	}
	if size > math.MaxInt32-(HeaderSize-lengthPrefix) {
		return nil, fmt.Errorf("kbatch: encode: %d bytes of records, over the 2 GiB batch limit", size)
	}
	start := len(dst)
	if cap(dst)-start < HeaderSize+size {
		dst = append(make([]byte, 0, start+HeaderSize+size), dst...)
	}
	dst = dst[:start+HeaderSize]
	for i := range records {
		r := &records[i]
		dst = binary.AppendVarint(dst, int64(r.bodyLen(base, first)))
		dst = append(dst, 0) // record attributes: unused
		dst = binary.AppendVarint(dst, r.Timestamp-first)
		dst = binary.AppendVarint(dst, r.Offset-base)
		dst = append(dst, r.Tail...)
	}
	b := dst[start:]
	writeHeader(b, DefaultEncodeOptions(), int32(last-base), first, maxTS, len(records))
	if err := SetBaseOffset(b, base); err != nil {
		return nil, err
	}
	return dst, nil
}
