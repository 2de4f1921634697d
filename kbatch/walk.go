package kbatch

import (
	"errors"
	"fmt"
)

// WalkStored checks the stored batch at the start of b exactly as
// DecodeStored does (header, CRC, every record's fields) and calls fn with
// each record in order instead of returning them. The record fn sees
// aliases b (or, for a compressed batch, its decompressed records): its
// key, value and headers must not be modified or kept after the call, and
// the Record itself is reused. An uncompressed batch is walked without
// copying its records; only headers allocate. fn's error stops the walk
// and is returned as is. A batch failing a check after its first records
// (the CRC held: a writer's bug) fails the walk after fn saw those records.
// It returns the batch's header and never panics.
func WalkStored(b []byte, maxDecompressed int, fn func(r *Record) error) (Info, error) {
	info, err := parseInfo(b, true)
	if err != nil {
		return Info{}, err
	}
	if maxDecompressed <= 0 {
		maxDecompressed = DefaultMaxDecompressed
	}
	data := b[HeaderSize:info.BatchLength]
	if info.Compression != None {
		data, err = decompress(info.Compression, data, maxDecompressed)
		if errors.Is(err, errTooLarge) {
			return Info{}, fmt.Errorf("%w: over %d bytes (%s)", ErrTooLarge, maxDecompressed, info.Compression)
		}
		if err != nil {
			return Info{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	count := int(info.RecordCount)
	if count > len(data)/minRecordSize {
		return Info{}, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, count, len(data))
	}
	logAppend := info.Attributes&attrLogAppendTime != 0
	rd := reader{b: data}
	prev := int32(-1)
	var r Record
	for i := 0; i < count; i++ {
		n := rd.varint("record length")
		if rd.err != nil {
			return Info{}, fmt.Errorf("record %d: %w", i, rd.err)
		}
		if n < 0 || int(n) > len(rd.b) {
			return Info{}, fmt.Errorf("%w: record %d length %d with %d bytes left", ErrCorrupt, i, n, len(rd.b))
		}
		body := reader{b: rd.b[:n]}
		rd.b = rd.b[n:]
		r = Record{}
		if err := parseRecord(&body, &r, i, &info, logAppend, true, &prev, 0); err != nil {
			return Info{}, fmt.Errorf("record %d: %w", i, err)
		}
		if err := fn(&r); err != nil {
			return Info{}, err
		}
	}
	if len(rd.b) != 0 {
		return Info{}, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(rd.b))
	}
	return info, nil
}

// ParseStoredVerified is ParseStored without the CRC, for bytes whose
// integrity a stronger check already covers (a whole log file whose body
// CRC-32C held when it was read). Every other check is made.
func ParseStoredVerified(b []byte) (Info, error) { return parseHeader(b, true, false) }
