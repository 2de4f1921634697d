package batcher

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes a Batcher.
type Config struct {
	// Linger is how long the first batch of a file waits for company before
	// the file is flushed.
	Linger time.Duration
	// MaxFileBytes seals a file once it reaches this size.
	MaxFileBytes int
	// MaxBufferedBytes bounds the bytes accepted but not yet acknowledged
	// (buffered, uploading or committing). Past it, producers wait.
	MaxBufferedBytes int64
	// MaxConcurrentUploads bounds the PUTs in flight.
	MaxConcurrentUploads int
	// UploadAttempts is how many times a failed PUT is tried.
	UploadAttempts int
	// CommitTimeout bounds one metadata commit, so a hung database fails
	// the file's producers (retriably) instead of stalling the agent.
	CommitTimeout time.Duration
	// KeyPrefix is put before "v1/files/..." in object keys (may be empty).
	KeyPrefix string
}

// DefaultConfig returns the defaults of the design notes.
func DefaultConfig() Config {
	return Config{
		Linger:               250 * time.Millisecond,
		MaxFileBytes:         8 << 20,
		MaxBufferedBytes:     64 << 20,
		MaxConcurrentUploads: 4,
		UploadAttempts:       3,
		CommitTimeout:        30 * time.Second,
	}
}

func (c Config) validate() error {
	switch {
	case c.Linger < 0 || c.Linger > time.Minute:
		return fmt.Errorf("batcher: config Linger %v must be within [0, 1m]", c.Linger)
	case c.MaxFileBytes < 1024:
		return fmt.Errorf("batcher: config MaxFileBytes %d must be at least 1024", c.MaxFileBytes)
	case c.MaxBufferedBytes < int64(c.MaxFileBytes):
		return fmt.Errorf("batcher: config MaxBufferedBytes %d must be at least MaxFileBytes (%d)", c.MaxBufferedBytes, c.MaxFileBytes)
	case c.MaxConcurrentUploads < 1:
		return fmt.Errorf("batcher: config MaxConcurrentUploads %d must be at least 1", c.MaxConcurrentUploads)
	case c.UploadAttempts < 1:
		return fmt.Errorf("batcher: config UploadAttempts %d must be at least 1", c.UploadAttempts)
	case c.CommitTimeout <= 0:
		return fmt.Errorf("batcher: config CommitTimeout %v must be positive", c.CommitTimeout)
	}
	return nil
}

var (
	// ErrClosed is returned by Produce after Close.
	ErrClosed = errors.New("batcher: closed")
	// ErrBackpressure is returned when the producer's context ended while
	// it waited for buffer space.
	ErrBackpressure = errors.New("batcher: buffer full")
	// ErrBatchTooLarge is returned for a batch larger than MaxFileBytes.
	ErrBatchTooLarge = errors.New("batcher: batch larger than the file limit")
)

// FlushError is a failed upload or commit of the file holding the
// producer's batch. Unless Ambiguous is set, nothing of the file became
// visible and the producer may retry safely. Ambiguous means the outcome is
// still unknown after the batcher's bounded retries of the commit: the
// records may be committed, and a plain retry may duplicate them (an
// idempotent producer's retry gets the original offsets).
type FlushError struct {
	Stage     string // "upload" or "commit"
	Ambiguous bool
	Err       error
}

func (e *FlushError) Error() string { return fmt.Sprintf("batcher: %s failed: %v", e.Stage, e.Err) }
func (e *FlushError) Unwrap() error { return e.Err }
