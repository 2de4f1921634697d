package objectstore

import "context"

// A caller that holds what a Get returns for a while and then gives it
// back at a known moment (the agent's read cache: whole files of a few
// MiB, released once the cache and every stream that sends from them let
// go) can let a store that keeps its objects in local files map the
// object's bytes instead of reading them: the directory store then
// returns a private, copy-on-write mapping of the file, whose pages are
// the kernel's page cache itself. That saves the read's copy out of the
// page cache and, for a buffer whose pages the runtime gave back to the
// operating system, a page fault and a zeroing per 4 KiB; a catch-up read
// through the directory store spent about a quarter of the agent's CPU in
// that copy. Writes to the bytes stay private (copy-on-write), so a caller
// may treat them as any buffer.
//
// The store hands the mapping's release to the Keep in the context, once
// per Get that mapped; the caller must call it exactly once, after the
// last use of the bytes (the bytes are unmapped: a use after it faults).
// A Get that did not map (another store, a short range, a platform
// without mappings) never calls Keep. Wrappers pass the context on, so
// they need no change.

// Keep receives the release of one mapped Get.
type Keep func(release func())

type mappingKey struct{}

// WithMapping returns ctx whose Gets may map the objects' bytes, handing
// each mapping's release to keep.
func WithMapping(ctx context.Context, keep Keep) context.Context {
	return context.WithValue(ctx, mappingKey{}, keep)
}

// mappingOf returns the context's Keep, or nil.
func mappingOf(ctx context.Context) Keep {
	k, _ := ctx.Value(mappingKey{}).(Keep)
	return k
}

// MinMappedBytes is the shortest range the directory store maps: below
// it a read costs less than a mapping's set-up and tear-down.
const MinMappedBytes = 256 << 10
