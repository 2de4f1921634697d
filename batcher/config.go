package batcher

import (
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Config tunes a Batcher.
//
// Deadlines: a file gets one upload deadline (UploadTimeout from its seal,
// the wait for an upload slot and every attempt of the store included) and
// one commit deadline (CommitTimeout from the end of its upload, the wait
// for the files sealed before it and every retry included). Every producer
// is thus answered within Linger + UploadTimeout + CommitTimeout of its
// append, well under a client's usual timeout with the defaults (about
// 20 s). The object store's own retries run inside the upload deadline: its
// per-attempt timeout should be shorter than UploadTimeout
// (s3store.Config.RequestTimeout).
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
	// UploadTimeout is a file's one upload deadline, counted from its seal.
	// Past it the file fails, its producers are told so (definitely: it is
	// never committed), and the files sealed after it go on. Default 10 s.
	UploadTimeout time.Duration
	// CommitTimeout is a file's one commit deadline, counted from the end of
	// its upload. An ambiguous commit failure is retried (same file key)
	// until then; a commit whose outcome is still unknown at the deadline
	// answers FlushError.Ambiguous. Default 10 s.
	CommitTimeout time.Duration
	// MaxFilesPerCommit bounds the files committed together: the commit
	// goroutine takes every sealed, uploaded file waiting (in seal order)
	// into one metadata transaction, up to this many; at most
	// metadata.MaxCommitFiles. Default 1: files one at a time. Measured
	// (docs/benchmarks.md, multi-file commits), 16 halved the produce p99
	// of one agent at linger 20 ms, but two agents writing the same
	// partitions waited on each other's longer transactions and their p99
	// rose in most runs: raise it where agents do not share partitions.
	MaxFilesPerCommit int
	// SealWhenWaited seals the open file before its linger ends once every
	// client writing to it waits on it and it is two fifths of the linger old, when
	// the file holds an eighth of MaxFileBytes or the recent ingest fills a
	// file within one linger (writers.go, sealWaited). Default true: a
	// Kafka producer with one request in flight then waits about one
	// linger for a record, not two, for at most twice the files per linger
	// at the rates where files are sealed for size anyway (measured in
	// docs/benchmarks.md, "Kafka producers that wait on the open file").
	SealWhenWaited bool
	// waitedMinAge overrides sealWaited's minimum file age (0: two fifths of the
	// linger); tests set it through export_test.go.
	waitedMinAge time.Duration
}

// DefaultConfig returns the defaults of the design notes.
func DefaultConfig() Config {
	return Config{
		Linger:               250 * time.Millisecond,
		MaxFileBytes:         8 << 20,
		MaxBufferedBytes:     64 << 20,
		MaxConcurrentUploads: 4,
		UploadTimeout:        10 * time.Second,
		CommitTimeout:        10 * time.Second,
		MaxFilesPerCommit:    1,
		SealWhenWaited:       true,
	}
}

// maxTimeout bounds UploadTimeout and CommitTimeout: past it a client has
// long given up.
const maxTimeout = 10 * time.Minute

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
	case c.UploadTimeout <= 0 || c.UploadTimeout > maxTimeout:
		return fmt.Errorf("batcher: config UploadTimeout %v must be within (0, %v]", c.UploadTimeout, maxTimeout)
	case c.CommitTimeout <= 0 || c.CommitTimeout > maxTimeout:
		return fmt.Errorf("batcher: config CommitTimeout %v must be within (0, %v]", c.CommitTimeout, maxTimeout)
	case c.MaxFilesPerCommit < 1 || c.MaxFilesPerCommit > metadata.MaxCommitFiles:
		return fmt.Errorf("batcher: config MaxFilesPerCommit %d must be within [1, %d]", c.MaxFilesPerCommit, metadata.MaxCommitFiles)
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
	// ErrWithdrawn is wrapped by the FlushError of a batch whose producer
	// stopped waiting before its file's commit started: the batch is left
	// out of the commit (its bytes stay in the object, unreferenced).
	ErrWithdrawn = errors.New("batcher: batch withdrawn before its commit")
)

// Stages of a FlushError.
const (
	StageUpload   = "upload"   // the file's upload failed or missed its deadline
	StageCommit   = "commit"   // the file's commit failed, missed its deadline or is unknown
	StageWithdraw = "withdraw" // the producer stopped waiting before the commit (ErrWithdrawn)
)

// FlushError is a batch that was not acknowledged: its file's upload or
// commit failed, or its producer stopped waiting.
//
// Unless Ambiguous is set, the batch is surely not committed, now or later,
// and the producer may retry safely. Ambiguous means the outcome is
// unknown: the commit may have landed (its answer lost, or still in flight
// when the producer's context ended) and the batcher could not learn the
// outcome before the commit deadline. A plain retry may then duplicate the
// records; an idempotent producer's retry gets the original offsets.
type FlushError struct {
	Stage     string // StageUpload, StageCommit or StageWithdraw
	Ambiguous bool
	Err       error
}

func (e *FlushError) Error() string {
	if e.Ambiguous {
		return fmt.Sprintf("batcher: %s outcome unknown: %v", e.Stage, e.Err)
	}
	return fmt.Sprintf("batcher: %s failed: %v", e.Stage, e.Err)
}
func (e *FlushError) Unwrap() error { return e.Err }
