package tableread

import (
	"strings"
	"unsafe"
)

// makeNoZero returns an empty byte slice of capacity n whose bytes are
// not zeroed: the memory of the tails' chunks (rows.go) and of rebuilt
// batches, every byte of which is written before it is read, so that
// Go's clearing of each large allocation (6–7% of a table catch-up's
// CPU in a profile) is saved. strings.Builder is the standard library's
// one way to such memory (its Grow allocates without zeroing); the
// builder is dropped here, and nothing else ever sees its string.
//
// Callers must write every byte they expose: a byte read before it is
// written holds whatever the allocator's memory held.
func makeNoZero(n int) []byte {
	if n <= 0 {
		return nil
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0) // so that String holds the buffer's address
	return unsafe.Slice(unsafe.StringData(b.String()), n)[:0]
}
