package agent

import (
	"context"
	"fmt"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// The batch data plane's read side: FetchRequest.batches and
// SubscribeRequest.batches answer with the stored Kafka v2 record batches
// themselves, back to back in one buffer, instead of records. Each batch is
// checked as stored data (kbatch.ParseStored: framing, CRC, header; the CRC
// only once: not again for a whole file verified when read) but its
// records are not decoded; its base offset, stored as 0, is set to the
// log's offset in the answer's copy (the read cache's bytes are never
// written). Batches wholly below the requested offset are left out; the
// first one sent may start below it, and the client skips those records.

// storedRead is one read of stored batches.
type storedRead struct {
	buf     []byte  // the batches, base offsets set
	pooled  *[]byte // buf's pooled buffer (pool set): give it back once buf is sent
	batches int
	records int // records of the batches sent (some may be below the offset)
	next    int64
}

// readStoredBatches reads whole batches of a partition from offset: at
// most maxBytes of them and at most MaxFetchRecords records, but at least
// one batch when any exists. A read that finds only batches below offset
// (a compacted gap) reads again from past them, at most maxEmptyReads
// times, so that a reader never waits at a gap.
// With pool, the answer is built in a pooled buffer (storedRead.release
// gives it back).
func (a *Agent) readStoredBatches(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int, pool bool) (storedRead, metadata.PartitionState, error) {
	for i := 0; ; i++ {
		r, st, err := a.readStoredOnce(ctx, topicID, partition, offset, maxBytes, pool)
		if err != nil || r.batches > 0 || r.next <= offset || r.next >= st.HighWatermark || i+1 >= maxEmptyReads {
			return r, st, err
		}
		offset = r.next
	}
}

// readStoredOnce is one read of readStoredBatches.
func (a *Agent) readStoredOnce(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int, pool bool) (storedRead, metadata.PartitionState, error) {
	out := storedRead{next: offset}
	refs, raw, verified, st, err := a.readRange(ctx, topicID, partition, offset, maxBytes)
	if err != nil || len(refs) == 0 {
		return out, st, err
	}
	type pick struct {
		b    []byte // a subslice of raw: never written
		base int64
	}
	var (
		picks []pick
		size  int
		full  bool
	)
	for i, r := range refs {
		// A run holds Kafka batches back to back over consecutive offset
		// ranges from its base offset (LastOffsetDelta+1 offsets each,
		// fewer records in a compacted topic). Only a run walked to its
		// end can be checked against the metadata.
		base := r.BaseOffset
		var count int64
		// One check per batch (ParseStored: bounds, CRC, header); the CRC
		// is left out for bytes of a whole file whose body CRC-32C held
		// when it was read (verified), never for a ranged read's.
		parse := kbatch.ParseStored
		if verified[i] {
			parse = kbatch.ParseStoredVerified
		}
		for at := 0; at < len(raw[i]); {
			info, err := parse(raw[i][at:])
			if err != nil {
				return storedRead{next: offset}, st, &dataLossError{Err: fmt.Errorf("agent: read batch %d of %s at byte %d: %w", r.BaseOffset, r.FileKey, at, err)}
			}
			batch := raw[i][at : at+info.BatchLength : at+info.BatchLength]
			at += info.BatchLength
			span := int64(info.LastOffsetDelta) + 1
			if base+span <= out.next {
				base += span
				count += int64(info.RecordCount)
				continue
			}
			if len(picks) > 0 && (size+len(batch) > maxBytes || out.records+int(info.RecordCount) > a.cfg.MaxFetchRecords) {
				full = true
				break
			}
			picks = append(picks, pick{b: batch, base: base})
			size += len(batch)
			out.records += int(info.RecordCount)
			base += span
			count += int64(info.RecordCount)
			out.next = base
		}
		if full {
			break
		}
		if count != int64(r.RecordCount) {
			return storedRead{next: offset}, st, &dataLossError{Err: fmt.Errorf("agent: batch %d of %s has %d records, metadata says %d", r.BaseOffset, r.FileKey, count, r.RecordCount)}
		}
		if base != r.LastOffset+1 {
			return storedRead{next: offset}, st, &dataLossError{Err: fmt.Errorf("agent: batch %d of %s ends at offset %d, metadata says %d", r.BaseOffset, r.FileKey, base-1, r.LastOffset)}
		}
		// A compacted run may end with offsets whose records are gone.
		out.next = max(out.next, base)
	}
	// One copy into the answer, where the base offsets are written: a
	// pooled buffer for a subscription (given back once sent), else a new
	// one (a Fetch answer is marshalled after the handler returns).
	if pool && len(picks) > 0 {
		out.pooled = a.loads.RespBuf(size)
		out.buf = *out.pooled
	} else {
		out.buf = make([]byte, 0, size)
	}
	for _, p := range picks {
		at := len(out.buf)
		out.buf = append(out.buf, p.b...)
		if err := kbatch.SetBaseOffset(out.buf[at:], p.base); err != nil {
			return storedRead{next: offset}, st, err
		}
	}
	out.batches = len(picks)
	if out.pooled != nil {
		*out.pooled = out.buf
	}
	return out, st, nil
}

// release gives r's pooled buffer back once msg, which carries it, is
// sent; nil when r has none.
func (a *Agent) release(r storedRead, msg *floev1.SubscribeResponse) func() {
	if r.pooled == nil {
		return nil
	}
	return func() {
		msg.Batches = nil
		a.loads.PutRespBuf(r.pooled)
	}
}

// fetchBatches is Fetch with FetchRequest.batches set.
func (a *Agent) fetchBatches(ctx context.Context, topicID int64, req *floev1.FetchRequest, deadline time.Time, budget int) (*floev1.FetchResponse, error) {
	for {
		woken := a.hub.wait(topicID, req.GetPartition())
		r, st, err := a.readStoredBatches(ctx, topicID, req.GetPartition(), req.GetOffset(), budget, false)
		if err != nil {
			a.topics.forgetIfGone(req.GetTopic(), err)
			return nil, toStatus(err)
		}
		left := time.Until(deadline)
		if r.batches > 0 || r.next > req.GetOffset() || left <= 0 {
			a.m.fetched(r.records)
			return &floev1.FetchResponse{Batches: r.buf, HighWatermark: st.HighWatermark, LogStartOffset: st.LogStartOffset, NextOffset: r.next}, nil
		}
		if err := a.sleep(ctx, woken, min(left, a.cfg.PollInterval)); err != nil {
			return nil, toStatus(err)
		}
	}
}

// followBatches is follow with SubscribeRequest.batches set: each message
// carries whole stored batches and the offset to read next.
func (a *Agent) followBatches(ctx context.Context, topicID int64, p int32, offset int64, budget int, mem *subBuffer, out chan<- outMsg) error {
	w := int64(budget)
	for {
		woken := a.hub.wait(topicID, p)
		if err := mem.Acquire(ctx, w); err != nil {
			return err
		}
		r, st, err := a.readStoredBatches(ctx, topicID, p, offset, budget, true)
		if err != nil || r.batches == 0 {
			mem.ReleaseOwn(w)
		}
		if err != nil {
			return err
		}
		if r.batches > 0 {
			msg := &floev1.SubscribeResponse{Partition: p, Batches: r.buf, HighWatermark: st.HighWatermark, NextOffset: r.next}
			if err := mem.Hold(ctx, w); err != nil {
				mem.ReleaseOwn(w)
				return err
			}
			select {
			case out <- outMsg{resp: msg, weight: w, release: a.release(r, msg)}:
			case <-ctx.Done():
				mem.Release(w)
				return ctx.Err()
			}
			a.m.fetched(r.records)
			offset = r.next
			continue
		}
		offset = max(offset, r.next) // past a compacted gap
		if err := a.sleep(ctx, woken, a.cfg.PollInterval); err != nil {
			return err
		}
	}
}
