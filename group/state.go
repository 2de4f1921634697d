package group

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Member is one member's stored state. Times are unix ms by the store's clock.
type Member struct {
	ID           string
	Epoch        int32
	Subscription []string // sorted, distinct topic names
	Assigned     []TP     // may own now, sorted
	Revoking     []TP     // must release, still owned, sorted
	Target       []TP     // target assignment, sorted
	// RevokingSince is when Revoking became non-empty (0 when empty): a
	// member that does not release within its session timeout is fenced.
	RevokingSince    int64
	SessionTimeoutMs int64
	LastHeartbeat    int64
	JoinedAt         int64
}

// Group is a group's stored state.
type Group struct {
	Name  string
	Epoch int32
	// TopicNames is the union of the members' subscriptions and TopicsSig
	// the signature (TopicsSignature) of those topics when the target was
	// last computed: a change of either bumps the epoch.
	TopicNames  []string
	TopicsSig   string
	RebalanceAt int64     // when the epoch last changed, unix ms
	RebalanceMs int64     // how long the last rebalance took to become stable; -1 while reconciling
	Members     []*Member // sorted by id
}

// Topic is a live topic as the heartbeat sees it.
type Topic struct {
	ID         int64
	Name       string
	Partitions int32
}

// Outcome is what a heartbeat changed, for the backend to write.
type Outcome struct {
	Response metadata.HeartbeatResponse
	// GroupChanged: the group row must be written.
	GroupChanged bool
	// Upsert lists members to write (new or changed), Deleted the ids to remove.
	Upsert  []*Member
	Deleted []string
}

// Expired reports whether m is to be fenced at now.
func (m *Member) Expired(now int64) bool {
	return m.LastHeartbeat+m.SessionTimeoutMs < now ||
		m.RevokingSince > 0 && m.RevokingSince+m.SessionTimeoutMs < now
}

// Stable reports whether m holds exactly its target at the group's epoch.
func (m *Member) Stable(groupEpoch int32) bool {
	return m.Epoch == groupEpoch && len(m.Revoking) == 0 && slices.Equal(m.Assigned, m.Target)
}

// HeartbeatInterval is what members are told: a third of the session
// timeout, between 50 ms and 5 s.
func HeartbeatInterval(sessionTimeoutMs int64) time.Duration {
	d := time.Duration(sessionTimeoutMs) * time.Millisecond / 3
	return min(max(d, 50*time.Millisecond), 5*time.Second)
}

// ReconcileInterval bounds the interval told to a member that has
// partitions to release or to receive, so that a rebalance takes a few
// round trips rather than a few heartbeat intervals.
const ReconcileInterval = 100 * time.Millisecond

// Validate checks a request before any I/O.
func Validate(req metadata.HeartbeatRequest) error {
	if err := ValidateName("group", req.Group); err != nil {
		return err
	}
	if req.MemberID != "" {
		if err := ValidateName("member id", req.MemberID); err != nil {
			return err
		}
	}
	switch {
	case req.MemberEpoch < metadata.LeaveEpoch:
		return fmt.Errorf("%w: member epoch %d", metadata.ErrInvalidGroup, req.MemberEpoch)
	case req.MemberEpoch == metadata.JoinEpoch && len(req.Subscription) == 0:
		return fmt.Errorf("%w: a join needs a subscription", metadata.ErrInvalidGroup)
	case req.MemberEpoch != metadata.JoinEpoch && req.MemberID == "":
		return fmt.Errorf("%w: member id is empty", metadata.ErrInvalidGroup)
	case req.Subscription != nil && len(req.Subscription) == 0:
		return fmt.Errorf("%w: empty subscription", metadata.ErrInvalidGroup)
	case req.LeavingEpoch < 0 || req.LeavingEpoch > 0 && req.MemberEpoch != metadata.LeaveEpoch:
		return fmt.Errorf("%w: leaving epoch %d (only a leave names one, >= 0)", metadata.ErrInvalidGroup, req.LeavingEpoch)
	case req.SessionTimeout < 0 || req.SessionTimeout > time.Hour:
		return fmt.Errorf("%w: session timeout %v outside [0, 1h]", metadata.ErrInvalidGroup, req.SessionTimeout)
	}
	for _, n := range req.Subscription {
		if err := metadata.ValidateTopicName(n); err != nil {
			return fmt.Errorf("%w: subscription: %w", metadata.ErrInvalidGroup, err)
		}
	}
	return nil
}

// ValidateName checks a group name or member id.
func ValidateName(what, s string) error {
	if s == "" || len(s) > metadata.MaxGroupNameLen {
		return fmt.Errorf("%w: %s must be 1 to %d bytes", metadata.ErrInvalidGroup, what, metadata.MaxGroupNameLen)
	}
	return nil
}

// Canonical returns a sorted, deduplicated copy of names.
func Canonical(names []string) []string {
	c := slices.Clone(names)
	slices.Sort(c)
	return slices.Compact(c)
}

// TopicsSignature is "id:partitions,..." of the topics, by id (the
// PostgreSQL fast path computes the same string).
func TopicsSignature(ts []Topic) string {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b Topic) int { return int(a.ID - b.ID) })
	var b strings.Builder
	for i, t := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(t.ID, 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(int64(t.Partitions), 10))
	}
	return b.String()
}

// EncodeTPs is the stored form of a sorted partition list: "topic:partition,...".
func EncodeTPs(ps []TP) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(p.TopicID, 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(int64(p.Partition), 10))
	}
	return b.String()
}

// DecodeTPs parses EncodeTPs's form.
func DecodeTPs(s string) ([]TP, error) {
	if s == "" {
		return []TP{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]TP, len(parts))
	for i, f := range parts {
		t, p, ok := strings.Cut(f, ":")
		tid, err1 := strconv.ParseInt(t, 10, 64)
		pn, err2 := strconv.ParseInt(p, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("group: bad stored partition list %q", s)
		}
		out[i] = TP{TopicID: tid, Partition: int32(pn)}
	}
	return out, nil
}

// TopicNames is the union of the members' subscriptions, sorted.
func (g *Group) unionNames() []string {
	var all []string
	for _, m := range g.Members {
		all = append(all, m.Subscription...)
	}
	return Canonical(all)
}

func (g *Group) member(id string) (int, *Member) {
	for i, m := range g.Members {
		if m.ID == id {
			return i, m
		}
	}
	return -1, nil
}

// Heartbeat applies req to g at now (unix ms). topics holds the live topics
// whose names some member (or req) subscribes to; newID makes a member id.
// It mutates g and returns what to write. Errors leave nothing to write.
func Heartbeat(g *Group, req metadata.HeartbeatRequest, topics map[string]Topic, now int64, newID func() string) (Outcome, error) {
	var out Outcome
	changed := map[string]*Member{}
	bump := false

	// Apply the request's own member first (so that a member heartbeating
	// after a pause is not fenced by its own heartbeat).
	timeout := req.SessionTimeout.Milliseconds()
	if timeout <= 0 {
		timeout = metadata.DefaultSessionTimeout.Milliseconds()
	}
	var self *Member
	switch req.MemberEpoch {
	case metadata.LeaveEpoch:
		i, m := g.member(req.MemberID)
		if err := checkLeave(m, req); err != nil {
			return Outcome{}, err
		}
		if m != nil {
			g.Members = slices.Delete(g.Members, i, i+1)
			out.Deleted = append(out.Deleted, m.ID)
			bump = true
		}
	case metadata.JoinEpoch:
		id := req.MemberID
		if id == "" {
			id = newID()
		}
		target := []TP{}
		if i, m := g.member(id); m != nil {
			// A rejoin (a new session of the member, or one that lost
			// its state): what it held is free, its epoch moves on (so
			// that the older session's late leave is refused), and its
			// target stays its previous one for the sticky assignor.
			g.Members = slices.Delete(g.Members, i, i+1)
			target = m.Target
		}
		self = &Member{ID: id, Subscription: Canonical(req.Subscription), Assigned: []TP{}, Revoking: []TP{},
			Target: target, SessionTimeoutMs: timeout, JoinedAt: now}
		g.Members = append(g.Members, self)
		slices.SortFunc(g.Members, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
		bump = true
	default:
		_, m := g.member(req.MemberID)
		if m == nil {
			return Outcome{}, fmt.Errorf("%w: %q in group %q", metadata.ErrUnknownMember, req.MemberID, g.Name)
		}
		if m.Epoch != req.MemberEpoch {
			return Outcome{}, fmt.Errorf("%w: member %q has epoch %d, not %d", metadata.ErrStaleMemberEpoch, m.ID, m.Epoch, req.MemberEpoch)
		}
		self = m
		if req.Subscription != nil {
			if s := Canonical(req.Subscription); !slices.Equal(s, m.Subscription) {
				m.Subscription = s
				bump = true
			}
		}
		m.SessionTimeoutMs = timeout
		// Released partitions: no longer listed as owned.
		owned := make(map[TP]bool, len(req.Owned))
		for _, p := range req.Owned {
			owned[p] = true
		}
		m.Revoking = slices.DeleteFunc(m.Revoking, func(p TP) bool { return !owned[p] })
	}
	if self != nil {
		self.LastHeartbeat = now
		changed[self.ID] = self
	}

	bump = settle(g, self, topics, now, &out, changed, bump)

	if self != nil {
		reconcile(g, self, now)
		out.Response = metadata.HeartbeatResponse{
			MemberID: self.ID, MemberEpoch: self.Epoch, GroupEpoch: g.Epoch,
			Assigned: slices.Clone(self.Assigned), Pending: pending(self),
			HeartbeatInterval: HeartbeatInterval(self.SessionTimeoutMs),
		}
		if out.Response.Pending > 0 || len(self.Revoking) > 0 {
			out.Response.HeartbeatInterval = min(out.Response.HeartbeatInterval, ReconcileInterval)
		}
	} else {
		out.Response = metadata.HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: metadata.LeaveEpoch,
			GroupEpoch: g.Epoch, Assigned: []TP{}, HeartbeatInterval: HeartbeatInterval(timeout)}
	}
	if g.RebalanceMs < 0 && g.stable() {
		g.RebalanceMs = now - g.RebalanceAt
		out.GroupChanged = true
	}
	for _, m := range changed {
		out.Upsert = append(out.Upsert, m)
	}
	slices.SortFunc(out.Upsert, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// settle fences g's expired members (but self), takes note of changed
// topics and, when anything bumped the epoch, recomputes the target
// assignment; members whose target changed are added to changed.
func settle(g *Group, self *Member, topics map[string]Topic, now int64, out *Outcome, changed map[string]*Member, bump bool) bool {
	// Fence expired members.
	g.Members = slices.DeleteFunc(g.Members, func(m *Member) bool {
		if m == self || !m.Expired(now) {
			return false
		}
		out.Deleted = append(out.Deleted, m.ID)
		delete(changed, m.ID)
		bump = true
		return true
	})

	// Topic metadata.
	names := g.unionNames()
	var live []Topic
	for _, n := range names {
		if t, ok := topics[n]; ok {
			live = append(live, t)
		}
	}
	sig := TopicsSignature(live)
	if !slices.Equal(names, g.TopicNames) || sig != g.TopicsSig {
		g.TopicNames, g.TopicsSig = names, sig
		out.GroupChanged = true
		if len(g.Members) > 0 {
			bump = true
		}
	}

	if bump {
		g.Epoch++
		g.RebalanceAt, g.RebalanceMs = now, -1
		out.GroupChanged = true
		subs := make([]Subscriber, len(g.Members))
		parts := map[int64]int32{}
		for i, m := range g.Members {
			subs[i] = Subscriber{ID: m.ID, Previous: m.Target}
			for _, n := range m.Subscription {
				if t, ok := topics[n]; ok {
					subs[i].Topics = append(subs[i].Topics, t.ID)
					parts[t.ID] = t.Partitions
				}
			}
		}
		target := Assign(subs, parts)
		for _, m := range g.Members {
			if t := target[m.ID]; !slices.Equal(t, m.Target) {
				m.Target = t
				changed[m.ID] = m
			}
		}
	}

	return bump
}

func (g *Group) stable() bool {
	for _, m := range g.Members {
		if !m.Stable(g.Epoch) {
			return false
		}
	}
	return true
}

// State is the group's summary state.
func (g *Group) State() metadata.GroupState {
	switch {
	case len(g.Members) == 0:
		return metadata.GroupEmpty
	case g.stable():
		return metadata.GroupStable
	}
	return metadata.GroupReconciling
}

func pending(m *Member) int {
	n := 0
	for _, p := range m.Target {
		if _, found := slices.BinarySearchFunc(m.Assigned, p, CompareTP); !found {
			n++
		}
	}
	return n
}

// reconcile moves m towards its target: assigned partitions outside the
// target start being revoked (released at once when not owned), target
// partitions no other member holds are granted, and the member takes the
// group epoch once it has nothing left to release.
func reconcile(g *Group, m *Member, now int64) {
	inTarget := func(p TP) bool { _, ok := slices.BinarySearchFunc(m.Target, p, CompareTP); return ok }
	var keep []TP
	for _, p := range m.Assigned {
		if inTarget(p) {
			keep = append(keep, p)
		} else {
			m.Revoking = append(m.Revoking, p)
		}
	}
	SortTPs(m.Revoking)
	m.Revoking = slices.Compact(m.Revoking)
	held := map[TP]bool{}
	for _, o := range g.Members {
		if o == m {
			continue
		}
		for _, p := range o.Assigned {
			held[p] = true
		}
		for _, p := range o.Revoking {
			held[p] = true
		}
	}
	for _, p := range m.Revoking {
		held[p] = true // still ours until released
	}
	for _, p := range keep {
		held[p] = true // already ours
	}
	for _, p := range m.Target {
		if !held[p] {
			keep = append(keep, p)
		}
	}
	SortTPs(keep)
	if keep == nil {
		keep = []TP{}
	}
	m.Assigned = keep
	if len(m.Revoking) == 0 {
		m.RevokingSince = 0
		m.Epoch = g.Epoch
	} else if m.RevokingSince == 0 {
		m.RevokingSince = now
	}
}
