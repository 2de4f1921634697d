package agent

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/grpcwire"
	"github.com/floe-broker/floe/metadata"
)

const defaultMaxBytes = 1 << 20

func (a *Agent) fetchBudget(maxBytes int32) int {
	if maxBytes <= 0 {
		return min(defaultMaxBytes, a.cfg.MaxFetchBytes)
	}
	return min(int(maxBytes), a.cfg.MaxFetchBytes)
}

// Fetch implements floev1.LogServiceServer.
func (a *Agent) Fetch(ctx context.Context, req *floev1.FetchRequest) (*floev1.FetchResponse, error) {
	if req.GetMaxWaitMs() < 0 || req.GetMaxBytes() < 0 {
		return nil, errf(codes.InvalidArgument, "fetch: max_wait_ms and max_bytes must not be negative")
	}
	t, err := a.topicPartition(ctx, req.GetTopic(), req.GetPartition())
	if err != nil {
		return nil, err
	}
	wait := min(time.Duration(req.GetMaxWaitMs())*time.Millisecond, a.cfg.MaxWait)
	deadline := time.Now().Add(wait)
	budget := a.fetchBudget(req.GetMaxBytes())
	if req.GetBatches() {
		return a.fetchBatches(ctx, t.ID, req, deadline, budget) // fetch_batches.go
	}
	for {
		// Take the wake-up channel before looking, so a commit landing in
		// between is not missed.
		woken := a.hub.wait(t.ID, req.GetPartition())
		recs, st, next, err := a.readRecords(ctx, t.ID, req.GetPartition(), req.GetOffset(), budget)
		if err != nil {
			a.topics.forgetIfGone(req.GetTopic(), err)
			return nil, toStatus(err)
		}
		left := time.Until(deadline)
		if len(recs) > 0 || next > req.GetOffset() || left <= 0 { // next passes a compacted gap
			a.m.fetched(len(recs))
			return &floev1.FetchResponse{Records: recs, HighWatermark: st.HighWatermark, LogStartOffset: st.LogStartOffset, NextOffset: next}, nil
		}
		if err := a.sleep(ctx, woken, min(left, a.cfg.PollInterval)); err != nil {
			return nil, toStatus(err)
		}
	}
}

// sleep waits for a wake-up, d, or the end of ctx.
func (a *Agent) sleep(ctx context.Context, woken <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-woken:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// ListOffsets implements floev1.LogServiceServer.
func (a *Agent) ListOffsets(ctx context.Context, req *floev1.ListOffsetsRequest) (*floev1.ListOffsetsResponse, error) {
	t, err := a.topics.get(ctx, req.GetTopic())
	if err != nil {
		return nil, toStatus(err)
	}
	parts, err := partitionsOf(t, req.GetPartitions(), int(metadata.MaxPartitions))
	if err != nil {
		return nil, err
	}
	var spec metadata.OffsetSpec
	switch req.GetSpec() {
	case floev1.OffsetSpec_OFFSET_SPEC_LATEST:
		spec = metadata.OffsetLatest
	case floev1.OffsetSpec_OFFSET_SPEC_EARLIEST:
		spec = metadata.OffsetEarliest
	case floev1.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
		spec = metadata.OffsetTimestamp
	default:
		return nil, errf(codes.InvalidArgument, "list offsets: unknown spec %d", req.GetSpec())
	}
	resp := &floev1.ListOffsetsResponse{}
	for _, p := range parts {
		off, err := a.listOffset(ctx, t.ID, p, spec, req.GetTimestampMs())
		if err != nil {
			a.topics.forgetIfGone(req.GetTopic(), err)
			return nil, toStatus(err)
		}
		resp.Offsets = append(resp.Offsets, &floev1.PartitionOffset{Partition: p, Offset: off})
	}
	return resp, nil
}

// partitionsOf validates the requested partitions; none means all.
func partitionsOf(t metadata.Topic, req []int32, limit int) ([]int32, error) {
	if len(req) == 0 {
		if int(t.Partitions) > limit {
			return nil, errf(codes.InvalidArgument, "topic %q has %d partitions, more than the limit of %d per request: name them", t.Name, t.Partitions, limit)
		}
		out := make([]int32, t.Partitions)
		for i := range out {
			out[i] = int32(i)
		}
		return out, nil
	}
	if len(req) > limit {
		return nil, errf(codes.InvalidArgument, "%d partitions requested, limit %d", len(req), limit)
	}
	seen := make(map[int32]bool, len(req))
	for _, p := range req {
		if p < 0 || p >= t.Partitions {
			return nil, errf(codes.NotFound, "partition %d of topic %q does not exist (it has %d)", p, t.Name, t.Partitions)
		}
		if seen[p] {
			return nil, errf(codes.InvalidArgument, "partition %d named twice", p)
		}
		seen[p] = true
	}
	return req, nil
}

// Subscribe implements floev1.LogServiceServer: one reader per partition
// feeds an unbuffered channel drained by stream.Send, so a slow client
// stalls the readers (HTTP/2 flow control) instead of growing buffers.
func (a *Agent) Subscribe(req *floev1.SubscribeRequest, stream floev1.LogService_SubscribeServer) error {
	if req.GetGroup() != "" || req.GetMemberId() != "" {
		return a.subscribeGroup(req, stream) // groups_subscribe.go
	}
	ctx := stream.Context()
	t, err := a.topics.get(ctx, req.GetTopic())
	if err != nil {
		return toStatus(err)
	}
	parts, err := partitionsOf(t, req.GetPartitions(), a.cfg.MaxSubscribePartitions)
	if err != nil {
		return err
	}
	if req.GetMaxBytes() < 0 {
		return errf(codes.InvalidArgument, "subscribe: max_bytes must not be negative")
	}
	for p := range req.GetOffsets() {
		if p < 0 || p >= t.Partitions {
			return errf(codes.NotFound, "subscribe: partition %d of topic %q does not exist", p, t.Name)
		}
	}
	starts := make([]int64, len(parts))
	for i, p := range parts {
		if off, ok := req.GetOffsets()[p]; ok {
			starts[i] = off
			continue
		}
		if starts[i], err = a.resolveStart(ctx, t.ID, p, req.GetStart()); err != nil {
			a.topics.forgetIfGone(req.GetTopic(), err)
			return toStatus(err)
		}
	}
	if !a.readers.add(len(parts)) {
		return a.readers.refusal(len(parts))
	}
	defer a.readers.done(len(parts))
	budget := a.fetchBudget(req.GetMaxBytes())
	// Readers take their budget from mem before reading and the sender
	// gives it back once the message is sent: what one subscription holds
	// is bounded whatever its partition count, and what all of them hold
	// by the agent's stream budget (streambudget.go).
	mem, err := a.newSubBuffer(budget)
	if err != nil {
		return err
	}
	out := make(chan outMsg)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	g, gctx := errgroup.WithContext(rctx)
	follow := a.follow
	if req.GetBatches() {
		follow = a.followBatches // fetch_batches.go
	}
	for i, p := range parts {
		g.Go(func() error { return follow(gctx, t.ID, p, starts[i], budget, mem, out) })
	}
	go func() {
		_ = g.Wait()
		close(out)
	}()
	var sendErr error
	for m := range out {
		if sendErr == nil {
			if sendErr = sendOut(stream, m); sendErr != nil {
				stop() // unblock the readers; keep draining until they stop
			}
		} else if m.batches != nil {
			m.batches.Drop()
		}
		mem.Release(m.weight)
	}
	if sendErr != nil {
		return sendErr
	}
	if err := g.Wait(); err != nil && (ctx.Err() == nil || !errors.Is(err, context.Canceled)) {
		a.topics.forgetIfGone(req.GetTopic(), err)
		return toStatus(err)
	}
	return nil
}

func (a *Agent) resolveStart(ctx context.Context, topicID int64, p int32, sp *floev1.StartPosition) (int64, error) {
	switch pos := sp.GetPosition().(type) {
	case nil, *floev1.StartPosition_Latest:
		return a.meta.ListOffset(ctx, topicID, p, metadata.OffsetLatest, 0)
	case *floev1.StartPosition_Earliest:
		return a.listOffset(ctx, topicID, p, metadata.OffsetEarliest, 0)
	case *floev1.StartPosition_Offset:
		return pos.Offset, nil
	case *floev1.StartPosition_TimestampMs:
		return a.meta.ListOffset(ctx, topicID, p, metadata.OffsetTimestamp, pos.TimestampMs)
	default:
		return 0, errf(codes.InvalidArgument, "subscribe: unknown start position")
	}
}

// outMsg is a message for the subscriber and the buffer bytes it holds.
type outMsg struct {
	resp    *floev1.SubscribeResponse
	weight  int64
	batches *grpcwire.Batches // resp's batches, sent by sendOut (nil: none)
	gen     uint64            // group subscriptions: the generation of the reader that handed it (groups_subscribe.go)
}

// follow reads one partition from offset for ever, sending what it finds.
func (a *Agent) follow(ctx context.Context, topicID int64, p int32, offset int64, budget int, mem *subBuffer, out chan<- outMsg) error {
	w := int64(budget)
	for {
		woken := a.hub.wait(topicID, p)
		if err := mem.Acquire(ctx, w); err != nil {
			return err
		}
		recs, st, next, err := a.readRecords(ctx, topicID, p, offset, budget)
		if err != nil || len(recs) == 0 {
			mem.ReleaseOwn(w)
		}
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			if err := mem.Hold(ctx, w); err != nil {
				mem.ReleaseOwn(w)
				return err
			}
			select {
			case out <- outMsg{resp: &floev1.SubscribeResponse{Partition: p, Records: recs, HighWatermark: st.HighWatermark}, weight: w}:
			case <-ctx.Done():
				mem.Release(w)
				return ctx.Err()
			}
			a.m.fetched(len(recs))
			offset = next
			continue
		}
		offset = max(offset, next) // past a compacted gap
		if err := a.sleep(ctx, woken, a.cfg.PollInterval); err != nil {
			return err
		}
	}
}
