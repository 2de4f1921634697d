package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Groups returns the GroupService client of c's connection.
func (c *Client) Groups() floev1.GroupServiceClient { return floev1.NewGroupServiceClient(c.conn) }

// GroupOptions configures a GroupConsumer. Group and Topic are required.
type GroupOptions struct {
	Group, Topic string
	// Earliest starts partitions without a committed position at the log
	// start (default: the high watermark, like Kafka's "latest").
	Earliest bool
	// SessionTimeout: the agent heartbeats for the member while the stream
	// is open; without a heartbeat for this long the member is fenced
	// (default 45 s on the agent).
	SessionTimeout time.Duration
	// CommitInterval > 0 commits, at most this often, the positions of the
	// records Poll has handed over: at the next Poll after the interval,
	// and every interval while Poll waits for records (an idle member's
	// position catches up too). A record is committed only once the
	// application asked for the next one: at least once. 0 commits only on
	// Commit and Close.
	CommitInterval time.Duration
	// MaxBytes is the byte budget of one streamed message (0: agent default).
	MaxBytes int32
	// Batches asks the agent for stored batches (SubscribeRequest.batches),
	// decoded here: the agent does not re-encode records.
	Batches bool
	// Resume tunes the reconnects after a retriable failure.
	Resume ResumeOptions
	// OnAssign, optional, is called by Poll on each assignment change,
	// before the revoked partitions' positions are committed (and so before
	// their next owner can get them): assigned is the whole new assignment.
	OnAssign func(assigned map[int32]*floev1.AssignedPartition, revoked []int32)
}

// GroupConsumer consumes a topic as a member of a consumer group. It is
// not safe for concurrent use: one goroutine calls Poll, Commit and Close.
type GroupConsumer struct {
	r    *resumer
	opts GroupOptions

	recv     chan recvResult    // the stream's messages, from its receiver goroutine
	cancel   context.CancelFunc // ends the stream
	recvDone chan struct{}      // closed when the receiver goroutine has returned
	memberID string
	epoch    int32
	assigned map[int32]*floev1.AssignedPartition
	pending  int32
	revoked  []int32 // of the last assignment change

	buf        []*floev1.Record // records received, not yet handed over
	skips      map[int32][]skip // per partition, compacted ends of the messages in buf
	handed     map[int32]int64  // partition -> offset after the last record handed over
	committed  map[int32]int64  // partition -> last position committed
	lastCommit time.Time
	commitErr  error // the last failed automatic commit
}

// recvResult is one Recv of the stream.
type recvResult struct {
	resp *floev1.SubscribeResponse
	err  error
}

// NewGroupConsumer makes a consumer that talks to clients[0] and, after a
// retriable failure, to the next client (the member rejoins with its id
// and epoch, keeping its partitions when its session has not expired).
func NewGroupConsumer(clients []*Client, opts GroupOptions) (*GroupConsumer, error) {
	switch {
	case len(clients) == 0:
		return nil, errors.New("client: group consumer needs at least one client")
	case opts.Group == "" || opts.Topic == "":
		return nil, errors.New("client: group consumer needs a group and a topic")
	case opts.SessionTimeout < 0 || opts.CommitInterval < 0:
		return nil, errors.New("client: group consumer: negative session timeout or commit interval")
	}
	o := opts.Resume.withDefaults()
	return &GroupConsumer{
		r: &resumer{clients: clients, opts: o, wait: o.MinBackoff}, opts: opts,
		assigned: map[int32]*floev1.AssignedPartition{}, handed: map[int32]int64{}, committed: map[int32]int64{},
		skips:      map[int32][]skip{},
		lastCommit: time.Now(),
	}, nil
}

// MemberID and MemberEpoch are the member's identity once joined.
func (g *GroupConsumer) MemberID() string   { return g.memberID }
func (g *GroupConsumer) MemberEpoch() int32 { return g.epoch }

// Assignment is the member's current partitions (with where the stream
// started each and its high watermark then), Pending how many target
// partitions still wait for their previous owner, Revoked the partitions
// the last assignment change took away.
func (g *GroupConsumer) Assignment() map[int32]*floev1.AssignedPartition {
	return maps.Clone(g.assigned)
}
func (g *GroupConsumer) Pending() int32   { return g.pending }
func (g *GroupConsumer) Revoked() []int32 { return slices.Clone(g.revoked) }

// Position is the offset after the last record handed over in p, and
// whether any was.
func (g *GroupConsumer) Position(p int32) (int64, bool) { o, ok := g.handed[p]; return o, ok }

// CommitError is the last automatic commit's failure (nil after a success).
func (g *GroupConsumer) CommitError() error { return g.commitErr }

// CaughtUp reports whether the member has an assignment with nothing
// pending and every assigned partition has been handed over up to its
// high watermark at assignment time.
func (g *GroupConsumer) CaughtUp() bool {
	if g.memberID == "" || g.pending > 0 || len(g.buf) > 0 {
		return false
	}
	for p, a := range g.assigned {
		pos, ok := g.handed[p]
		if !ok {
			pos = a.GetStartOffset()
		}
		if pos < a.GetHighWatermark() {
			return false
		}
	}
	return true
}

// Poll returns the next record, or nil (and no error) after an assignment
// change (see Assignment). Revoked partitions' handed-over positions are
// committed before Poll returns. Retriable failures reconnect; Poll returns
// ctx.Err() when ctx ends and other failures as they are.
func (g *GroupConsumer) Poll(ctx context.Context) (*floev1.Record, error) {
	if g.opts.CommitInterval > 0 && time.Since(g.lastCommit) >= g.opts.CommitInterval {
		g.commitErr = g.Commit(ctx)
	}
	if len(g.buf) > 0 {
		rec := g.buf[0]
		g.buf = g.buf[1:]
		g.handOver(rec)
		return rec, nil
	}
	// While Poll waits, the records handed over before it are processed
	// (the application asked for the next one): commit them every commit
	// interval, so that an idle member's position does not stay behind.
	var due <-chan time.Time
	var timer *time.Timer
	if g.opts.CommitInterval > 0 {
		timer = time.NewTimer(max(0, g.opts.CommitInterval-time.Since(g.lastCommit)))
		defer timer.Stop()
		due = timer.C
	}
	for {
		if g.recv == nil {
			if err := g.connect(ctx); err != nil {
				return nil, err
			}
		}
		var resp *floev1.SubscribeResponse
		var err error
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-due:
			g.commitErr = g.Commit(ctx)
			timer.Reset(g.opts.CommitInterval)
			continue
		case r := <-g.recv:
			resp, err = r.resp, r.err
		}
		if err == nil {
			g.r.wait = g.r.opts.MinBackoff
			if a := resp.GetAssignment(); a != nil {
				g.assign(ctx, a)
				return nil, nil
			}
			took, err := g.take(resp)
			if err != nil {
				return nil, err
			}
			if took {
				return g.Poll(ctx)
			}
			continue
		}
		g.closeStream()
		if err == io.EOF {
			err = status.Error(codes.Unavailable, "client: group subscription ended")
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !g.r.opts.Retriable(err) {
			return nil, err
		}
		if err := g.backoff(ctx, err); err != nil {
			return nil, err
		}
		// Save what was handed over before the member rejoins elsewhere.
		_ = g.Commit(ctx)
	}
}

// take buffers resp's records not yet handed over (decoding its batches in
// batches mode); false when none.
func (g *GroupConsumer) take(resp *floev1.SubscribeResponse) (bool, error) {
	p := resp.GetPartition()
	ap, assigned := g.assigned[p]
	if !assigned {
		return false, nil
	}
	from, ok := g.handed[p]
	recs := resp.GetRecords()
	if len(resp.GetBatches()) > 0 {
		// Stored batches: the first may start below the partition's start.
		if !ok {
			from, ok = ap.GetStartOffset(), true
		}
		var err error
		if recs, err = DecodeBatches(resp.GetBatches(), p, from, 0); err != nil {
			return false, err
		}
	}
	took := 0
	for _, rec := range recs {
		if ok && rec.GetOffset() < from {
			continue
		}
		rec.Partition = p
		g.buf = append(g.buf, rec)
		took++
	}
	// On a compacted topic the message may end past its last record: once
	// that record is handed over the position is the message's next
	// offset (what the agent counts as handed), so that a commit reaches
	// it. A message with nothing new moves the position at once, unless
	// records of the partition wait in buf.
	if next := resp.GetNextOffset(); took > 0 && next > g.buf[len(g.buf)-1].GetOffset()+1 {
		g.skips[p] = append(g.skips[p], skip{at: g.buf[len(g.buf)-1].GetOffset(), to: next})
	} else if took == 0 && ok && next > from && !g.buffered(p) {
		g.handed[p] = next
	}
	return len(g.buf) > 0, nil
}

// skip: once the record at offset at is handed over, the position is to.
type skip struct{ at, to int64 }

// buffered reports whether records of p wait in buf.
func (g *GroupConsumer) buffered(p int32) bool {
	for _, r := range g.buf {
		if r.GetPartition() == p {
			return true
		}
	}
	return false
}

// handOver records rec as handed over.
func (g *GroupConsumer) handOver(rec *floev1.Record) {
	p := rec.GetPartition()
	g.handed[p] = rec.GetOffset() + 1
	if ss := g.skips[p]; len(ss) > 0 && ss[0].at == rec.GetOffset() {
		g.handed[p] = ss[0].to
		if g.skips[p] = ss[1:]; len(g.skips[p]) == 0 {
			delete(g.skips, p)
		}
	}
}

// assign applies an assignment change: revoked partitions are committed
// (so that their next owner starts after what was handed over here) and
// forgotten.
func (g *GroupConsumer) assign(ctx context.Context, a *floev1.GroupAssignment) {
	g.memberID, g.epoch, g.pending = a.GetMemberId(), a.GetMemberEpoch(), a.GetPending()
	g.revoked = a.GetRevoked()
	if g.opts.OnAssign != nil {
		cur := map[int32]*floev1.AssignedPartition{}
		for _, ap := range a.GetPartitions() {
			cur[ap.GetPartition()] = ap
		}
		g.opts.OnAssign(cur, slices.Clone(g.revoked))
	}
	prev := g.commitErr
	g.commitErr = nil
	if len(g.revoked) > 0 {
		g.commitErr = g.commit(ctx, g.revoked)
		for _, p := range g.revoked {
			delete(g.handed, p)
			delete(g.committed, p)
			delete(g.skips, p)
		}
	}
	g.assigned = map[int32]*floev1.AssignedPartition{}
	for _, ap := range a.GetPartitions() {
		g.assigned[ap.GetPartition()] = ap
		if _, ok := g.handed[ap.GetPartition()]; !ok {
			g.committed[ap.GetPartition()] = ap.GetStartOffset()
		}
	}
	if prev != nil {
		// A commit refused for a stale epoch (or a partition this change
		// revoked) is retried with the new state.
		if err := g.Commit(ctx); err != nil {
			g.commitErr = err
		}
	}
}

// Commit commits the positions of the records handed over since the last
// commit. A FailedPrecondition (see GroupErrorReason) means the member's
// epoch moved or it lost the partitions: with a stale epoch the positions
// stay due and are committed again after the next assignment change.
func (g *GroupConsumer) Commit(ctx context.Context) error {
	return g.commit(ctx, slices.Collect(maps.Keys(g.assigned)))
}

func (g *GroupConsumer) commit(ctx context.Context, parts []int32) error {
	g.lastCommit = time.Now()
	var offs []*floev1.OffsetCommit
	slices.Sort(parts)
	for _, p := range parts {
		if pos, ok := g.handed[p]; ok && pos > g.committed[p] {
			offs = append(offs, &floev1.OffsetCommit{Topic: g.opts.Topic, Partition: p, Offset: pos})
		}
	}
	if len(offs) == 0 || g.memberID == "" {
		return nil
	}
	_, err := g.r.clients[g.r.cur].Groups().CommitOffsets(ctx, &floev1.CommitOffsetsRequest{
		Group: g.opts.Group, MemberId: g.memberID, MemberEpoch: g.epoch, Offsets: offs})
	if err != nil {
		return fmt.Errorf("client: commit offsets: %w", err)
	}
	for _, o := range offs {
		g.committed[o.GetPartition()] = o.GetOffset()
	}
	return nil
}

// Close commits what was handed over and ends the stream: the agent takes
// the member out of the group, and its partitions go to the others.
// A commit refused for a stale epoch or a partition no longer owned (the
// agent has not yet told this member its new assignment) is retried once
// the stream brings it, within closeEpochWait; records arriving meanwhile
// are not handed over.
func (g *GroupConsumer) Close(ctx context.Context) error {
	err := g.Commit(ctx)
	deadline := time.Now().Add(closeEpochWait)
	for retryAfterAssignment(err) && g.recv != nil && time.Now().Before(deadline) {
		if !g.awaitAssignment(ctx, deadline) {
			break
		}
		err = g.Commit(ctx)
	}
	g.closeStream()
	g.leave(ctx)
	return err
}

// leave tells the group at once that this member is gone, so that its
// partitions move (and `floe group list` shows it) without waiting for the
// agent to notice the closed stream. Best effort: the agent's own leave on
// stream end, or the session timeout, covers a lost one.
func (g *GroupConsumer) leave(ctx context.Context) {
	if g.memberID == "" {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = g.r.clients[g.r.cur].Groups().Heartbeat(lctx, &floev1.GroupHeartbeatRequest{
		Group: g.opts.Group, MemberId: g.memberID, MemberEpoch: -1})
}

// retryAfterAssignment: the commit failed because the member has not yet
// read its latest assignment (new epoch, or a revocation).
func retryAfterAssignment(err error) bool {
	r := GroupErrorReason(err)
	return r == "STALE_MEMBER_EPOCH" || r == "NOT_PARTITION_OWNER"
}

// closeEpochWait bounds how long Close waits for a new member epoch.
const closeEpochWait = 5 * time.Second

// awaitAssignment reads the stream until an assignment change (applied)
// or deadline, dropping records; false if none came.
func (g *GroupConsumer) awaitAssignment(ctx context.Context, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return false
		case r := <-g.recv:
			if r.err != nil {
				return false
			}
			if a := r.resp.GetAssignment(); a != nil {
				g.assign(ctx, a)
				return true
			}
		}
	}
}

// connect opens the stream, whose life is the consumer's (until
// closeStream), not ctx's, and starts its receiver goroutine.
// Abort ends the stream without committing, as a crash would: the next
// owners of the partitions start from the last commit. Close or Abort ends
// every consumer.
func (g *GroupConsumer) Abort() { g.closeStream() }

func (g *GroupConsumer) connect(ctx context.Context) error {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	req := &floev1.SubscribeRequest{Topic: g.opts.Topic, Group: g.opts.Group, MemberId: g.memberID, MemberEpoch: g.epoch,
		SessionTimeoutMs: int32(g.opts.SessionTimeout / time.Millisecond),
		CommitIntervalMs: int32(g.opts.CommitInterval / time.Millisecond), MaxBytes: g.opts.MaxBytes, Batches: g.opts.Batches}
	if g.opts.Earliest {
		req.Start = &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}
	}
	for {
		s, err := g.r.clients[g.r.cur].Log.Subscribe(sctx, req)
		if err != nil && ctx.Err() != nil {
			cancel()
			return ctx.Err()
		}
		if err == nil {
			recv, done := make(chan recvResult), make(chan struct{})
			g.recv, g.cancel, g.recvDone = recv, cancel, done
			go func() {
				defer close(done)
				for {
					resp, err := s.Recv()
					select {
					case recv <- recvResult{resp, err}:
					case <-sctx.Done():
						return
					}
					if err != nil {
						return
					}
				}
			}()
			return nil
		}
		if ctx.Err() != nil || !g.r.opts.Retriable(err) {
			cancel()
			return err
		}
		if err := g.backoff(ctx, err); err != nil {
			cancel()
			return err
		}
	}
}

// backoff waits after a failure and moves on to the next client.
func (g *GroupConsumer) backoff(ctx context.Context, err error) error {
	r := g.r
	if r.opts.OnRetry != nil {
		r.opts.OnRetry(r.clients[r.cur].Addr(), err, r.wait)
	}
	t := time.NewTimer(r.wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	r.wait = min(2*r.wait, r.opts.MaxBackoff)
	r.cur = (r.cur + 1) % len(r.clients)
	return nil
}

func (g *GroupConsumer) closeStream() {
	if g.cancel != nil {
		g.cancel()
		<-g.recvDone
	}
	g.recv, g.cancel, g.recvDone = nil, nil, nil
	g.buf = nil
	clear(g.skips)
}

// GroupErrorReason is the ErrorInfo reason of a group error from the agent
// (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, NOT_PARTITION_OWNER,
// GROUP_NOT_EMPTY), "" if none.
func GroupErrorReason(err error) string {
	st, ok := status.FromError(err) // unwraps
	if !ok {
		return ""
	}
	return floeReason(st)
}
