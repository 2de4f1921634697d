package compactor_test

import (
	"context"
	"sync"

	"github.com/floe-broker/floe/objectstore"
)

// readCounter counts what the jobs read from an object store: bytes, GETs
// and the largest GET.
type readCounter struct {
	objectstore.Store
	mu                 sync.Mutex // protects the figures
	bytes, gets, large int64
}

func (s *readCounter) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	d, err := s.Store.Get(ctx, key, off, length)
	s.mu.Lock()
	s.bytes += int64(len(d))
	s.gets++
	s.large = max(s.large, int64(len(d)))
	s.mu.Unlock()
	return d, err
}

// take returns the figures since the last take and resets them.
func (s *readCounter) take() (bytes, gets, large int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bytes, gets, large = s.bytes, s.gets, s.large
	s.bytes, s.gets, s.large = 0, 0, 0
	return bytes, gets, large
}
