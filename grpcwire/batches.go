package grpcwire

import (
	"encoding/binary"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc/mem"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Batches is the batches field of an answer (FetchResponse.batches,
// SubscribeResponse.batches): stored Kafka v2 record batches back to back,
// each with its base offset set, held as segments that reference the
// bytes they were read from instead of a copy. A batch's first 8 bytes
// (its base offset, which its CRC does not cover) are written into a
// small buffer of the answer's own; the rest of the batch is referenced
// where it lies (the read cache's file buffer, a ranged read). Batches of
// at most copyMax bytes are copied whole into the answer's own buffer:
// gRPC only counts references of larger buffers.
//
// The codec writes the segments into gRPC's frames and calls the release
// function given to NewBatches once gRPC has written the last frame (or
// dropped the message): only then may the referenced bytes be reused. An
// answer that is never marshalled is given back with Drop; one that is
// neither marshalled nor dropped keeps its references forever, which is
// safe (their buffers are never reused; the garbage collector takes them).
type Batches struct {
	segs    [][]byte // in order; shared[i] tells which reference outside bytes
	shared  []bool
	own     []byte // the answer's own bytes: base offsets, small batches (segments point into it)
	size    int
	release func()       // nil: nothing to give back
	state   atomic.Int32 // batchesOpen, then batchesSent once marshalled or dropped
}

const (
	batchesOpen int32 = iota
	batchesSent
)

// copyMax is the largest batch copied whole into the answer: gRPC (mem)
// counts references only for buffers above mem.BufferPoolingThreshold
// (1 KiB), and a copy of a few KiB costs less than a segment.
const copyMax = 4 << 10

// ErrReused refuses an answer marshalled or used after it was sent or
// dropped.
var ErrReused = errors.New("grpcwire: batches answer used after it was sent or dropped")

// NewBatches returns an empty answer for about n batches; release (nil:
// none) is called once nothing reads the bytes that Append referenced.
func NewBatches(n int, release func()) *Batches {
	return &Batches{segs: make([][]byte, 0, 2*n), shared: make([]bool, 0, 2*n), own: make([]byte, 0, 8*n), release: release}
}

// Append adds one whole stored batch (at least the 8 bytes of its base
// offset), with its base offset set to base. batch is never written: it
// is referenced until the answer is sent, or copied when small.
func (b *Batches) Append(base int64, batch []byte) {
	n := len(batch)
	if n <= copyMax {
		s := b.take(n)
		copy(s, batch)
		binary.BigEndian.PutUint64(s, uint64(base))
		return
	}
	binary.BigEndian.PutUint64(b.take(8), uint64(base))
	b.segs = append(b.segs, batch[8:n:n])
	b.shared = append(b.shared, true)
	b.size += n - 8
}

// take returns n bytes of the answer's own, extending its last segment
// when that one lies just before them in the same buffer.
func (b *Batches) take(n int) []byte {
	if len(b.own)+n > cap(b.own) {
		// A new buffer: the segments into the old one keep it alive.
		b.own = make([]byte, 0, max(2*cap(b.own), n, 256))
	}
	at := len(b.own)
	b.own = b.own[:at+n]
	s := b.own[at : at+n : at+n]
	b.size += n
	if k := len(b.segs) - 1; k >= 0 && !b.shared[k] {
		last := b.segs[k]
		if len(last) > 0 && at >= len(last) && &b.own[at-len(last)] == &last[0] {
			b.segs[k] = b.own[at-len(last) : at+n : at+n]
			return s
		}
	}
	b.segs = append(b.segs, s)
	b.shared = append(b.shared, false)
	return s
}

// Len is the answer's length in bytes.
func (b *Batches) Len() int { return b.size }

// Bytes returns the batches in one new buffer (for a caller outside gRPC),
// and drops the answer.
func (b *Batches) Bytes() []byte {
	out := make([]byte, 0, b.size)
	for _, s := range b.segs {
		out = append(out, s...)
	}
	b.Drop()
	return out
}

// Drop gives back an answer that will not be marshalled (its references
// are released now); it does nothing after the answer was marshalled.
func (b *Batches) Drop() {
	if b.state.CompareAndSwap(batchesOpen, batchesSent) && b.release != nil {
		b.release()
	}
}

// appendTo appends the answer's segments to out; the release runs once
// gRPC has freed every shared segment.
func (b *Batches) appendTo(out mem.BufferSlice) (mem.BufferSlice, error) {
	if !b.state.CompareAndSwap(batchesOpen, batchesSent) {
		return out, ErrReused
	}
	t := &tracker{done: b.release}
	for _, sh := range b.shared {
		if sh {
			t.n.Add(1)
		}
	}
	if t.n.Load() == 0 && b.release != nil {
		b.release()
	}
	for i := range b.segs {
		if b.shared[i] {
			out = append(out, mem.NewBuffer(&b.segs[i], t))
		} else {
			out = append(out, mem.SliceBuffer(b.segs[i]))
		}
	}
	return out, nil
}

// tracker is the mem.BufferPool of an answer's shared segments: gRPC
// "puts back" each one once it has written it; the last one runs done.
type tracker struct {
	n    atomic.Int32
	done func()
}

func (t *tracker) Get(int) *[]byte { panic("grpcwire: tracker is not a pool to take from") }

func (t *tracker) Put(*[]byte) {
	if t.n.Add(-1) == 0 && t.done != nil {
		t.done()
	}
}

// SubscribeAnswer is a SubscribeResponse whose batches field is Batches
// (Resp.Batches is ignored): send it with the stream's SendMsg on a server
// whose codec is Codec.
type SubscribeAnswer struct {
	Resp    *floev1.SubscribeResponse
	Batches *Batches
}

// FetchAnswer is SubscribeAnswer for a FetchResponse.
type FetchAnswer struct {
	Resp    *floev1.FetchResponse
	Batches *Batches
}
