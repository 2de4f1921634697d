package objectstore

import "context"

// A Get reads an object's bytes into a fresh buffer. A caller that keeps
// such buffers and reuses them (the agent's read cache: whole files of a
// few MiB, loaded back to back during a catch-up) passes a source of
// buffers in the context instead: the stores that read into a buffer of
// their own (the local directory, S3) take it from there. A fresh buffer
// costs a zeroing pass and, once the runtime has returned its pages to the
// operating system, a page fault per 4 KiB on the first write; a reused
// one costs neither. Wrappers pass the context on, so they need no change.
//
// The buffer a store returns may still be one of its own (a store that
// keeps objects in memory returns a copy; a fault injector may substitute
// bytes): callers that recycle buffers check that what came back is the
// buffer they handed out (OwnBuffer) before reusing it.

// Buffers hands out a buffer of length n (any capacity); its contents are
// overwritten by the read.
type Buffers func(n int) []byte

type buffersKey struct{}

// WithBuffers returns ctx whose Gets read into buffers from b.
func WithBuffers(ctx context.Context, b Buffers) context.Context {
	return context.WithValue(ctx, buffersKey{}, b)
}

// Buffer returns a buffer of length n for a Get's body: from the context's
// Buffers when it has one, else a fresh one.
func Buffer(ctx context.Context, n int) []byte {
	if b, ok := ctx.Value(buffersKey{}).(Buffers); ok && b != nil {
		if buf := b(n); len(buf) == n {
			return buf
		}
	}
	return make([]byte, n)
}

// OwnBuffer reports whether got starts where buf does: the bytes a Get
// returned are (a prefix of) the buffer the caller handed out.
func OwnBuffer(got, buf []byte) bool {
	return len(got) > 0 && cap(buf) > 0 && &got[0] == &buf[:1][0]
}

// A Get may also show its body's bytes to the caller as they arrive, so
// that the caller hashes them while they are still in the processor's
// caches (the agent checks each whole file it loads against its CRC-32C):
// a ReadObserver in the context. A store that reads into one buffer calls
// it with consecutive chunks of the buffer it returns, each with its offset
// there, from 0 on; a store may also not call it at all, and a read that
// starts afresh starts again at 0. So a caller checks what it was shown
// (ObservedAll) before it relies on it.

// ReadObserver sees the chunk p of a Get's buffer at offset off. It must
// not keep p or change it.
type ReadObserver func(off int, p []byte)

type observerKey struct{}

// WithReadObserver returns ctx whose Gets show their bytes to o.
func WithReadObserver(ctx context.Context, o ReadObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// Observer returns the context's ReadObserver, or nil.
func Observer(ctx context.Context) ReadObserver {
	o, _ := ctx.Value(observerKey{}).(ReadObserver)
	return o
}
