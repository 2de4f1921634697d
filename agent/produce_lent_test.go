package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/grpcwire"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// poisonPool overwrites every buffer given back to it: a byte read after
// its buffer was freed is 0xEE.
type poisonPool struct {
	inner *grpcwire.Pool
	puts  atomic.Int64
}

func (p *poisonPool) Get(n int) *[]byte { return p.inner.Get(n) }

func (p *poisonPool) Put(b *[]byte) {
	for i := range *b {
		(*b)[i] = 0xEE
	}
	p.puts.Add(1)
	p.inner.Put(b)
}

// TestProduceBatchesLentUntilLaidOut: a ProduceBatchesStream request's
// batches point into gRPC's receive buffer (not copied by protobuf), lent
// to the batcher until it copies them into their file. Freed receive
// buffers are poisoned and the linger outlasts several requests, so a
// buffer given back before its batches are laid out (the stream's hold
// dropped at the next receive, or the batcher's at append) would store
// poison: every record must read back as sent.
func TestProduceBatchesLentUntilLaidOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := sqlite.Open(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 40 * time.Millisecond
	pool := &poisonPool{inner: grpcwire.NewPool()}
	n := startNode(t, meta, objectstore.NewMemory(), acfg, bcfg, agent.GRPCServerOptionsPool(acfg, pool)...)
	const parts, rounds, perSend = 2, 12, 40
	if _, err := n.c.CreateTopic(ctx, "lent", parts, nil); err != nil {
		t.Fatal(err)
	}
	p, err := n.c.NewProducer(ctx, "lent", client.ProducerOptions{Batches: true})
	if err != nil {
		t.Fatal(err)
	}
	value := func(part int32, i int) []byte {
		head := fmt.Sprintf("p%d-%06d|", part, i)
		return append([]byte(head), bytes.Repeat([]byte{byte(i)}, 1000-len(head))...)
	}
	for r := range rounds {
		for part := int32(0); part < parts; part++ {
			recs := make([]*floev1.Record, perSend)
			for i := range recs {
				recs[i] = client.Value(nil, value(part, r*perSend+i))
			}
			// 40 KiB per request: several 16 KiB frames, so the
			// request is gathered into one pooled buffer.
			if err := p.Send(part, recs, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	for part := int32(0); part < parts; part++ {
		resp, err := n.c.Fetch(ctx, "lent", part, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		recs := resp.GetRecords()
		for off := 0; off < rounds*perSend; {
			for _, rec := range recs {
				if want := value(part, off); !bytes.Equal(rec.GetValue(), want) {
					t.Fatalf("partition %d offset %d: value %.24q…, want %.24q…", part, off, rec.GetValue(), want)
				}
				off++
			}
			if off < rounds*perSend {
				if resp, err = n.c.Fetch(ctx, "lent", part, int64(off), 0, 0); err != nil {
					t.Fatal(err)
				}
				if recs = resp.GetRecords(); len(recs) == 0 {
					t.Fatalf("partition %d: nothing at %d", part, off)
				}
			}
		}
	}
	if pool.puts.Load() == 0 {
		t.Fatal("no receive buffer was given back: nothing was poisoned")
	}
}
