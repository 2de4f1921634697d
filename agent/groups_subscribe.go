package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// A group subscription (Subscribe with a group) is a member of the group
// for as long as its stream is open. Three kinds of goroutine share it:
//
//   - the control loop (the handler's goroutine, run) heartbeats for the
//     member and applies each answer: it stops the readers of revoked
//     partitions, starts readers for granted ones at the committed
//     position (or the reset policy), and queues a GroupAssignment;
//   - one reader per owned partition (groupReader) reads records and hands
//     them to the sender;
//   - the sender sends the queued GroupAssignment before any record handed
//     after it was queued, then the records.
//
// A revoked partition's reader is stopped (and its last message handed)
// before the GroupAssignment announcing the revocation is queued, so the
// client sees no record of it afterwards. The partition stays listed as
// owned in heartbeats until the client's commit reaches what was handed
// over (CommitOffsets on this agent notifies the session) or the revoke
// wait ends; only then does the next owner get it. The member stops
// reading everything before its session can expire when heartbeats fail.

const (
	// defaultRevokeWait is the revoke wait when the client gives no commit
	// interval; minRevokeWait and maxRevokeWait bound it (and half the
	// session timeout: the store fences a member that holds a revoked
	// partition for a whole session timeout).
	defaultRevokeWait = 5 * time.Second
	minRevokeWait     = time.Second
	maxRevokeWait     = 30 * time.Second
	// fastHeartbeat is the heartbeat period while partitions are pending
	// or being released.
	fastHeartbeat = 100 * time.Millisecond
	// leaveTimeout bounds the leave heartbeat when the stream ends.
	leaveTimeout = 5 * time.Second
)

// groupSession is one group subscription.
type groupSession struct {
	a      *Agent
	stream floev1.LogService_SubscribeServer
	group  string
	topic  metadata.Topic
	reset  metadata.OffsetSpec // for partitions without a committed position

	sessionTimeout time.Duration
	revokeWait     time.Duration
	budget         int
	mem            *subBuffer    // bytes read, not yet sent (streambudget.go)
	out            chan outMsg   // records from the readers to the sender
	readerErr      chan error    // first reader failure (cap 1)
	limiter        *rate.Limiter // replay budget of the group on this agent (nil: none)
	batches        bool          // SubscribeRequest.batches: readers send stored batches (groups_batches.go)

	// Control loop state (only its goroutine touches these).
	memberID  string
	epoch     int32
	readers   map[int32]*groupReader
	releasing map[int32]releasing
	wg        sync.WaitGroup // the readers

	ctrlMu sync.Mutex              // protects ctrl, gen, revokedAt, fencedGen and lastBeat
	ctrl   *floev1.GroupAssignment // queued for the sender, nil when none
	// gen counts the GroupAssignments queued; revokedAt is the gen at
	// which the queued one revoked each partition. A message handed by a
	// reader of an older gen than its partition's revocation was handed
	// before the revocation (its reader was stopped before it was queued)
	// and is sent before it: no record of a partition follows the
	// assignment that revoked it.
	gen       uint64
	revokedAt map[int32]uint64
	// fencedGen is the gen of the last fence's revocation: a message
	// handed by a reader of an older gen belongs to a session the store
	// expired and is dropped. lastBeat is when the store last accepted
	// the member (a join or heartbeat): past the session timeout the
	// store may have expired it, and the sender holds records until the
	// next heartbeat's outcome (memberDelivery).
	fencedGen uint64
	lastBeat  time.Time
	beat      chan struct{} // cap 1: lastBeat or fencedGen moved
	// onReceive, for tests, runs in the sender when it has taken a
	// message and not yet sent it (where the control loop may queue an
	// assignment).
	onReceive func()

	ctrlCh  chan struct{} // cap 1: a GroupAssignment was queued
	commits chan struct{} // cap 1: the client committed (see committed)
	poked   chan struct{} // cap 1: another member joined or left here: heartbeat now

	sentEpoch atomic.Int32 // the member epoch last queued for the client

	commitMu  sync.Mutex      // protects committed
	committed map[int32]int64 // positions committed through this agent
}

// releasing is a revoked partition not yet released.
type releasing struct {
	start, handed int64
	deadline      time.Time
}

// groupReader reads one owned partition.
type groupReader struct {
	start  int64
	gen    uint64       // the gen of the assignment that granted it
	handed atomic.Int64 // the offset after the last record handed to the sender
	cancel context.CancelFunc
	done   chan struct{}
}

// subscribeGroup serves Subscribe with a group.
func (a *Agent) subscribeGroup(req *floev1.SubscribeRequest, stream floev1.LogService_SubscribeServer) error {
	if err := checkGroupName("subscribe: group", req.GetGroup()); err != nil {
		return err
	}
	switch {
	case len(req.GetPartitions()) > 0 || len(req.GetOffsets()) > 0:
		return errf(codes.InvalidArgument, "subscribe: a group subscription takes no partitions or offsets (the group assigns them)")
	case req.GetMemberEpoch() < 0 || req.GetSessionTimeoutMs() < 0 || req.GetCommitIntervalMs() < 0 || req.GetMaxBytes() < 0:
		return errf(codes.InvalidArgument, "subscribe: member_epoch, session_timeout_ms, commit_interval_ms and max_bytes must not be negative")
	case len(req.GetMemberId()) > metadata.MaxGroupNameLen:
		return errf(codes.InvalidArgument, "subscribe: member_id longer than %d bytes", metadata.MaxGroupNameLen)
	}
	var reset metadata.OffsetSpec
	switch req.GetStart().GetPosition().(type) {
	case nil, *floev1.StartPosition_Latest:
		reset = metadata.OffsetLatest
	case *floev1.StartPosition_Earliest:
		reset = metadata.OffsetEarliest
	default:
		return errf(codes.InvalidArgument, "subscribe: with a group, start is the reset policy: earliest or latest")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	t, err := a.topics.get(ctx, req.GetTopic())
	if err != nil {
		return toStatus(err)
	}
	st := time.Duration(req.GetSessionTimeoutMs()) * time.Millisecond
	if st == 0 {
		st = metadata.DefaultSessionTimeout
	}
	rw := time.Duration(req.GetCommitIntervalMs()) * time.Millisecond
	if rw == 0 {
		rw = defaultRevokeWait
	}
	rw = min(max(rw, minRevokeWait), maxRevokeWait, st/2)
	mem, err := a.newSubBuffer(a.fetchBudget(req.GetMaxBytes()))
	if err != nil {
		return err
	}
	s := &groupSession{
		a: a, stream: stream, group: req.GetGroup(), topic: t, reset: reset,
		sessionTimeout: st, revokeWait: rw, budget: a.fetchBudget(req.GetMaxBytes()), batches: req.GetBatches(),
		mem:       mem,
		out:       make(chan outMsg),
		readerErr: make(chan error, 1),
		memberID:  req.GetMemberId(), epoch: req.GetMemberEpoch(),
		readers: make(map[int32]*groupReader), releasing: make(map[int32]releasing),
		ctrlCh: make(chan struct{}, 1), commits: make(chan struct{}, 1), poked: make(chan struct{}, 1),
		beat:      make(chan struct{}, 1),
		committed: make(map[int32]int64), revokedAt: make(map[int32]uint64),
	}
	// A new stream is a new session of the member: it rejoins (keeping
	// its id and, through the sticky assignor, its partitions) so that
	// the member's epoch moves on and the leave of the stream it replaces,
	// late from another agent, is refused as stale.
	s.epoch = metadata.JoinEpoch
	s.limiter = a.grp.acquireLimiter(s.group)
	defer a.grp.releaseLimiter(s.group)

	sendDone := make(chan error, 1)
	go func() { sendDone <- s.send(ctx) }()
	err = s.run(ctx, sendDone)
	cancel()
	s.stopAll()
	if err != nil && !errors.Is(err, errSenderDone) {
		<-sendDone
	}
	if s.memberID != "" && s.epoch > 0 { // (epoch 0: a rejoin after a fence failed; the member is not ours to leave)
		a.grp.unregister(s)
		lctx, lcancel := context.WithTimeout(context.WithoutCancel(stream.Context()), leaveTimeout)
		_, lerr := a.meta.Heartbeat(lctx, metadata.HeartbeatRequest{Group: s.group, MemberID: s.memberID,
			MemberEpoch: metadata.LeaveEpoch, LeavingEpoch: s.epoch})
		lcancel()
		if errors.Is(lerr, metadata.ErrStaleMemberEpoch) {
			a.log.Info("group member served by a newer session; not leaving", "group", s.group, "member", s.memberID)
		} else if lerr != nil {
			a.log.Warn("group member leave failed; its session will time out", "group", s.group, "member", s.memberID, "err", lerr)
		} else {
			a.grp.poke(s)
		}
	}
	if err == nil || stream.Context().Err() != nil {
		return nil // the client went away
	}
	return toStatus(err)
}

// errSenderDone: the sender stopped (its error was the stream's).
var errSenderDone = errors.New("agent: group subscription: stream ended")

// run is the control loop: join, then heartbeat and apply until ctx ends
// or something fails.
func (s *groupSession) run(ctx context.Context, sendDone <-chan error) error {
	resp, err := s.join(ctx)
	if err != nil {
		return err
	}
	s.a.grp.register(s)
	lastOK := time.Now()
	s.accepted(lastOK)
	for {
		if err := s.apply(ctx, resp); err != nil {
			return err
		}
		wait := resp.HeartbeatInterval
		if resp.Pending > 0 || len(s.releasing) > 0 {
			wait = min(wait, fastHeartbeat)
		}
		if err := s.wait(ctx, wait, sendDone); err != nil {
			return err
		}
		s.releaseReady(time.Now())
		r, err := s.a.meta.Heartbeat(ctx, metadata.HeartbeatRequest{
			Group: s.group, MemberID: s.memberID, MemberEpoch: s.epoch, Owned: s.owned(), SessionTimeout: s.sessionTimeout,
		})
		switch {
		case err == nil:
			resp, lastOK = r, time.Now()
			s.accepted(lastOK)
		case errors.Is(err, metadata.ErrUnknownMember), errors.Is(err, metadata.ErrStaleMemberEpoch):
			// Fenced: what we held is someone else's now. Stop at once and
			// rejoin under the same member id.
			s.a.log.Info("group member fenced, rejoining", "group", s.group, "member", s.memberID, "err", err)
			s.revokeAll()
			s.epoch = metadata.JoinEpoch
			if resp, err = s.join(ctx); err != nil {
				return err
			}
			lastOK = time.Now()
			s.accepted(lastOK)
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			// A store failure: keep reading only while the session surely
			// has not expired, then give up (the client reconnects).
			if time.Since(lastOK) > s.sessionTimeout*2/3 {
				return fmt.Errorf("group heartbeat: %w", err)
			}
			s.a.log.Warn("group heartbeat failed, retrying", "group", s.group, "member", s.memberID, "err", err)
			resp.Pending = 1 // retry soon, apply nothing new
			resp.Assigned = s.assignedNow()
		}
	}
}

// join joins the group (or rejoins with the member id and epoch given).
func (s *groupSession) join(ctx context.Context) (metadata.HeartbeatResponse, error) {
	req := metadata.HeartbeatRequest{Group: s.group, MemberID: s.memberID, MemberEpoch: s.epoch,
		Subscription: []string{s.topic.Name}, SessionTimeout: s.sessionTimeout}
	resp, err := s.a.meta.Heartbeat(ctx, req)
	if s.epoch != metadata.JoinEpoch && (errors.Is(err, metadata.ErrUnknownMember) || errors.Is(err, metadata.ErrStaleMemberEpoch)) {
		req.MemberEpoch = metadata.JoinEpoch
		resp, err = s.a.meta.Heartbeat(ctx, req)
	}
	if err != nil {
		return resp, fmt.Errorf("group join: %w", err)
	}
	s.memberID, s.epoch = resp.MemberID, resp.MemberEpoch
	return resp, nil
}

// wait sleeps d, waking early when a commit lets a revoked partition go.
func (s *groupSession) wait(ctx context.Context, d time.Duration, sendDone <-chan error) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-sendDone:
			if err == nil {
				err = errSenderDone
			}
			return errors.Join(errSenderDone, err)
		case err := <-s.readerErr:
			return err
		case <-t.C:
			return nil
		case <-s.poked:
			return nil
		case <-s.commits:
			if s.anyReady(time.Now()) {
				return nil
			}
		}
	}
}

// apply makes the readers match resp.
func (s *groupSession) apply(ctx context.Context, resp metadata.HeartbeatResponse) error {
	s.epoch = resp.MemberEpoch
	want := make(map[int32]bool)
	for _, tp := range resp.Assigned {
		if tp.TopicID == s.topic.ID {
			want[tp.Partition] = true
		}
	}
	var revoked, added []int32
	for p := range s.readers {
		if !want[p] {
			revoked = append(revoked, p)
		}
	}
	for p := range want {
		if s.readers[p] == nil {
			added = append(added, p)
		}
	}
	slices.Sort(revoked)
	slices.Sort(added)
	// The subscription caps hold for groups too (topics_limits.go): an
	// assignment past them ends the session before any reader starts.
	if len(want) > s.a.cfg.MaxSubscribePartitions {
		return limitError(codes.ResourceExhausted, "max_subscribe_partitions", int64(s.a.cfg.MaxSubscribePartitions),
			"subscribe: the group assigned this member %d partitions, over the agent's limit of %d per subscription (max_subscribe_partitions): add members",
			len(want), s.a.cfg.MaxSubscribePartitions)
	}
	if !s.a.readers.add(len(added)) {
		return s.a.readers.refusal(len(added))
	}
	now := time.Now()
	for _, p := range revoked {
		r := s.stop(p)
		s.releasing[p] = releasing{start: r.start, handed: r.handed.Load(), deadline: now.Add(s.revokeWait)}
	}
	starts, err := s.starts(ctx, added)
	if err != nil {
		s.a.readers.done(len(added))
		return err
	}
	changed := len(revoked) > 0 || len(added) > 0
	s.ctrlMu.Lock()
	if c := s.ctrl; c != nil || changed || s.lastEpochSent() != resp.MemberEpoch {
		if c == nil {
			c = &floev1.GroupAssignment{}
			s.ctrl = c
		}
		c.MemberId, c.MemberEpoch, c.Pending = s.memberID, resp.MemberEpoch, int32(resp.Pending)
		c.Revoked = append(c.Revoked, revoked...)
		s.gen++
		for _, p := range revoked {
			s.revokedAt[p] = s.gen
		}
		c.Partitions = c.Partitions[:0]
		for p := range want {
			ap := &floev1.AssignedPartition{Partition: p}
			if r := s.readers[p]; r != nil {
				ap.StartOffset = r.start
			} else {
				ap.StartOffset, ap.HighWatermark = starts[p][0], starts[p][1]
			}
			c.Partitions = append(c.Partitions, ap)
		}
		slices.SortFunc(c.Partitions, func(x, y *floev1.AssignedPartition) int { return int(x.Partition - y.Partition) })
		s.sentEpoch.Store(resp.MemberEpoch)
		select {
		case s.ctrlCh <- struct{}{}:
		default:
		}
	}
	gen := s.gen
	s.ctrlMu.Unlock()
	for _, p := range added {
		delete(s.releasing, p) // granted back before it was released
		s.startReader(ctx, p, starts[p][0], gen)
	}
	return nil
}

// starts resolves where each added partition starts, and its high
// watermark: the committed position, else the reset policy (earliest or
// latest): two reads whatever the number of partitions.
func (s *groupSession) starts(ctx context.Context, ps []int32) (map[int32][2]int64, error) {
	out := make(map[int32][2]int64, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	tps := make([]metadata.TopicPartition, len(ps))
	for i, p := range ps {
		tps[i] = metadata.TopicPartition{TopicID: s.topic.ID, Partition: p}
	}
	offs, err := s.a.meta.FetchOffsets(ctx, s.group, tps)
	if err != nil {
		return nil, fmt.Errorf("group fetch offsets: %w", err)
	}
	committed := make(map[int32]int64, len(offs))
	for _, o := range offs {
		if o.TopicID == s.topic.ID {
			committed[o.Partition] = o.Offset
		}
	}
	// One read of the topic's partition states, whatever the number of
	// partitions added.
	states, err := s.a.meta.PartitionStates(ctx, s.topic.ID)
	if err != nil {
		return nil, fmt.Errorf("group start: %w", err)
	}
	byPart := make(map[int32]metadata.PartitionState, len(states))
	for _, st := range states {
		byPart[st.Partition] = st
	}
	for _, p := range ps {
		st, ok := byPart[p]
		if !ok {
			return nil, fmt.Errorf("group start: %w: topic %q partition %d", metadata.ErrPartitionNotFound, s.topic.Name, p)
		}
		start, ok := committed[p]
		if !ok {
			start = st.HighWatermark
			if s.reset == metadata.OffsetEarliest {
				if start, err = s.a.earliest(ctx, s.topic.ID, p, st.LogStartOffset); err != nil {
					return nil, fmt.Errorf("group start: %w", err)
				}
			}
		}
		out[p] = [2]int64{start, st.HighWatermark}
	}
	return out, nil
}

// lastEpochSent is the member epoch last told to the client.
func (s *groupSession) lastEpochSent() int32 { return s.sentEpoch.Load() }

func (s *groupSession) startReader(ctx context.Context, p int32, start int64, gen uint64) {
	rctx, cancel := context.WithCancel(ctx)
	r := &groupReader{start: start, gen: gen, cancel: cancel, done: make(chan struct{})}
	r.handed.Store(start)
	s.readers[p] = r
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(r.done)
		defer s.a.readers.done(1) // taken by apply
		if err := s.read(rctx, p, r); err != nil && rctx.Err() == nil {
			select {
			case s.readerErr <- fmt.Errorf("partition %d: %w", p, err):
			default:
			}
		}
	}()
}

// stop stops p's reader and waits for it.
func (s *groupSession) stop(p int32) *groupReader {
	r := s.readers[p]
	r.cancel()
	<-r.done
	delete(s.readers, p)
	return r
}

// stopAll stops every reader (the stream is ending).
func (s *groupSession) stopAll() {
	for p := range s.readers {
		s.readers[p].cancel()
	}
	s.wg.Wait()
	clear(s.readers)
}

// revokeAll stops every reader after a fence: nothing is ours to release.
func (s *groupSession) revokeAll() {
	var revoked []int32
	for p := range s.readers {
		s.stop(p)
		revoked = append(revoked, p)
	}
	for p := range s.releasing {
		revoked = append(revoked, p)
	}
	clear(s.releasing)
	slices.Sort(revoked)
	revoked = slices.Compact(revoked)
	s.ctrlMu.Lock()
	if s.ctrl == nil {
		s.ctrl = &floev1.GroupAssignment{}
	}
	s.ctrl.MemberId, s.ctrl.Partitions = s.memberID, nil
	s.ctrl.Revoked = append(s.ctrl.Revoked, revoked...)
	s.gen++
	for _, p := range revoked {
		s.revokedAt[p] = s.gen
	}
	s.fencedGen = s.gen
	select {
	case s.ctrlCh <- struct{}{}:
	default:
	}
	s.ctrlMu.Unlock()
	s.signalBeat()
}

// accepted records that the store accepted the member at t (a join or a
// heartbeat answered).
func (s *groupSession) accepted(t time.Time) {
	s.ctrlMu.Lock()
	s.lastBeat = t
	s.ctrlMu.Unlock()
	s.signalBeat()
}

func (s *groupSession) signalBeat() {
	select {
	case s.beat <- struct{}{}:
	default:
	}
}

// owned lists what the member holds: its readers and the partitions not
// yet released.
func (s *groupSession) owned() []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(s.readers)+len(s.releasing))
	for p := range s.readers {
		out = append(out, metadata.TopicPartition{TopicID: s.topic.ID, Partition: p})
	}
	for p := range s.releasing {
		out = append(out, metadata.TopicPartition{TopicID: s.topic.ID, Partition: p})
	}
	return out
}

func (s *groupSession) assignedNow() []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(s.readers))
	for p := range s.readers {
		out = append(out, metadata.TopicPartition{TopicID: s.topic.ID, Partition: p})
	}
	return out
}

// ready reports whether a revoked partition may be released: nothing was
// handed over since it started, the client committed all it was handed,
// or the wait is over.
func (s *groupSession) ready(p int32, r releasing, now time.Time) bool {
	if r.handed == r.start || !now.Before(r.deadline) {
		return true
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	c, ok := s.committed[p]
	return ok && c >= r.handed
}

func (s *groupSession) anyReady(now time.Time) bool {
	for p, r := range s.releasing {
		if s.ready(p, r, now) {
			return true
		}
	}
	return false
}

func (s *groupSession) releaseReady(now time.Time) {
	for p, r := range s.releasing {
		if s.ready(p, r, now) {
			delete(s.releasing, p)
		}
	}
}

// onCommit is told of the member's commits made through this agent.
func (s *groupSession) onCommit(offs []metadata.OffsetCommit) {
	s.commitMu.Lock()
	for _, o := range offs {
		if o.TopicID == s.topic.ID && o.Offset > s.committed[o.Partition] {
			s.committed[o.Partition] = o.Offset
		}
	}
	s.commitMu.Unlock()
	select {
	case s.commits <- struct{}{}:
	default:
	}
}

// send sends queued GroupAssignments and the readers' records, an
// assignment always before the records handed after it was queued.
func (s *groupSession) send(ctx context.Context) error {
	for {
		if err := s.sendCtrl(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.ctrlCh:
		case m := <-s.out:
			if s.onReceive != nil {
				s.onReceive()
			}
			deliver := s.await(ctx, m)
			var err error
			if deliver && !s.handedBeforeRevocation(m) {
				err = s.sendCtrl()
			}
			if deliver && err == nil {
				err = sendOut(s.stream, m)
			} else if m.batches != nil {
				m.batches.Drop()
			}
			s.mem.Release(m.weight)
			if err != nil {
				return err
			}
		}
	}
}

// delivery is what the sender does with a reader's message.
type delivery int

const (
	deliverSend delivery = iota
	// deliverHold: wait for the next heartbeat's outcome.
	deliverHold
	// deliverDrop: the message belongs to a session the store expired.
	deliverDrop
)

// memberDelivery is the rule for a message handed by a reader of gen
// handedGen: dropped when a fence revoked everything after it was handed
// (fencedGen: its partition is another member's now), held while the last
// time the store accepted the member is a session timeout old or more (the
// store may have expired it — the agent was paused, or its heartbeats
// hang — and given its partitions to another), sent otherwise.
func memberDelivery(handedGen, fencedGen uint64, lastBeat, now time.Time, sessionTimeout time.Duration) delivery {
	switch {
	case handedGen < fencedGen:
		return deliverDrop
	case now.Sub(lastBeat) >= sessionTimeout:
		return deliverHold
	}
	return deliverSend
}

// await applies memberDelivery to m, waiting out each hold for the next
// heartbeat's outcome; false: drop m (or the stream ended).
func (s *groupSession) await(ctx context.Context, m outMsg) bool {
	for {
		s.ctrlMu.Lock()
		d := memberDelivery(m.gen, s.fencedGen, s.lastBeat, time.Now(), s.sessionTimeout)
		s.ctrlMu.Unlock()
		switch d {
		case deliverSend:
			return true
		case deliverDrop:
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-s.beat:
		}
	}
}

// handedBeforeRevocation reports whether m was handed before the queued
// assignment revoked its partition: m goes first.
func (s *groupSession) handedBeforeRevocation(m outMsg) bool {
	s.ctrlMu.Lock()
	defer s.ctrlMu.Unlock()
	at, ok := s.revokedAt[m.resp.GetPartition()]
	return s.ctrl != nil && ok && m.gen < at
}

func (s *groupSession) sendCtrl() error {
	s.ctrlMu.Lock()
	c := s.ctrl
	s.ctrl = nil
	clear(s.revokedAt)
	s.ctrlMu.Unlock()
	if c == nil {
		return nil
	}
	return s.stream.Send(&floev1.SubscribeResponse{Assignment: c})
}

// read follows one partition from r.start, handing records to the sender;
// reads far behind the high watermark take from the group's replay budget.
func (s *groupSession) read(ctx context.Context, p int32, r *groupReader) error {
	if s.batches {
		return s.readBatches(ctx, p, r)
	}
	a, w, offset := s.a, int64(s.budget), r.start
	for {
		woken := a.hub.wait(s.topic.ID, p)
		if err := s.mem.Acquire(ctx, w); err != nil {
			return err
		}
		recs, st, next, err := a.readRecords(ctx, s.topic.ID, p, offset, s.budget)
		if err != nil || len(recs) == 0 {
			s.mem.ReleaseOwn(w)
		}
		var oor *metadata.OffsetOutOfRangeError
		if errors.As(err, &oor) && offset < oor.LogStartOffset {
			// Retention deleted what the group had not consumed: go on
			// from the log start (those records are lost to it).
			a.log.Warn("group position behind the log start, skipping ahead", "group", s.group, "topic", s.topic.Name,
				"partition", p, "offset", offset, "log_start_offset", oor.LogStartOffset)
			offset = oor.LogStartOffset
			continue
		}
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			if err := s.mem.Hold(ctx, w); err != nil {
				s.mem.ReleaseOwn(w)
				return err
			}
			select {
			// NextOffset: on a compacted topic the read may end past its
			// last record; the client's position becomes it (what counts
			// as handed for the revocation).
			case s.out <- outMsg{resp: &floev1.SubscribeResponse{Partition: p, Records: recs, HighWatermark: st.HighWatermark,
				NextOffset: next}, weight: w, gen: r.gen}:
			case <-ctx.Done():
				s.mem.Release(w)
				return ctx.Err()
			}
			r.handed.Store(next)
			a.m.fetched(len(recs))
			offset = next
			if err := a.replayWait(ctx, s.limiter, st.HighWatermark-next, recs); err != nil {
				return err
			}
			continue
		}
		if next > offset { // past a compacted gap: read on at once
			offset = next
			continue
		}
		if err := a.sleep(ctx, woken, a.cfg.PollInterval); err != nil {
			return err
		}
	}
}
