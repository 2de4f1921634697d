package bench

import (
	"encoding/binary"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// recordArena holds one floe producer's record keys and values, reused
// from one Send to the next: the harness's own allocation per record
// (a key, a value and its filler written anew: ~1 KiB of garbage and a
// copy per record, the harness's GC and much of its CPU at tens of
// thousands of records/s) would otherwise load the same 2 cores as the
// agents it measures. Safe because the batch data plane's Send encodes
// keys and values into the request's batches before it returns, and one
// producer's Sends are sequential (the per-record API, whose request holds
// the values, takes a fresh arena every time). Records are keyed by
// producer id and schedule index.
type recordArena struct {
	size   int
	values []byte // slots of size bytes, filler written once
	keys   []byte // slots of 8 bytes
}

// records returns b's records of producer id, valid until the next call.
func (a *recordArena) records(id uint64, b *Batch) []*floev1.Record {
	n := len(b.Intended)
	if len(a.values) < n*a.size {
		a.values = make([]byte, n*a.size)
		for off := 0; off < len(a.values); off += a.size {
			fillValue(a.values[off : off+a.size])
		}
		a.keys = make([]byte, n*8)
	}
	recs := make([]*floev1.Record, n)
	msgs := make([]floev1.Record, n)
	for i, t := range b.Intended {
		idx := uint64(b.First) + uint64(i)
		key := a.keys[i*8 : i*8+8 : i*8+8]
		binary.BigEndian.PutUint64(key, id<<40|idx)
		v := a.values[i*a.size : (i+1)*a.size : (i+1)*a.size]
		stampValue(v, t, idx)
		msgs[i].Key, msgs[i].Value = key, v
		recs[i] = &msgs[i]
	}
	return recs
}
