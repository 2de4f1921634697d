package kbatch

import (
	"encoding/binary"
	"fmt"
	"math"
)

// minRecordSize is the smallest encoded record: a one-byte length, the
// attributes byte, one-byte timestamp and offset deltas, a null key, a null
// value and zero headers.
const minRecordSize = 7

// minHeaderSize is the smallest encoded header: an empty key and a null
// value.
const minHeaderSize = 2

// HeaderOverhead is what each header adds to a record's size beyond its
// key and value, wherever a record is held to a record limit (produce
// validation, Limits.MaxRecordBytes, and decoding on read): the most its
// two length varints take in a batch (5 bytes each). A record of millions
// of empty headers takes two bytes per header on the wire but tens in
// memory once decoded; counting them keeps such a record within the limit.
const HeaderOverhead = 10

// recordTooLarge is the error for record index of size bytes (key, value,
// headers and HeaderOverhead per header) over limit.
func recordTooLarge(index, size, limit int) error {
	return fmt.Errorf("%w: record %d is %d bytes (key, value and headers, %d per header), over the limit of %d",
		ErrRecordTooLarge, index, size, HeaderOverhead, limit)
}

// varintLen returns the encoded size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesLen returns the encoded size of a nullable byte field.
func bytesLen(b []byte) int {
	if b == nil {
		return varintLen(-1)
	}
	return varintLen(int64(len(b))) + len(b)
}

// recordBodyLen returns the size of r's encoding after its length prefix.
func recordBodyLen(r *Record, tsDelta int64, offsetDelta int) int {
	n := 1 + varintLen(tsDelta) + varintLen(int64(offsetDelta)) + bytesLen(r.Key) + bytesLen(r.Value)
	n += varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// checkRecordLen fails when a record body does not fit Kafka's int32 length.
func checkRecordLen(n, index int) error {
	if n > math.MaxInt32 {
		return fmt.Errorf("kbatch: encode: record %d is %d bytes, over the 2 GiB limit", index, n)
	}
	return nil
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

// appendRecord appends r's encoding, whose body is bodyLen bytes long.
func appendRecord(dst []byte, r *Record, tsDelta int64, offsetDelta, bodyLen int) []byte {
	dst = binary.AppendVarint(dst, int64(bodyLen))
	dst = append(dst, 0) // record attributes: unused
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

// reader consumes a record's fields, remembering the first failure.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	r.b = nil
}

func (r *reader) varlong(what string) int64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // one-byte fast path
		u := uint64(r.b[0])
		r.b = r.b[1:]
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint(what string) int32 {
	v := r.varlong(what)
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("%s %d out of int32 range", what, v)
		return 0
	}
	return int32(v)
}

// bytes returns a byte field, nil for a null one if nullable, as a capped
// subslice of r.b.
func (r *reader) bytes(what string, nullable bool) []byte {
	v, k := binary.Varint(r.b)
	if k <= 0 || v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("bad %s length", what)
		return nil
	}
	r.b = r.b[k:]
	n := int32(v)
	if n == -1 && nullable {
		return nil
	}
	if n < 0 || int(n) > len(r.b) {
		r.fail("%s length %d with %d bytes left", what, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// decodeRecords parses count records from data (uncompressed, owned by the
// caller's result) and returns them with absolute offsets and timestamps.
//
// lenient accepts a compacted batch's offset deltas: strictly increasing
// and at most LastOffsetDelta, rather than 0, 1, 2...
//
// maxRecord > 0 bounds each record's size as Limits.MaxRecordBytes counts
// it (checked before its headers are built): past it decodeRecords fails
// with ErrRecordTooLarge.
func decodeRecords(data []byte, info *Info, lenient bool, maxRecord int) ([]Record, error) {
	count := int(info.RecordCount)
	if count > len(data)/minRecordSize {
		return nil, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, count, len(data))
	}
	recs := make([]Record, count)
	logAppend := info.Attributes&attrLogAppendTime != 0
	rd := reader{b: data}
	prev := int32(-1)
	for i := range recs {
		n := rd.varint("record length")
		if rd.err != nil {
			return nil, fmt.Errorf("record %d: %w", i, rd.err)
		}
		if n < 0 || int(n) > len(rd.b) {
			return nil, fmt.Errorf("%w: record %d length %d with %d bytes left", ErrCorrupt, i, n, len(rd.b))
		}
		body := reader{b: rd.b[:n]}
		rd.b = rd.b[n:]
		if err := parseRecord(&body, &recs[i], i, info, logAppend, lenient, &prev, maxRecord); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(rd.b))
	}
	return recs, nil
}

// parseRecord parses record index of the batch. prev is the previous
// record's offset delta (-1 before the first), updated. maxRecord > 0
// bounds the record's size (key, value, headers, HeaderOverhead each).
func parseRecord(rd *reader, r *Record, index int, info *Info, logAppend, lenient bool, prev *int32, maxRecord int) error {
	if len(rd.b) < 1 {
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	rd.b = rd.b[1:] // record attributes: unused
	tsDelta := rd.varlong("timestamp delta")
	offDelta := rd.varint("offset delta")
	if lenient {
		if rd.err == nil && (offDelta <= *prev || offDelta > info.LastOffsetDelta) {
			return fmt.Errorf("%w: offset delta %d after %d, last offset delta %d (not increasing or out of the batch)",
				ErrCorrupt, offDelta, *prev, info.LastOffsetDelta)
		}
		*prev = offDelta
	} else if rd.err == nil && int(offDelta) != index {
		return fmt.Errorf("%w: offset delta %d, want %d (batch not dense)", ErrCorrupt, offDelta, index)
	}
	r.Key = rd.bytes("key", true)
	r.Value = rd.bytes("value", true)
	hc := rd.varint("header count")
	if rd.err != nil {
		return rd.err
	}
	if hc < 0 || int(hc) > len(rd.b)/minHeaderSize {
		return fmt.Errorf("%w: header count %d with %d bytes left", ErrCorrupt, hc, len(rd.b))
	}
	size := len(r.Key) + len(r.Value) + HeaderOverhead*int(hc)
	if maxRecord > 0 && size > maxRecord {
		return recordTooLarge(index, size, maxRecord) // before building its headers
	}
	if hc > 0 {
		r.Headers = make([]Header, hc)
		for j := range r.Headers {
			k := rd.bytes("header key", false)
			v := rd.bytes("header value", true)
			if rd.err != nil {
				return fmt.Errorf("header %d: %w", j, rd.err)
			}
			r.Headers[j] = Header{Key: string(k), Value: v}
			size += len(k) + len(v)
		}
	}
	if maxRecord > 0 && size > maxRecord {
		return recordTooLarge(index, size, maxRecord)
	}
	if len(rd.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the record's fields", ErrCorrupt, len(rd.b))
	}
	r.Offset = info.BaseOffset + int64(offDelta)
	if logAppend {
		r.Timestamp = info.MaxTimestamp
	} else {
		r.Timestamp = info.FirstTimestamp + tsDelta
	}
	return nil
}
