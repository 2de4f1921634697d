package kbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Stored batches. A batch of a compacted topic lost some records the way
// Kafka's log cleaner removes them: it keeps its base offset, its
// LastOffsetDelta and its header fields, and its remaining records keep
// their original offset deltas, so there are gaps and RecordCount may be
// below LastOffsetDelta+1. Produced batches never look like that
// (ParseInfo, Decode and Split refuse them); the readers of stored batches
// use the variants below, which accept them.

// ParseStored is ParseInfo for a stored batch: RecordCount may be below
// LastOffsetDelta+1 (at least 1, at most LastOffsetDelta+1).
func ParseStored(b []byte) (Info, error) { return parseInfo(b, true) }

// DecodeStored is Decode for a stored batch: the records' offset deltas
// must be strictly increasing and at most LastOffsetDelta, not dense.
func DecodeStored(b []byte, maxDecompressed int) (Info, []Record, error) {
	return decode(b, maxDecompressed, true, 0)
}

// DecodeStoredLimits is DecodeStored within lim: lim.MaxDecompressed as
// DecodeStored's maxDecompressed, and lim.MaxRecordBytes (when > 0)
// bounding each record's size (key, value, headers and HeaderOverhead per
// header), checked before its headers are built: past it the decode fails
// with ErrRecordTooLarge. A reader so bounds what one record of a stored
// batch makes it allocate. lim.MaxBatchBytes is not used.
func DecodeStoredLimits(b []byte, lim Limits) (Info, []Record, error) {
	return decode(b, lim.MaxDecompressed, true, lim.MaxRecordBytes)
}

// SplitStored is Split for stored batches (ParseStored validates each).
func SplitStored(b []byte, fn func(batch []byte) error) error { return split(b, fn, true) }

// Filter returns the stored batch b with only the records keep accepts,
// as Kafka's cleaner writes it: same header fields (base offset,
// LastOffsetDelta, timestamps, producer), records with their original
// offset and timestamp deltas, recompressed with the same codec, count,
// length and CRC updated. It returns b itself when every record is kept
// and nil when none is. keep sees each record as DecodeStored returns it.
func Filter(b []byte, maxDecompressed int, keep func(Record) bool) (out []byte, kept int, err error) {
	info, err := parseInfo(b, true)
	if err != nil {
		return nil, 0, err
	}
	if maxDecompressed <= 0 {
		maxDecompressed = DefaultMaxDecompressed
	}
	payload := b[HeaderSize:info.BatchLength]
	data := payload
	if info.Compression != None {
		data, err = decompress(info.Compression, payload, maxDecompressed)
		if errors.Is(err, errTooLarge) {
			return nil, 0, fmt.Errorf("%w: over %d bytes (%s)", ErrTooLarge, maxDecompressed, info.Compression)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	count := int(info.RecordCount)
	if count > len(data)/minRecordSize {
		return nil, 0, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, count, len(data))
	}
	logAppend := info.Attributes&attrLogAppendTime != 0
	var raw []byte // the kept records' encodings, back to back
	rd := reader{b: data}
	prev := int32(-1)
	for i := 0; i < count; i++ {
		start := len(data) - len(rd.b)
		n := rd.varint("record length")
		if rd.err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", i, rd.err)
		}
		if n < 0 || int(n) > len(rd.b) {
			return nil, 0, fmt.Errorf("%w: record %d length %d with %d bytes left", ErrCorrupt, i, n, len(rd.b))
		}
		body := reader{b: rd.b[:n]}
		rd.b = rd.b[n:]
		var r Record
		if err := parseRecord(&body, &r, i, &info, logAppend, true, &prev, 0); err != nil {
			return nil, 0, fmt.Errorf("record %d: %w", i, err)
		}
		if keep(r) {
			raw = append(raw, data[start:len(data)-len(rd.b)]...)
			kept++
		}
	}
	if len(rd.b) != 0 {
		return nil, 0, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(rd.b))
	}
	switch kept {
	case count:
		return b[:info.BatchLength:info.BatchLength], kept, nil
	case 0:
		return nil, 0, nil
	}
	out = make([]byte, HeaderSize, HeaderSize+len(raw))
	copy(out, b[:HeaderSize])
	if info.Compression == None {
		out = append(out, raw...)
	} else if out, err = compress(out, info.Compression, raw); err != nil {
		return nil, 0, err
	}
	be := binary.BigEndian
	be.PutUint32(out[offBatchLength:], uint32(len(out)-lengthPrefix))
	be.PutUint32(out[offRecordCount:], uint32(kept))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out, kept, nil
}
