package iceberg

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/kbatch"
)

// Row is one record of a topic as its table holds it.
type Row struct {
	Partition  int32
	Offset     int64
	Timestamp  time.Time // the record's timestamp (its producer's)
	AppendTime time.Time // when the broker committed it
	Key        []byte    // nil: null
	Value      []byte    // nil: null
	Headers    []kbatch.Header
	// Typed says that Value conforms to the topic's value schema: the
	// row's typed columns (value_fields) are filled from it (TypeRows).
	Typed bool
	// Reason is why a row of the rejected table was rejected.
	Reason string
}

// Watermark maps a partition to the next offset a table does not hold
// yet: the table holds no row of that partition at or above it, and
// every record below it that the writer was given. A partition missing
// from the map has watermark 0.
type Watermark map[int32]int64

// Covers reports whether w is at or above want for every partition of
// want: an append that asked for want has nothing left to write.
func (w Watermark) Covers(want Watermark) bool {
	for p, off := range want {
		if w[p] < off {
			return false
		}
	}
	return true
}

// Merge returns the highest of w and other per partition.
func (w Watermark) Merge(other Watermark) Watermark {
	out := make(Watermark, max(len(w), len(other)))
	maps.Copy(out, w)
	for p, off := range other {
		if off > out[p] {
			out[p] = off
		}
	}
	return out
}

// Equal reports whether w and other name the same offsets (a partition
// at 0 equals a missing one).
func (w Watermark) Equal(other Watermark) bool {
	for p, off := range w {
		if other[p] != off {
			return false
		}
	}
	for p, off := range other {
		if w[p] != off {
			return false
		}
	}
	return true
}

// validate checks that partitions and offsets are not negative.
func (w Watermark) validate() error {
	for p, off := range w {
		if p < 0 || off < 0 {
			return fmt.Errorf("%w: partition %d at offset %d", ErrInvalidWatermark, p, off)
		}
	}
	return nil
}

// String formats w as FormatWatermark does.
func (w Watermark) String() string { return FormatWatermark(w) }

// FormatWatermark writes w as "partition:offset" pairs in partition
// order, joined by commas ("0:120,1:98"); the empty watermark is "".
// Partitions at 0 are left out.
func FormatWatermark(w Watermark) string {
	parts := slices.Sorted(maps.Keys(w))
	var b strings.Builder
	for _, p := range parts {
		if w[p] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(p), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(w[p], 10))
	}
	return b.String()
}

// ParseWatermark reads what FormatWatermark wrote.
func ParseWatermark(s string) (Watermark, error) {
	w := Watermark{}
	if s == "" {
		return w, nil
	}
	for pair := range strings.SplitSeq(s, ",") {
		ps, os, ok := strings.Cut(pair, ":")
		if !ok {
			return nil, fmt.Errorf("%w: %q: pair %q has no ':'", ErrInvalidWatermark, s, pair)
		}
		p, err := strconv.ParseInt(ps, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%w: %q: bad partition %q", ErrInvalidWatermark, s, ps)
		}
		off, err := strconv.ParseInt(os, 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("%w: %q: bad offset %q", ErrInvalidWatermark, s, os)
		}
		if _, dup := w[int32(p)]; dup {
			return nil, fmt.Errorf("%w: %q: partition %d twice", ErrInvalidWatermark, s, p)
		}
		w[int32(p)] = off
	}
	return w, nil
}

// RowsToWrite returns the rows of an append that a table at watermark
// have must still get: those at or above have's offset for their
// partition. rows must be sorted by partition, then offset, strictly
// increasing, and want (the watermark the append commits) must be above
// every row's offset; otherwise it returns an error and no rows. The
// result shares no slice with rows (the Row values are copied).
func RowsToWrite(rows []Row, have, want Watermark) ([]Row, error) {
	if err := want.validate(); err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Partition < 0 || r.Offset < 0 {
			return nil, fmt.Errorf("%w: row %d: partition %d, offset %d", ErrInvalidRows, i, r.Partition, r.Offset)
		}
		if i > 0 {
			prev := &rows[i-1]
			if r.Partition < prev.Partition || r.Partition == prev.Partition && r.Offset <= prev.Offset {
				return nil, fmt.Errorf("%w: row %d (partition %d, offset %d) after partition %d, offset %d: not sorted by partition and offset",
					ErrInvalidRows, i, r.Partition, r.Offset, prev.Partition, prev.Offset)
			}
		}
		next, ok := want[r.Partition]
		if !ok || r.Offset >= next {
			return nil, fmt.Errorf("%w: row %d (partition %d, offset %d) is not below the append's watermark %d",
				ErrInvalidRows, i, r.Partition, r.Offset, next)
		}
		if r.Offset < have[r.Partition] {
			continue
		}
		out = append(out, *r)
	}
	return out, nil
}

// AppendRecords appends to dst the rows of records decoded from one batch
// of partition (kbatch.Decode: absolute offsets, millisecond timestamps)
// that the broker committed at appendTime, and returns it. A record with
// no timestamp (negative, Kafka's -1) takes appendTime: the column is
// required. The rows share the records' byte slices.
func AppendRecords(dst []Row, partition int32, appendTime time.Time, records []kbatch.Record) []Row {
	for i := range records {
		r := &records[i]
		ts := appendTime
		if r.Timestamp >= 0 {
			ts = time.UnixMilli(r.Timestamp)
		}
		dst = append(dst, Row{Partition: partition, Offset: r.Offset, Timestamp: ts, AppendTime: appendTime,
			Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	return dst
}
