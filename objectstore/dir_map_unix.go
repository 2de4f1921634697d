//go:build unix

package objectstore

import (
	"fmt"
	"os"
	"syscall"
)

// mapRange maps [start, end) of f privately (copy-on-write), from the page
// that holds start; it returns the range's bytes and the unmapping.
func mapRange(f *os.File, start, end int64) ([]byte, func(), error) {
	page := int64(os.Getpagesize())
	from := start - start%page
	m, err := syscall.Mmap(int(f.Fd()), from, int(end-from), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("objectstore: map %s: %w", f.Name(), err)
	}
	b := m[start-from : end-from : end-from]
	return b, func() { _ = syscall.Munmap(m) }, nil
}
