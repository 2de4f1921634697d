package grpcwire

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// countingPool is a Pool that counts what is given back.
type countingPool struct {
	*Pool
	puts int
}

func (p *countingPool) Put(bp *[]byte) { p.puts++; p.Pool.Put(bp) }

// TestLentReleasesReceiveBuffer: a Lent's batches reference the pooled
// buffer the frames were gathered into, which goes back to the pool only on
// Release (a plain message never gives it back), and the next answer
// decoded into the same Lent is its own.
func TestLentReleasesReceiveBuffer(t *testing.T) {
	pool := &countingPool{Pool: NewPool()}
	c := NewCodec(pool)
	_, want := buildBatches(nil)
	src := &floev1.SubscribeResponse{Partition: 4, HighWatermark: 90, NextOffset: 80, Batches: want}
	wire, err := proto.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	frames := func() mem.BufferSlice { // as gRPC hands them over: split, not pooled here
		return mem.BufferSlice{mem.SliceBuffer(wire[:100]), mem.SliceBuffer(wire[100:])}
	}

	var plain floev1.SubscribeResponse
	if err := c.Unmarshal(frames(), &plain); err != nil || !proto.Equal(&plain, src) {
		t.Fatalf("plain: %v, %v", err, &plain)
	}
	if pool.puts != 0 {
		t.Fatalf("a plain message gave its buffer back (%d puts) while it references it", pool.puts)
	}

	l := NewLent()
	if err := c.Unmarshal(frames(), l); err != nil || !proto.Equal(l.Resp, src) {
		t.Fatalf("lent: %v, %v", err, l.Resp)
	}
	if pool.puts != 0 {
		t.Fatalf("the buffer went back (%d puts) before Release", pool.puts)
	}
	first := l.Resp.GetBatches()
	l.Release()
	l.Release() // twice: once given back
	if pool.puts != 1 {
		t.Fatalf("Release gave back %d buffers, want 1", pool.puts)
	}

	// The next answer (the same layout) into the same Lent: reset, decoded,
	// the buffer reused.
	next := &floev1.SubscribeResponse{Partition: 5, HighWatermark: 91, NextOffset: 81, Batches: bytes.Repeat([]byte{7}, len(want))}
	wire2, _ := proto.Marshal(next)
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire2[:50]), mem.SliceBuffer(wire2[50:])}, l); err != nil || !proto.Equal(l.Resp, next) {
		t.Fatalf("second answer: %v, %v", err, l.Resp)
	}
	if &first[0] != &l.Resp.GetBatches()[0] {
		t.Errorf("the released buffer was not reused for the next answer")
	}
	l.Release()

	// A record answer references nothing: its buffer goes back at once.
	recs := &floev1.SubscribeResponse{Records: []*floev1.Record{{Offset: 1, Value: bytes.Repeat([]byte{1}, 3000)}}}
	wire3, _ := proto.Marshal(recs)
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire3[:10]), mem.SliceBuffer(wire3[10:])}, l); err != nil || !proto.Equal(l.Resp, recs) {
		t.Fatalf("record answer: %v, %v", err, l.Resp)
	}
	if pool.puts != 3 {
		t.Errorf("after a record answer %d buffers given back, want 3", pool.puts)
	}
}
