// Package objectstore owns floe's view of object storage: the Store
// interface, its implementations (in-memory, local directory, S3 in the
// s3store sub-package), wrappers (prefix, metrics, fault injection) and an
// acceptance suite (objtest) that every implementation passes.
package objectstore

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrNotFound is returned by Get and Head for a missing key.
	ErrNotFound = errors.New("objectstore: object not found")
	// ErrExists is returned by Put with IfAbsent when the key already exists.
	ErrExists = errors.New("objectstore: object already exists")
	// ErrInvalidRange is returned by Get for an offset past the end of the object.
	ErrInvalidRange = errors.New("objectstore: invalid range")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key          string
	Size         int64
	LastModified time.Time
}

// PutOptions modify Put.
type PutOptions struct {
	// IfAbsent makes the put fail with ErrExists when the key exists
	// (If-None-Match: * on S3). Of concurrent if-absent puts of one key,
	// exactly one wins.
	IfAbsent bool
	// CRC32C, when KnownCRC32C, is data's CRC-32C (Castagnoli), which the
	// caller computed as it wrote data; a store that sends one with the
	// put for the server to verify (s3store) uses it instead of a pass of
	// its own over data. A wrong one makes the server refuse the put.
	CRC32C      uint32
	KnownCRC32C bool
}

// Store is the object storage floe needs. Implementations are safe for
// concurrent use. Errors other than the sentinels above are treated as
// transient by callers (retriable), unless wrapped in a *PermanentError.
type Store interface {
	// Put stores data under key, atomically: readers see all or nothing.
	Put(ctx context.Context, key string, data []byte, opts PutOptions) error
	// Get reads length bytes from off. length < 0 reads to the end. A range
	// running past the end is truncated to the end; off > size is ErrInvalidRange.
	Get(ctx context.Context, key string, off, length int64) ([]byte, error)
	// Head returns the object's info or ErrNotFound.
	Head(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. An error from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
}

// PermanentError marks a failure that retrying will not fix (bad
// credentials, missing bucket).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is marked permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}
