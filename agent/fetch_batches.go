package agent

import (
	"context"
	"fmt"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/grpcwire"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// The batch data plane's read side: FetchRequest.batches and
// SubscribeRequest.batches answer with the stored Kafka v2 record batches
// themselves, back to back, instead of records. Each batch is checked as
// stored data (kbatch.ParseStored: framing, CRC, header; the CRC only
// once: not again for a whole file verified when read) but its records
// are not decoded; its base offset, stored as 0, is set to the log's
// offset in the answer (grpcwire.Batches: the batches are referenced
// where they were read, the read cache's bytes are never written, and the
// codec writes them into gRPC's frames without a copy). Batches wholly below the requested offset are left out; the
// first one sent may start below it, and the client skips those records.

// storedRead is one read of stored batches.
type storedRead struct {
	answer  *grpcwire.Batches // the batches, base offsets set, referencing the bytes read (nil: none)
	size    int               // answer's length
	batches int
	records int // records of the batches sent (some may be below the offset)
	next    int64
}

// drop gives back r's answer when it is not sent.
func (r storedRead) drop() {
	if r.answer != nil {
		r.answer.Drop()
	}
}

// readStoredBatches reads whole batches of a partition from offset: at
// most maxBytes of them and at most MaxFetchRecords records, but at least
// one batch when any exists. A read that finds only batches below offset
// (a compacted gap) reads again from past them, at most maxEmptyReads
// times, so that a reader never waits at a gap. The answer references
// the bytes read (holding the read cache's buffers until it is sent or
// dropped): send it (sendOut, a FetchAnswer), take its Bytes, or drop it.
func (a *Agent) readStoredBatches(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (storedRead, metadata.PartitionState, error) {
	for i := 0; ; i++ {
		r, st, err := a.readStoredOnce(ctx, topicID, partition, offset, maxBytes)
		if err != nil || r.batches > 0 || r.next <= offset || r.next >= st.HighWatermark || i+1 >= maxEmptyReads {
			return r, st, err
		}
		offset = r.next
	}
}

// readStoredOnce is one read of readStoredBatches.
func (a *Agent) readStoredOnce(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (storedRead, metadata.PartitionState, error) {
	out := storedRead{next: offset}
	h := &holds{}
	refs, raw, verified, st, err := a.readRangeHeld(ctx, h, topicID, partition, offset, maxBytes)
	if err != nil || len(refs) == 0 {
		h.release()
		return out, st, err
	}
	type pick struct {
		b    []byte // a subslice of raw: never written
		base int64
	}
	var (
		picks []pick
		full  bool
	)
	fail := func(err error) (storedRead, metadata.PartitionState, error) {
		h.release()
		return storedRead{next: offset}, st, err
	}
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
				return fail(&dataLossError{Err: fmt.Errorf("agent: read batch %d of %s at byte %d: %w", r.BaseOffset, r.FileKey, at, err)})
			}
			batch := raw[i][at : at+info.BatchLength : at+info.BatchLength]
			at += info.BatchLength
			span := int64(info.LastOffsetDelta) + 1
			if base+span <= out.next {
				base += span
				count += int64(info.RecordCount)
				continue
			}
			if len(picks) > 0 && (out.size+len(batch) > maxBytes || out.records+int(info.RecordCount) > a.cfg.MaxFetchRecords) {
				full = true
				break
			}
			picks = append(picks, pick{b: batch, base: base})
			out.size += len(batch)
			out.records += int(info.RecordCount)
			base += span
			count += int64(info.RecordCount)
			out.next = base
		}
		if full {
			break
		}
		if count != int64(r.RecordCount) {
			return fail(&dataLossError{Err: fmt.Errorf("agent: batch %d of %s has %d records, metadata says %d", r.BaseOffset, r.FileKey, count, r.RecordCount)})
		}
		if base != r.LastOffset+1 {
			return fail(&dataLossError{Err: fmt.Errorf("agent: batch %d of %s ends at offset %d, metadata says %d", r.BaseOffset, r.FileKey, base-1, r.LastOffset)})
		}
		// A compacted run may end with offsets whose records are gone.
		out.next = max(out.next, base)
	}
	if len(picks) == 0 {
		h.release()
		return out, st, nil
	}
	// No copy: the answer references the batches where they were read
	// and carries their base offsets (the read cache's bytes are never
	// written); its release lets go of the cache's buffers.
	out.answer = grpcwire.NewBatches(len(picks), h.release)
	for _, p := range picks {
		out.answer.Append(p.base, p.b)
	}
	out.batches = len(picks)
	return out, st, nil
}

// zeroCopyKey marks the context of a call served through
// GRPCServerOptions, whose codec (grpcwire) writes answers' batches
// without copying them.
type zeroCopyKey struct{}

func withZeroCopy(ctx context.Context) context.Context {
	return context.WithValue(ctx, zeroCopyKey{}, true)
}

func zeroCopy(ctx context.Context) bool { return ctx.Value(zeroCopyKey{}) != nil }

// sendOut sends m on stream: its batches, when it has some, through the
// codec as a grpcwire.SubscribeAnswer (not copied), or copied into the
// message where the server's codec is not grpcwire; an answer not
// marshalled is given back.
func sendOut(stream floev1.LogService_SubscribeServer, m outMsg) error {
	if m.batches == nil {
		return stream.Send(m.resp)
	}
	defer m.batches.Drop()
	if zeroCopy(stream.Context()) {
		return stream.SendMsg(&grpcwire.SubscribeAnswer{Resp: m.resp, Batches: m.batches})
	}
	m.resp.Batches = m.batches.Bytes()
	return stream.Send(m.resp)
}

// fetchSlotKey carries a unary Fetch's fetchSlot (set by the guard's
// unary interceptor): the handler leaves its batches there, and the
// interceptor answers with them as a grpcwire.FetchAnswer.
type fetchSlotKey struct{}

type fetchSlot struct{ ans *grpcwire.FetchAnswer }

func withFetchSlot(ctx context.Context) (context.Context, *fetchSlot) {
	s := &fetchSlot{}
	return context.WithValue(ctx, fetchSlotKey{}, s), s
}

// answer is what the interceptor sends for a Fetch's resp: the slot's
// answer when the handler left one for resp.
func (s *fetchSlot) answer(resp any) any {
	if s.ans == nil {
		return resp
	}
	if resp == any(s.ans.Resp) {
		return s.ans
	}
	s.ans.Batches.Drop()
	return resp
}

// fetchBatches is Fetch with FetchRequest.batches set.
func (a *Agent) fetchBatches(ctx context.Context, topicID int64, req *floev1.FetchRequest, deadline time.Time, budget int) (*floev1.FetchResponse, error) {
	for {
		woken := a.hub.wait(topicID, req.GetPartition())
		r, st, err := a.readStoredBatches(ctx, topicID, req.GetPartition(), req.GetOffset(), budget)
		if err != nil {
			a.topics.forgetIfGone(req.GetTopic(), err)
			return nil, toStatus(err)
		}
		left := time.Until(deadline)
		if r.batches > 0 || r.next > req.GetOffset() || left <= 0 {
			a.m.fetched(r.records)
			resp := &floev1.FetchResponse{HighWatermark: st.HighWatermark, LogStartOffset: st.LogStartOffset, NextOffset: r.next}
			if r.answer == nil {
				return resp, nil
			}
			if slot, ok := ctx.Value(fetchSlotKey{}).(*fetchSlot); ok {
				slot.ans = &grpcwire.FetchAnswer{Resp: resp, Batches: r.answer}
			} else {
				resp.Batches = r.answer.Bytes()
			}
			return resp, nil
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
		r, st, err := a.readStoredBatches(ctx, topicID, p, offset, budget)
		if err != nil || r.batches == 0 {
			mem.ReleaseOwn(w)
		}
		if err != nil {
			return err
		}
		if r.batches > 0 {
			msg := &floev1.SubscribeResponse{Partition: p, HighWatermark: st.HighWatermark, NextOffset: r.next}
			if err := mem.Hold(ctx, w); err != nil {
				mem.ReleaseOwn(w)
				r.drop()
				return err
			}
			select {
			case out <- outMsg{resp: msg, weight: w, batches: r.answer}:
			case <-ctx.Done():
				mem.Release(w)
				r.drop()
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
