package kbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// ErrCorrupt is wrapped by every error reporting a malformed batch.
var ErrCorrupt = errors.New("kbatch: corrupt record batch")

// ErrTooLarge is wrapped by Decode's error when a batch decompresses past
// the caller's bound. It is not wrapped in ErrCorrupt: the batch may be
// valid, only larger than the caller accepts.
var ErrTooLarge = errors.New("kbatch: decompressed batch too large")

// HeaderSize is the size of a v2 record batch header, from the base offset
// to the record count included.
const HeaderSize = 61

// DefaultMaxDecompressed is the bound Decode applies when given 0.
const DefaultMaxDecompressed = 64 << 20

// Byte offsets of the header fields.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// lengthPrefix is the part of the batch its length field does not
	// count: the base offset and the length itself.
	lengthPrefix = 12
)

// Attribute bits besides the codec.
const (
	attrLogAppendTime = 0x08
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a record header. A nil Value is a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of a batch. A nil Key or Value is null; an empty
// non-nil one is empty.
type Record struct {
	Offset    int64 // absolute offset; Encode ignores it
	Timestamp int64 // unix milliseconds
	Key       []byte
	Value     []byte
	Headers   []Header
}

// EncodeOptions are the batch-level fields Encode writes.
type EncodeOptions struct {
	Compression   Compression
	ProducerID    int64 // -1: not an idempotent producer
	ProducerEpoch int16 // -1: none
	BaseSequence  int32 // -1: none
	LogAppendTime bool  // set the timestamp type attribute to LogAppendTime
}

// DefaultEncodeOptions returns options for an uncompressed batch of a
// non-idempotent producer with CreateTime timestamps.
func DefaultEncodeOptions() EncodeOptions {
	return EncodeOptions{Compression: None, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
}

// validate checks the options; its errors name the bad field.
func (o EncodeOptions) validate() error {
	if !o.Compression.valid() {
		return fmt.Errorf("kbatch: EncodeOptions.Compression: unknown codec %d", int8(o.Compression))
	}
	return nil
}

// Info is the header of a record batch.
type Info struct {
	BaseOffset           int64
	BatchLength          int // total bytes including the 12-byte offset and length prefix
	PartitionLeaderEpoch int32
	Attributes           int16
	Compression          Compression
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// scratch buffers hold the uncompressed records of a compressed batch.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// Encode builds one v2 record batch holding records, with base offset 0 (a
// placeholder: see SetBaseOffset). Record i gets offset delta i; Offset
// fields are ignored. FirstTimestamp is the smallest timestamp and
// MaxTimestamp the largest; each record stores its delta from the first.
// The partition leader epoch is -1, as producers write it.
func Encode(records []Record, opts EncodeOptions) ([]byte, error) {
	if len(records) == 0 {
		return nil, errors.New("kbatch: encode: no records")
	}
	if len(records) > math.MaxInt32 {
		return nil, fmt.Errorf("kbatch: encode: %d records, over the int32 limit", len(records))
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	first, maxTS := records[0].Timestamp, records[0].Timestamp
	for i := range records {
		first = min(first, records[i].Timestamp)
		maxTS = max(maxTS, records[i].Timestamp)
	}
	if maxTS-first < 0 {
		return nil, fmt.Errorf("kbatch: encode: timestamps %d and %d too far apart", first, maxTS)
	}

	size := 0
	for i := range records {
		r := &records[i]
		n := recordBodyLen(r, r.Timestamp-first, i)
		if err := checkRecordLen(n, i); err != nil {
			return nil, err
		}
		size += varintLen(int64(n)) + n
	}
	if size > math.MaxInt32-(HeaderSize-lengthPrefix) {
		return nil, fmt.Errorf("kbatch: encode: %d bytes of records, over the 2 GiB batch limit", size)
	}

	var b []byte
	if opts.Compression == None {
		b = make([]byte, HeaderSize, HeaderSize+size)
		b = appendRecords(b, records, first)
	} else {
		sp := scratch.Get().(*[]byte)
		raw := appendRecords((*sp)[:0], records, first)
		b = make([]byte, HeaderSize, HeaderSize+size/2+64)
		var err error
		b, err = compress(b, opts.Compression, raw)
		*sp = raw[:0]
		if cap(raw) <= 4<<20 { // do not pin huge buffers in the pool
			scratch.Put(sp)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(b)-lengthPrefix > math.MaxInt32 {
		return nil, fmt.Errorf("kbatch: encode: compressed batch of %d bytes, over the 2 GiB limit", len(b))
	}

	writeHeader(b, opts, int32(len(records)-1), first, maxTS, len(records))
	return b, nil
}

// writeHeader fills the header of batch b, its records written after
// HeaderSize (base offset 0), and its CRC.
func writeHeader(b []byte, opts EncodeOptions, lastOffsetDelta int32, first, maxTS int64, count int) {
	attrs := int16(opts.Compression)
	if opts.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], 0)
	be.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
	be.PutUint32(b[offLeaderEpoch:], math.MaxUint32) // -1
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	be.PutUint64(b[offFirstTimestamp:], uint64(first))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(count))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

func appendRecords(dst []byte, records []Record, first int64) []byte {
	for i := range records {
		r := &records[i]
		delta := r.Timestamp - first
		dst = appendRecord(dst, r, delta, i, recordBodyLen(r, delta, i))
	}
	return dst
}

// ParseInfo validates the header of the record batch at the start of b and
// returns it. It checks that the magic is 2, that the batch fits in b, that
// its CRC-32C matches, that the codec is known, and that the batch is dense:
// at least one record and RecordCount == LastOffsetDelta+1. It never
// panics and allocates nothing but its error.
func ParseInfo(b []byte) (Info, error) { return parseInfo(b, false) }

// parseInfo is ParseInfo; lenient accepts a compacted batch (see
// ParseStored).
func parseInfo(b []byte, lenient bool) (Info, error) { return parseHeader(b, lenient, true) }

// parseHeader is parseInfo; crc false skips the CRC (ParseStoredVerified).
func parseHeader(b []byte, lenient, crc bool) (Info, error) {
	if len(b) < HeaderSize {
		return Info{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	be := binary.BigEndian
	length := int32(be.Uint32(b[offBatchLength:]))
	if length < HeaderSize-lengthPrefix {
		return Info{}, fmt.Errorf("%w: batch length %d under the header's %d", ErrCorrupt, length, HeaderSize-lengthPrefix)
	}
	if int64(length) > int64(len(b)-lengthPrefix) {
		return Info{}, fmt.Errorf("%w: batch length %d, only %d bytes present", ErrCorrupt, length, len(b)-lengthPrefix)
	}
	if m := int8(b[offMagic]); m != 2 {
		return Info{}, fmt.Errorf("%w: magic %d, want 2", ErrCorrupt, m)
	}
	total := lengthPrefix + int(length)
	if crc {
		if want, got := be.Uint32(b[offCRC:]), crc32.Checksum(b[offAttributes:total], castagnoli); want != got {
			return Info{}, fmt.Errorf("%w: CRC %08x, computed %08x", ErrCorrupt, want, got)
		}
	}
	info := Info{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          total,
		PartitionLeaderEpoch: int32(be.Uint32(b[offLeaderEpoch:])),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(be.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}
	info.Compression = Compression(info.Attributes & compressionMask)
	if !info.Compression.valid() {
		return Info{}, fmt.Errorf("%w: unknown compression code %d", ErrCorrupt, int8(info.Compression))
	}
	if info.RecordCount < 1 {
		return Info{}, fmt.Errorf("%w: record count %d", ErrCorrupt, info.RecordCount)
	}
	if lenient {
		if info.LastOffsetDelta < 0 || int64(info.RecordCount) > int64(info.LastOffsetDelta)+1 {
			return Info{}, fmt.Errorf("%w: record count %d with last offset delta %d (more records than offsets)",
				ErrCorrupt, info.RecordCount, info.LastOffsetDelta)
		}
	} else if int64(info.RecordCount) != int64(info.LastOffsetDelta)+1 {
		return Info{}, fmt.Errorf("%w: record count %d with last offset delta %d (batch not dense)",
			ErrCorrupt, info.RecordCount, info.LastOffsetDelta)
	}
	if info.Compression == None && int(info.RecordCount) > (total-HeaderSize)/minRecordSize {
		return Info{}, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, info.RecordCount, total-HeaderSize)
	}
	return info, nil
}

// Decode validates the batch at the start of b as ParseInfo does,
// decompresses it and returns its records with absolute offsets
// (BaseOffset + delta) and timestamps (FirstTimestamp + delta; MaxTimestamp
// for every record of a LogAppendTime batch, as Kafka consumers read it).
//
// The records never alias b. maxDecompressed bounds the size of the
// decompressed records of a compressed batch (0 means
// DefaultMaxDecompressed); past it Decode fails with ErrTooLarge.
func Decode(b []byte, maxDecompressed int) (Info, []Record, error) {
	return decode(b, maxDecompressed, false, 0)
}

// decode is Decode; lenient accepts a compacted batch (see DecodeStored).
// maxRecord > 0 bounds each record (decodeRecords).
func decode(b []byte, maxDecompressed int, lenient bool, maxRecord int) (Info, []Record, error) {
	info, err := parseInfo(b, lenient)
	if err != nil {
		return Info{}, nil, err
	}
	if maxDecompressed <= 0 {
		maxDecompressed = DefaultMaxDecompressed
	}
	payload := b[HeaderSize:info.BatchLength]
	var data []byte
	if info.Compression == None {
		data = append([]byte(nil), payload...)
	} else {
		data, err = decompress(info.Compression, payload, maxDecompressed)
		if errors.Is(err, errTooLarge) {
			return Info{}, nil, fmt.Errorf("%w: over %d bytes (%s)", ErrTooLarge, maxDecompressed, info.Compression)
		}
		if err != nil {
			return Info{}, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	recs, err := decodeRecords(data, &info, lenient, maxRecord)
	if err != nil {
		return Info{}, nil, err
	}
	return info, recs, nil
}

// SetBaseOffset writes base into the batch's first 8 bytes. The CRC does not
// cover them, so the batch stays valid.
func SetBaseOffset(b []byte, base int64) error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(base))
	return nil
}

// Split walks the record batches laid back to back in b and calls fn with
// each one's bytes (a capped subslice of b). It stops at fn's first error
// and returns it, and fails on a truncated or invalid batch.
func Split(b []byte, fn func(batch []byte) error) error { return split(b, fn, false) }

// split is Split; lenient accepts compacted batches (see SplitStored).
func split(b []byte, fn func(batch []byte) error, lenient bool) error {
	for at := 0; at < len(b); {
		info, err := parseInfo(b[at:], lenient)
		if err != nil {
			return fmt.Errorf("batch at byte %d: %w", at, err)
		}
		end := at + info.BatchLength
		if err := fn(b[at:end:end]); err != nil {
			return err
		}
		at = end
	}
	return nil
}
