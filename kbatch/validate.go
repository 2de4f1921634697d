package kbatch

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Validation of client batches. A producer that sends encoded batches (the
// agent's batch data plane) hands them over as they will be stored, so
// every byte is checked at the edge, without building records:
//
//	framing      each batch's length fits the bytes; batches back to back,
//	             nothing after the last
//	header       magic 2; CRC-32C over attributes..end (bytes 21 to the
//	             batch's end); attributes: a known codec and no other bit
//	             (no LogAppendTime, transactional, control or unknown bits);
//	             record count >= 1 and == LastOffsetDelta+1 (dense)
//	producer     producer id -1 (none: epoch and base sequence not read), or
//	             >= 0 with epoch >= 0 and base sequence >= 0
//	records      decompressed within the caller's bound; exactly record
//	             count records, each framed by its length with offset delta
//	             i, a non-negative timestamp at most MaxTimestamp, key, value
//	             and headers within their lengths and their sum within the
//	             record limit; no byte after the last record
//	timestamps   MaxTimestamp == max(FirstTimestamp, every record's)
//
// Nothing is allocated per record; a compressed batch costs one buffer of
// its decompressed size.

// ErrRefused is wrapped by Validate's errors for a batch that is well
// formed but that floe does not accept from a producer (LogAppendTime,
// transactional or control batches, incoherent producer fields, timestamps
// that do not match the header).
var ErrRefused = errors.New("kbatch: record batch refused")

// ErrRecordTooLarge is wrapped by Validate's error for a record whose key,
// value and headers together (HeaderOverhead per header included) pass
// Limits.MaxRecordBytes, and by DecodeStoredLimits'.
var ErrRecordTooLarge = errors.New("kbatch: record too large")

// Attribute bits a producer's batch may not carry.
const (
	attrTransactional = 0x10
	attrControl       = 0x20
	// attrAllowed are the bits Validate accepts: the codec.
	attrAllowed = compressionMask
)

// Limits bound what Validate accepts. A zero field is no limit, except
// MaxDecompressed (0 means DefaultMaxDecompressed).
type Limits struct {
	// MaxBatchBytes bounds one batch as sent (header included).
	MaxBatchBytes int
	// MaxDecompressed bounds the batches of one call together, counted as
	// their headers plus their records uncompressed: for an uncompressed
	// batch its size, for a compressed one what it decompresses to. Past
	// it Validate fails with ErrTooLarge, before decompressing further.
	MaxDecompressed int
	// MaxRecordBytes bounds one record's key, value and headers (keys and
	// values, plus HeaderOverhead per header) together, as the per-record
	// produce path counts them.
	MaxRecordBytes int
}

// ValueFunc sees each record's value (nil for a null value) with the
// record's index among all records of the call. Its error stops Validate
// and is returned as is. value aliases the batch (or its decompressed
// records): it must not be modified or kept after the call.
type ValueFunc func(record int, value []byte) error

// Validate checks the record batches laid back to back in b as a producer
// sends them (see the checks above), calls each (when not nil) with every
// batch (a capped subslice of b) and its header, and value (when not nil)
// with every record's value. It returns the batches' record count and
// size as counted against MaxDecompressed. Its errors wrap ErrCorrupt (malformed), ErrRefused (well formed,
// not accepted), ErrTooLarge (over a size limit) or ErrRecordTooLarge, and
// name the batch by its index and byte position; an error from each or
// value is returned as is. It never panics.
func Validate(b []byte, lim Limits, each func(i int, batch []byte, info Info) error, value ValueFunc) (Counts, error) {
	if len(b) == 0 {
		return Counts{}, fmt.Errorf("%w: no batch", ErrCorrupt)
	}
	budget := lim.MaxDecompressed
	if budget <= 0 {
		budget = DefaultMaxDecompressed
	}
	var c Counts
	for i, at := 0, 0; at < len(b); i++ {
		info, used, rb, least, err := validateOne(b[at:], lim, budget, c.Records, value)
		if err != nil {
			var fe *funcError
			if errors.As(err, &fe) {
				return Counts{}, fe.err
			}
			return Counts{}, fmt.Errorf("batch %d at byte %d: %w", i, at, err)
		}
		end := at + info.BatchLength
		if each != nil {
			if err := each(i, b[at:end:end], info); err != nil {
				return Counts{}, err
			}
		}
		budget -= used
		if i == 0 || least < c.MinTimestamp {
			c.MinTimestamp = least
		}
		c.Records += int(info.RecordCount)
		c.Decompressed += used
		c.RecordBytes += rb
		at = end
	}
	return c, nil
}

// Counts are what Validate found.
type Counts struct {
	Records      int   // records of all batches
	RecordBytes  int   // their keys, values and headers (keys, values, HeaderOverhead each)
	MinTimestamp int64 // the least record timestamp (each batch's header gives the greatest)
	Decompressed int   // bytes counted against Limits.MaxDecompressed
}

// funcError carries a ValueFunc's error out of validateOne untouched.
type funcError struct{ err error }

func (e *funcError) Error() string { return e.err.Error() }

// validateOne validates the batch at the start of b; budget is what is
// left of MaxDecompressed and first the index of its first record in the
// call. It returns the header, the bytes counted against the budget, the
// records' bytes and their least timestamp.
func validateOne(b []byte, lim Limits, budget, first int, value ValueFunc) (Info, int, int, int64, error) {
	info, err := parseInfo(b, false)
	if err != nil {
		return Info{}, 0, 0, 0, err
	}
	if lim.MaxBatchBytes > 0 && info.BatchLength > lim.MaxBatchBytes {
		return Info{}, 0, 0, 0, fmt.Errorf("%w: batch of %d bytes, over the limit of %d", ErrTooLarge, info.BatchLength, lim.MaxBatchBytes)
	}
	if err := checkProducerHeader(&info); err != nil {
		return Info{}, 0, 0, 0, err
	}
	payload := b[HeaderSize:info.BatchLength]
	used := info.BatchLength
	data := payload
	if info.Compression != None {
		room := budget - HeaderSize
		if room <= 0 {
			return Info{}, 0, 0, 0, fmt.Errorf("%w: over %d bytes decompressed", ErrTooLarge, lim.MaxDecompressed)
		}
		data, err = decompress(info.Compression, payload, room)
		if errors.Is(err, errTooLarge) {
			return Info{}, 0, 0, 0, fmt.Errorf("%w: over %d bytes decompressed (%s)", ErrTooLarge, lim.MaxDecompressed, info.Compression)
		}
		if err != nil {
			return Info{}, 0, 0, 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		used = HeaderSize + len(data)
	}
	if used > budget {
		return Info{}, 0, 0, 0, fmt.Errorf("%w: %d bytes, over %d bytes decompressed", ErrTooLarge, used, lim.MaxDecompressed)
	}
	rb, least, err := walkRecords(data, &info, lim.MaxRecordBytes, first, value)
	if err != nil {
		return Info{}, 0, 0, 0, err
	}
	return info, used, rb, least, nil
}

// checkProducerHeader checks the header fields a producer sets.
func checkProducerHeader(info *Info) error {
	if bad := info.Attributes &^ attrAllowed; bad != 0 {
		switch {
		case bad&attrControl != 0:
			return fmt.Errorf("%w: control batch (attributes %#04x)", ErrRefused, uint16(info.Attributes))
		case bad&attrTransactional != 0:
			return fmt.Errorf("%w: transactional batch (attributes %#04x): transactions are not supported", ErrRefused, uint16(info.Attributes))
		case bad&attrLogAppendTime != 0:
			return fmt.Errorf("%w: LogAppendTime timestamps (attributes %#04x): a producer sends CreateTime", ErrRefused, uint16(info.Attributes))
		}
		return fmt.Errorf("%w: unknown attribute bits %#04x", ErrRefused, uint16(bad))
	}
	switch {
	case info.ProducerID == -1:
	case info.ProducerID < -1:
		return fmt.Errorf("%w: producer id %d (want -1 for none, or an id)", ErrRefused, info.ProducerID)
	case info.ProducerEpoch < 0 || info.BaseSequence < 0:
		return fmt.Errorf("%w: producer id %d with epoch %d and base sequence %d (want both >= 0)",
			ErrRefused, info.ProducerID, info.ProducerEpoch, info.BaseSequence)
	}
	if info.FirstTimestamp < 0 || info.MaxTimestamp < 0 {
		return fmt.Errorf("%w: negative timestamps (first %d, max %d)", ErrRefused, info.FirstTimestamp, info.MaxTimestamp)
	}
	return nil
}

// walkRecords checks the records of data (uncompressed) as parseRecord
// does, without building them, hands their values to value and returns
// the sum of their sizes (key, value and headers) and their least
// timestamp.
func walkRecords(data []byte, info *Info, maxRecord, first int, value ValueFunc) (int, int64, error) {
	count := int(info.RecordCount)
	if count > len(data)/minRecordSize {
		return 0, 0, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, count, len(data))
	}
	maxTS, least := info.FirstTimestamp, info.FirstTimestamp
	total := 0
	rd := reader{b: data}
	for i := 0; i < count; i++ {
		n := rd.varint("record length")
		if rd.err != nil {
			return 0, 0, fmt.Errorf("record %d: %w", i, rd.err)
		}
		if n < 0 || int(n) > len(rd.b) {
			return 0, 0, fmt.Errorf("%w: record %d length %d with %d bytes left", ErrCorrupt, i, n, len(rd.b))
		}
		body := reader{b: rd.b[:n]}
		rd.b = rd.b[n:]
		ts, val, size, err := walkRecord(&body, i, info, maxRecord)
		if err != nil {
			if errors.Is(err, ErrRecordTooLarge) {
				return 0, 0, err
			}
			return 0, 0, fmt.Errorf("record %d: %w", i, err)
		}
		if ts < 0 || ts > info.MaxTimestamp {
			return 0, 0, fmt.Errorf("%w: record %d timestamp %d outside [0, max timestamp %d]", ErrRefused, i, ts, info.MaxTimestamp)
		}
		maxTS, least = max(maxTS, ts), min(least, ts)
		total += size
		if value != nil {
			if err := value(first+i, val); err != nil {
				return 0, 0, &funcError{err}
			}
		}
	}
	if len(rd.b) != 0 {
		return 0, 0, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(rd.b))
	}
	if maxTS != info.MaxTimestamp {
		return 0, 0, fmt.Errorf("%w: max timestamp %d, the records' is %d", ErrRefused, info.MaxTimestamp, maxTS)
	}
	return total, least, nil
}

// walkRecord checks record index's fields and returns its timestamp, its
// value and the size of its key, value and headers (HeaderOverhead per
// header included), at most maxRecord when > 0 (ErrRecordTooLarge).
func walkRecord(rd *reader, index int, info *Info, maxRecord int) (ts int64, val []byte, size int, err error) {
	if len(rd.b) < 1 {
		return 0, nil, 0, fmt.Errorf("%w: empty record", ErrCorrupt)
	}
	rd.b = rd.b[1:] // record attributes: unused
	tsDelta := rd.varlong("timestamp delta")
	offDelta := rd.varint("offset delta")
	if rd.err == nil && int(offDelta) != index {
		return 0, nil, 0, fmt.Errorf("%w: offset delta %d, want %d (batch not dense)", ErrCorrupt, offDelta, index)
	}
	key := rd.bytes("key", true)
	val = rd.bytes("value", true)
	hc := rd.varint("header count")
	if rd.err != nil {
		return 0, nil, 0, rd.err
	}
	if hc < 0 || int(hc) > len(rd.b)/minHeaderSize {
		return 0, nil, 0, fmt.Errorf("%w: header count %d with %d bytes left", ErrCorrupt, hc, len(rd.b))
	}
	size = len(key) + len(val) + HeaderOverhead*int(hc)
	if maxRecord > 0 && size > maxRecord {
		return 0, nil, 0, recordTooLarge(index, size, maxRecord) // before walking its headers
	}
	for j := 0; j < int(hc); j++ {
		k := rd.bytes("header key", false)
		v := rd.bytes("header value", true)
		if rd.err != nil {
			return 0, nil, 0, fmt.Errorf("header %d: %w", j, rd.err)
		}
		// floe's API carries header keys as strings: a key that is not
		// UTF-8 could be stored but never fetched as a record.
		if !utf8.Valid(k) {
			return 0, nil, 0, fmt.Errorf("%w: header %d: key is not valid UTF-8", ErrRefused, j)
		}
		size += len(k) + len(v)
	}
	if maxRecord > 0 && size > maxRecord {
		return 0, nil, 0, recordTooLarge(index, size, maxRecord)
	}
	if len(rd.b) != 0 {
		return 0, nil, 0, fmt.Errorf("%w: %d bytes after the record's fields", ErrCorrupt, len(rd.b))
	}
	// The sum of two int64 may wrap: a wrapped timestamp is refused as
	// negative or past MaxTimestamp only if it lands there, so check it.
	if (tsDelta > 0 && info.FirstTimestamp > math.MaxInt64-tsDelta) || (tsDelta < 0 && info.FirstTimestamp < math.MinInt64-tsDelta) {
		return 0, nil, 0, fmt.Errorf("%w: timestamp delta %d overflows", ErrRefused, tsDelta)
	}
	return info.FirstTimestamp + tsDelta, val, size, nil
}
