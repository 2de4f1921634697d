package readpath

import "hash/crc32"

// streamCRC hashes a whole-file load's bytes as the store reads them
// (objectstore.ReadObserver), while they are still in the processor's
// caches: a CRC pass over a file of several MiB once it has arrived
// reads it back from memory, the largest single cost of a cold catch-up
// read. The body's end, which the CRC to check stops at, is known only
// once the trailer has arrived; so the hash keeps its value at every
// crcStep bytes (marks), and the check (logfile.ReadIndexPrefix) hashes
// the rest, less than crcStep bytes plus the footer, from the last mark
// before the body's end.
//
// It trusts nothing it was shown: a chunk that is not the next part of the
// buffer it started on, or a buffer other than the one the load returns,
// leaves the check to hash the whole body as before (prefix returns 0, 0).
// Only the load's goroutine uses it (the store calls the observer from the
// Get, before it returns).
type streamCRC struct {
	buf    []byte   // the buffer of the first chunk, to its capacity
	n      int      // bytes of buf hashed, from its start
	crc    uint32   // CRC-32C of buf[:n]
	marks  []uint32 // marks[i]: CRC-32C of buf[:(i+1)*crcStep]
	broken bool     // a chunk out of order: prefix gives nothing
}

// crcStep is the distance between two marks: what the check may hash
// again past the last mark (cache-resident: the file's last bytes).
const crcStep = 64 << 10

// observe is the load's objectstore.ReadObserver.
func (h *streamCRC) observe(off int, p []byte) {
	if len(p) == 0 {
		return
	}
	if off == 0 { // the first chunk, or a read started afresh
		*h = streamCRC{buf: p[:cap(p)], marks: h.marks[:0]}
	}
	if h.broken || off != h.n || off+len(p) > len(h.buf) || &p[0] != &h.buf[off] {
		h.broken = true
		return
	}
	for len(p) > 0 {
		k := min(crcStep-h.n%crcStep, len(p))
		h.crc = crc32.Update(h.crc, castagnoli, p[:k])
		h.n += k
		p = p[k:]
		if h.n%crcStep == 0 {
			h.marks = append(h.marks, h.crc)
		}
	}
}

// prefix returns the CRC-32C of data's first n bytes, for the largest
// mark n at most limit, when data is the buffer it was shown from its
// start; else 0, 0 (nothing known).
func (h *streamCRC) prefix(data []byte, limit int) (crc uint32, n int) {
	if h.broken || len(data) == 0 || len(h.buf) == 0 || &data[0] != &h.buf[0] {
		return 0, 0
	}
	m := min(h.n, len(data), limit) / crcStep
	if m == 0 {
		return 0, 0
	}
	return h.marks[m-1], m * crcStep
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
