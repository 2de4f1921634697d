package agent

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/time/rate"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// readBatches is groupSession.read in batches mode: it follows one
// partition from r.start, handing stored batches (base offsets set, see
// fetch_batches.go) to the sender. The first batch may start below the
// partition's start; the client skips records below the start offset of
// its AssignedPartition, then below what it has handed over.
func (s *groupSession) readBatches(ctx context.Context, p int32, r *groupReader) error {
	a, w, offset := s.a, int64(s.budget), r.start
	for {
		woken := a.hub.wait(s.topic.ID, p)
		if err := s.mem.Acquire(ctx, w); err != nil {
			return err
		}
		rd, st, err := a.readStoredBatches(ctx, s.topic.ID, p, offset, s.budget)
		if err != nil || rd.batches == 0 {
			s.mem.ReleaseOwn(w)
		}
		var oor *metadata.OffsetOutOfRangeError
		if errors.As(err, &oor) && offset < oor.LogStartOffset {
			a.log.Warn("group position behind the log start, skipping ahead", "group", s.group, "topic", s.topic.Name,
				"partition", p, "offset", offset, "log_start_offset", oor.LogStartOffset)
			offset = oor.LogStartOffset
			continue
		}
		if err != nil {
			return err
		}
		if rd.batches > 0 {
			msg := &floev1.SubscribeResponse{Partition: p, HighWatermark: st.HighWatermark, NextOffset: rd.next}
			if err := s.mem.Hold(ctx, w); err != nil {
				s.mem.ReleaseOwn(w)
				rd.drop()
				return err
			}
			select {
			case s.out <- outMsg{resp: msg, weight: w, batches: rd.answer, gen: r.gen}:
			case <-ctx.Done():
				s.mem.Release(w)
				rd.drop()
				return ctx.Err()
			}
			r.handed.Store(rd.next)
			a.m.fetched(rd.records)
			offset = rd.next
			if err := a.replayWaitBytes(ctx, s.limiter, st.HighWatermark-rd.next, rd.size); err != nil {
				return err
			}
			continue
		}
		if rd.next > offset { // past a compacted gap: read on at once
			offset = rd.next
			continue
		}
		if err := a.sleep(ctx, woken, a.cfg.PollInterval); err != nil {
			return err
		}
	}
}

// replayWaitBytes is replayWait for n bytes of batches: the replay budget
// is charged with the batches' stored bytes.
func (a *Agent) replayWaitBytes(ctx context.Context, lim *rate.Limiter, lag int64, n int) error {
	if lim == nil || lag < a.cfg.ReplayMinLagRecords {
		return nil
	}
	for n > 0 {
		c := min(n, lim.Burst())
		if err := lim.WaitN(ctx, c); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("replay budget: %w", err)
		}
		n -= c
	}
	return nil
}
