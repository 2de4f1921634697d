package tableread

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

func TestMakeNoZero(t *testing.T) {
	for _, n := range []int{0, -1, 1, 7, 64 << 10, arenaChunk, arenaChunk + 3} {
		b := makeNoZero(n)
		if len(b) != 0 || cap(b) != max(n, 0) {
			t.Errorf("makeNoZero(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
}

// dirtyHeap leaves freed memory full of a non-zero byte, so that memory
// handed out unzeroed next most likely holds it.
func dirtyHeap() {
	for range 8 {
		b := make([]byte, 4<<20)
		for i := range b {
			b[i] = poisonByte
		}
		runtime.KeepAlive(b)
	}
	runtime.GC()
}

// TestRebuildOnUnzeroedMemory: the tails' chunks and the rebuilt
// batches are not zeroed (makeNoZero); every byte of a batch is written
// all the same: each is byte for byte EncodeAt's of its records, made on
// a heap left dirty, many times over (chunks filled and started anew),
// and on batch buffers of a pool that poisons what is handed back (odd
// rounds: their buffers are the even rounds' own, reused).
func TestRebuildOnUnzeroedMemory(t *testing.T) {
	mem := newBatchPool()
	mem.poison = true
	rng := rand.New(rand.NewPCG(31, 7))
	bytesOf := func(max int) []byte {
		switch rng.IntN(5) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, rng.IntN(max))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	for round := range 30 {
		dirtyHeap()
		var a arena
		var rows []row
		var recs []kbatch.Record
		off := int64(rng.IntN(1 << 30))
		for range 1 + rng.IntN(3000) {
			r := kbatch.Record{Offset: off, Timestamp: 1_700_000_000_000 + int64(rng.IntN(2000)), Key: bytesOf(40), Value: bytesOf(3000)}
			for range rng.IntN(3) {
				r.Headers = append(r.Headers, kbatch.Header{Key: string(bytesOf(20)), Value: bytesOf(20)})
			}
			tail := a.addTail(r.Key, r.Value, len(r.Headers), func(j int) (string, []byte) { return r.Headers[j].Key, r.Headers[j].Value })
			rows = append(rows, row{part: 3, rec: recOf(r.Offset, r.Timestamp, tail)})
			recs = append(recs, r)
			off += 1 + int64(rng.IntN(3))
		}
		maxBatch := 1 + rng.IntN(256<<10)
		var pool *allocPool
		if round%2 == 1 {
			pool = mem
		}
		batches, buf, err := rebuild(rows, maxBatch, 1<<30, pool)
		if err != nil {
			t.Fatal(err)
		}
		at := 0
		for i, b := range batches {
			n := int(b.Records)
			want, err := kbatch.EncodeAt(recs[at:at+n], kbatch.DefaultEncodeOptions())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Data, want) {
				t.Fatalf("round %d batch %d (records %d to %d): %d bytes differ from EncodeAt's %d", round, i, at, at+n, len(b.Data), len(want))
			}
			at += n
		}
		if at != len(recs) {
			t.Fatalf("round %d: %d of %d records rebuilt", round, at, len(recs))
		}
		if pool != nil {
			pool.Free(buf)
		}
	}
	if _, reused := mem.stats(); reused == 0 {
		t.Fatal("no batch buffer was reused: the pooled rounds show nothing")
	}
}
