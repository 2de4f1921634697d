package tableread

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
)

// A scan keeps each row it decodes as its partition, offset, timestamp
// and tail (key, value and headers as a Kafka v2 record encodes them,
// kbatch.AppendTail), the tails laid one after another in a few large
// chunks: no Row, no key or value copy, no allocation per row. A batch
// is rebuilt from the tails with one copy each (kbatch.AppendBatchOfTails),
// byte for byte what kbatch.EncodeAt writes of the same records.

// row is one record a scan decoded.
type row struct {
	rec  kbatch.TailRecord
	part int32
}

// size is about what r takes kept and in a rebuilt batch.
func (r *row) size() int { return 24 + len(r.rec.Tail) }

// arenaChunk is the size of one chunk of tails (a larger tail gets its
// own).
const arenaChunk = 1 << 20

// arena holds the tails of one scan's rows. Chunks are never written
// past what a row took, so the rows' tails stay valid while any row
// holds its chunk.
type arena struct {
	buf []byte // the current chunk: its length is what rows took
	n   int64  // the bytes of tails added
}

// add encodes v's tail into the arena and returns it.
func (a *arena) add(v *iceberg.RowView) []byte {
	return a.addTail(v.Key, v.Value, v.Headers(), v.Header)
}

// addTail encodes the tail of a record of key, value and n headers
// (header(j) is header j) into the arena and returns it.
func (a *arena) addTail(key, value []byte, n int, header func(j int) (string, []byte)) []byte {
	size := len(key) + len(value) + 3*binaryVarintMax
	for j := range n {
		k, hv := header(j)
		size += len(k) + len(hv) + 2*binaryVarintMax
	}
	if cap(a.buf)-len(a.buf) < size {
		a.buf = makeNoZero(max(arenaChunk, size)) // each byte a row takes is written by AppendTail
	}
	start := len(a.buf)
	a.buf = kbatch.AppendTail(a.buf, key, value, n, header)
	a.n += int64(len(a.buf) - start)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// recOf is the record at offset o of time ts (unix ms) and tail.
func recOf(o, ts int64, tail []byte) kbatch.TailRecord {
	return kbatch.TailRecord{Offset: o, Timestamp: ts, Tail: tail}
}

// binaryVarintMax is the longest varint.
const binaryVarintMax = 10

// appendBatchRows appends rec's rows to rows, their tails in a, but for
// those whose offset is outside [lo, hi) (kept all the same when !skip).
func appendBatchRows(rows []row, a *arena, rec arrow.RecordBatch, skip bool, lo, hi int64) ([]row, error) {
	err := iceberg.EachRow(rec, func(v *iceberg.RowView) {
		if skip && (v.Offset < lo || v.Offset >= hi) {
			return
		}
		rows = append(rows, row{part: v.Partition, rec: kbatch.TailRecord{Offset: v.Offset, Timestamp: v.Timestamp, Tail: a.add(v)}})
	})
	return rows, err
}

// rebuild turns rows (sorted, checked) into batches of at most
// maxBatch bytes, about maxBytes in all, one at least. The batches share
// one buffer, which it returns: from mem (nil: none, or a buffer below
// its least class) when the caller hands it back there once nothing reads
// the batches (Reader.ReadOwned), else fresh. row.size bounds a record's
// bytes in a batch (a length, attributes and deltas take at most 21 bytes
// besides the tail).
func rebuild(rows []row, maxBatch, maxBytes int, mem *allocPool) ([]Batch, []byte, error) {
	type span struct{ i, j int } // the rows of one batch
	var (
		spans       []span
		total, size int // the bytes of the batches before, of the current one
		start       int
	)
	end := len(rows)
	for i := range rows {
		r := &rows[i]
		n := r.size()
		if i > start && (size+n > maxBatch || r.rec.Offset-rows[start].rec.Offset > math.MaxInt32) {
			spans = append(spans, span{start, i})
			total += kbatch.HeaderSize + size
			start, size = i, 0
		}
		if (len(spans) > 0 || i > start) && total+size+n > maxBytes {
			end = i
			break
		}
		size += n
	}
	if start < end {
		spans = append(spans, span{start, end})
		total += kbatch.HeaderSize + size
	}
	// Every byte of each batch is written (AppendBatchOfTails): neither
	// buffer is cleared.
	var buf []byte
	if mem != nil && total >= mem.min {
		buf = mem.allocate(total, total)[:0]
	} else {
		buf = makeNoZero(total)
	}
	whole := buf
	var recs []kbatch.TailRecord
	out := make([]Batch, 0, len(spans))
	for _, sp := range spans {
		recs = recs[:0]
		b := Batch{BaseOffset: rows[sp.i].rec.Offset, LastOffset: rows[sp.j-1].rec.Offset, Records: int32(sp.j - sp.i)}
		for k := sp.i; k < sp.j; k++ {
			recs = append(recs, rows[k].rec)
			b.MaxTime = max(b.MaxTime, rows[k].rec.Timestamp)
		}
		at := len(buf)
		var err error
		if buf, err = kbatch.AppendBatchOfTails(buf, recs); err != nil {
			return nil, nil, fmt.Errorf("%w: rebuild a batch: %w", ErrDataLoss, err)
		}
		b.Data = buf[at:len(buf):len(buf)]
		out = append(out, b)
	}
	if cap(buf) != cap(whole) {
		whole = nil // outgrown (row.size is a bound: cannot happen): not the pool's
	}
	return out, whole, nil
}
