package objectstore

import (
	"errors"
	"fmt"
)

var errEmptyKey = errors.New("objectstore: empty key")

// clampRange turns Get's (off, length) into the byte range [start, end) of
// an object of the given size, following Store.Get's rules: length < 0
// reads to the end, a range past the end is truncated, off > size (or
// off < 0) is ErrInvalidRange.
func clampRange(size, off, length int64) (start, end int64, err error) {
	if off < 0 || off > size {
		return 0, 0, fmt.Errorf("%w: offset %d, object size %d", ErrInvalidRange, off, size)
	}
	end = size
	if length >= 0 && length < size-off {
		end = off + length
	}
	return off, end, nil
}
