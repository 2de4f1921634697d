package kbatch

import (
	"errors"
	"fmt"
	"math"
)

// EncodeAt builds one uncompressed v2 record batch of records at their
// own offsets: the base offset is records[0].Offset and each record's
// offset delta is its Offset minus that, so that offsets may leave gaps
// (as keyed compaction leaves them; DecodeStored reads such a batch).
// Offsets must be strictly increasing and span at most MaxInt32. Each
// record's bytes (attributes, deltas, key, value, headers) are what
// Encode writes for a record at the same deltas. Producer fields are
// opts' (the compression is ignored: none).
func EncodeAt(records []Record, opts EncodeOptions) ([]byte, error) {
	if len(records) == 0 {
		return nil, errors.New("kbatch: encode: no records")
	}
	base := records[0].Offset
	first, maxTS := records[0].Timestamp, records[0].Timestamp
	for i := range records {
		if i > 0 && records[i].Offset <= records[i-1].Offset {
			return nil, fmt.Errorf("kbatch: encode: offset %d after %d: not increasing", records[i].Offset, records[i-1].Offset)
		}
		first = min(first, records[i].Timestamp)
		maxTS = max(maxTS, records[i].Timestamp)
	}
	span := records[len(records)-1].Offset - base
	if base < 0 || span > math.MaxInt32 {
		return nil, fmt.Errorf("kbatch: encode: offsets %d to %d do not fit one batch", base, records[len(records)-1].Offset)
	}
	if maxTS-first < 0 {
		return nil, fmt.Errorf("kbatch: encode: timestamps %d and %d too far apart", first, maxTS)
	}
	size := 0
	for i := range records {
		r := &records[i]
		n := recordBodyLen(r, r.Timestamp-first, int(r.Offset-base))
		if err := checkRecordLen(n, i); err != nil {
			return nil, err
		}
		size += varintLen(int64(n)) + n
	}
	if size > math.MaxInt32-(HeaderSize-lengthPrefix) {
		return nil, fmt.Errorf("kbatch: encode: %d bytes of records, over the 2 GiB batch limit", size)
	}
	b := make([]byte, HeaderSize, HeaderSize+size)
	for i := range records {
		r := &records[i]
		delta, od := r.Timestamp-first, int(r.Offset-base)
		b = appendRecord(b, r, delta, od, recordBodyLen(r, delta, od))
	}
	opts.Compression = None
	writeHeader(b, opts, int32(span), first, maxTS, len(records))
	if err := SetBaseOffset(b, base); err != nil {
		return nil, err
	}
	return b, nil
}
