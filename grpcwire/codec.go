// Package grpcwire is floe's gRPC codec: plain protobuf on the wire, with
// the answers that carry stored Kafka batches (FetchResponse.batches,
// SubscribeResponse.batches) written and read without copying the
// batches through a protobuf message.
//
// On the way out (the agent), Codec.Marshal writes a SubscribeAnswer or
// FetchAnswer — the message's other fields and Batches, the stored
// batches as segments that reference the read cache — into gRPC's frames:
// the fields and length prefix are encoded by hand in front of the
// segments, exactly as proto.Marshal lays out the same message (a golden
// test holds the two equal). A plain FetchResponse or SubscribeResponse
// with batches is written the same way, its batches referenced, not
// copied. On the way in (the Go client), Codec.Unmarshal of those two
// messages points Batches into the received buffer instead of copying it.
// Every other message, and these two with records, an assignment or
// unknown fields, goes through protobuf as grpc-go's own codec does, with
// buffers from Pool (not zeroed).
package grpcwire

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Name is the codec's name: it speaks protobuf ("proto"), so it replaces
// grpc-go's proto codec where it is forced (grpc.ForceServerCodecV2,
// grpc.ForceCodecV2).
const Name = "proto"

// Codec is the encoding.CodecV2 of the package doc.
type Codec struct {
	pool mem.BufferPool
}

var _ encoding.CodecV2 = (*Codec)(nil)

// NewCodec returns a codec taking its marshal and receive buffers from pool
// (nil: a new Pool).
func NewCodec(pool mem.BufferPool) *Codec {
	if pool == nil {
		pool = NewPool()
	}
	return &Codec{pool: pool}
}

// Name returns Name.
func (c *Codec) Name() string { return Name }

// Marshal encodes v (a proto.Message, SubscribeAnswer or FetchAnswer).
func (c *Codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *SubscribeAnswer:
		return c.marshalBatches(subscribeHead(m.Resp), m.Resp.GetNextOffset(), 6, m.Batches, nil)
	case *FetchAnswer:
		return c.marshalBatches(fetchHead(m.Resp), 0, 0, m.Batches, nil)
	case *floev1.SubscribeResponse:
		if plainBatches(m, len(m.GetRecords()) == 0 && m.GetAssignment() == nil) {
			return c.marshalBatches(subscribeHead(m), m.GetNextOffset(), 6, nil, m.GetBatches())
		}
	case *floev1.FetchResponse:
		if plainBatches(m, len(m.GetRecords()) == 0) {
			return c.marshalBatches(fetchHead(m), 0, 0, nil, m.GetBatches())
		}
	}
	msg, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("grpcwire: cannot marshal %T: not a proto.Message", v)
	}
	size := proto.Size(msg)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := proto.Marshal(msg)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	bp := c.pool.Get(size)
	b, err := proto.MarshalOptions{}.MarshalAppend((*bp)[:0], msg)
	if err != nil {
		c.pool.Put(bp)
		return nil, err
	}
	*bp = b
	return mem.BufferSlice{mem.NewBuffer(bp, c.pool)}, nil
}

// plainBatches reports whether m, a FetchResponse or SubscribeResponse,
// takes the batches path: batches and nothing that path does not encode.
func plainBatches(m interface {
	proto.Message
	GetBatches() []byte
}, simple bool) bool {
	return simple && len(m.GetBatches()) > 0 && len(m.ProtoReflect().GetUnknown()) == 0
}

// subscribeHead encodes a SubscribeResponse's fields before batches (5):
// partition (1) and high_watermark (3).
func subscribeHead(m *floev1.SubscribeResponse) []byte {
	var b []byte
	if v := m.GetPartition(); v != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v))
	}
	if v := m.GetHighWatermark(); v != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v))
	}
	return b
}

// fetchHead encodes a FetchResponse's fields before batches (5):
// high_watermark (2), log_start_offset (3), next_offset (4).
func fetchHead(m *floev1.FetchResponse) []byte {
	var b []byte
	for _, f := range [...]struct {
		num protowire.Number
		v   int64
	}{{2, m.GetHighWatermark()}, {3, m.GetLogStartOffset()}, {4, m.GetNextOffset()}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(f.v))
		}
	}
	return b
}

// marshalBatches lays out head, field 5 (the batches: bs's segments, or
// plain referenced as it is) and, when tailNum > 0 and tail is not 0, the
// varint field tailNum.
func (c *Codec) marshalBatches(head []byte, tail int64, tailNum protowire.Number, bs *Batches, plain []byte) (mem.BufferSlice, error) {
	n := len(plain)
	if bs != nil {
		n = bs.Len()
	}
	if n > 0 {
		head = protowire.AppendTag(head, 5, protowire.BytesType)
		head = protowire.AppendVarint(head, uint64(n))
	}
	out := mem.BufferSlice{mem.SliceBuffer(head)}
	switch {
	case bs != nil && n > 0:
		var err error
		if out, err = bs.appendTo(out); err != nil {
			return nil, err
		}
	case bs != nil:
		bs.Drop()
	case n > 0:
		out = append(out, mem.SliceBuffer(plain))
	}
	if tailNum > 0 && tail != 0 {
		var t []byte
		t = protowire.AppendTag(t, tailNum, protowire.VarintType)
		t = protowire.AppendVarint(t, uint64(tail))
		out = append(out, mem.SliceBuffer(t))
	}
	return out, nil
}

// Unmarshal decodes data into v, a proto.Message. A FetchResponse's or
// SubscribeResponse's batches then reference the received bytes. v may
// also be a *Lent (its Resp is reset and decoded; its batches reference a
// pooled buffer that Lent.Release gives back).
func (c *Codec) Unmarshal(data mem.BufferSlice, v any) error {
	lent, _ := v.(*Lent)
	if lent != nil {
		lent.Release()
		if lent.Resp == nil {
			lent.Resp = new(floev1.SubscribeResponse)
		} else {
			proto.Reset(lent.Resp)
		}
		v = lent.Resp
	}
	msg, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("grpcwire: cannot unmarshal into %T: not a proto.Message", v)
	}
	var setBatches func([]byte)
	switch m := v.(type) {
	case *floev1.FetchResponse:
		setBatches = func(b []byte) { m.Batches = b }
	case *floev1.SubscribeResponse:
		setBatches = func(b []byte) { m.Batches = b }
	}
	var buf mem.Buffer
	if len(data) == 1 {
		buf = data[0]
		buf.Ref()
	} else {
		buf = data.MaterializeToBuffer(c.pool)
	}
	b := buf.ReadOnlyData()
	if setBatches != nil {
		kept, err := unmarshalAliased(b, msg, setBatches)
		switch {
		case kept && lent != nil:
			lent.buf = buf // given back by lent.Release
			return err
		case kept || err != nil:
			// The message points into buf: never given back, so never
			// reused (the garbage collector takes it with the message).
			return err
		}
	} else if err := proto.Unmarshal(b, msg); err != nil {
		buf.Free()
		return err
	}
	buf.Free()
	return nil
}

// unmarshalAliased decodes b into m with field 5 (batches, bytes) set by
// setBatches to a subslice of b (kept: m references b), the other fields
// through protobuf, so that m is exactly what proto.Unmarshal gives.
func unmarshalAliased(b []byte, m proto.Message, setBatches func([]byte)) (kept bool, err error) {
	var (
		batches []byte
		found   bool
		spans   [][2]int // field 5's occurrences in b
	)
	for at := 0; at < len(b); {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 {
			return false, proto.Unmarshal(b, m) // malformed: protobuf's own error
		}
		var k int
		if num == 5 && typ == protowire.BytesType {
			var v []byte
			if v, k = protowire.ConsumeBytes(b[at+n:]); k >= 0 {
				batches, found = v, true
				spans = append(spans, [2]int{at, at + n + k})
			}
		} else {
			k = protowire.ConsumeFieldValue(num, typ, b[at+n:])
		}
		if k < 0 {
			return false, proto.Unmarshal(b, m)
		}
		at += n + k
	}
	if !found {
		return false, proto.Unmarshal(b, m)
	}
	// The other fields (a few bytes in a batches answer) without field 5.
	var rest []byte
	prev := 0
	for _, s := range spans {
		rest = append(rest, b[prev:s[0]]...)
		prev = s[1]
	}
	rest = append(rest, b[prev:]...)
	if err := proto.Unmarshal(rest, m); err != nil {
		return false, err
	}
	if len(batches) == 0 {
		return false, nil
	}
	setBatches(batches[:len(batches):len(batches)])
	return true, nil
}
