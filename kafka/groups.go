package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The classic group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup): the coordinator keeps each group's members, generation and
// the leader's assignment, as Apache Kafka's group coordinator does, and
// the client-side assignors (range, round-robin, sticky, cooperative
// sticky) work unchanged. Committed offsets are not kept here: they are
// floe's group positions in the metadata store (08_offset_commit.go), one
// state with the gRPC groups.
//
// Membership is held in the memory of the group's coordinator, the one
// agent coordinatorOf picks among the live agents (cluster.go), which
// FindCoordinator names on every agent: a group whose members all left is
// forgotten (its positions stay in the store). Another agent answers the
// group's JoinGroup, SyncGroup, Heartbeat and LeaveGroup with
// NOT_COORDINATOR, and a coordinator that stops being one (an agent
// joined, or its view lost it) drops the group and fails its waiters with
// NOT_COORDINATOR: the members find the new coordinator and rejoin there.
// After the coordinator dies, members find a survivor once its row's ttl
// has passed, rejoin and carry on from the committed positions.
//
// States, as Kafka names them: Empty (no member, only pending ids),
// PreparingRebalance (waiting for every member to rejoin, bounded by the
// longest rebalance timeout; those that do not are removed),
// CompletingRebalance (joined: waiting for the leader's SyncGroup), Stable.
// Members not heard from are removed by expireRule (member_expiry.go).

// groupState is a classic group's state.
type groupState int

const (
	stateEmpty groupState = iota
	statePreparing
	stateCompleting
	stateStable
)

func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}[s]
}

// joinResult is what a JoinGroup waiter is answered.
type joinResult struct {
	code       int16
	generation int32
	protocol   string
	leader     string
	memberID   string
	members    []kmsg.JoinGroupResponseMember // the leader's only
	// skipAssignment: the leader is a restarted static member whose group
	// keeps its assignment (KIP-814, JoinGroup v9).
	skipAssignment bool
}

// syncResult is what a SyncGroup waiter is answered.
type syncResult struct {
	code                   int16
	assignment             []byte
	protocolType, protocol string // the group's, with an assignment
}

// assigned is the SyncGroup answer that gives m its assignment. Locked.
func (g *group) assigned(m *member) syncResult {
	return syncResult{assignment: m.assignment, protocolType: g.protocolType, protocol: g.protocol}
}

// member is one classic group member.
type member struct {
	id               string
	instanceID       *string
	clientID, host   string
	protocols        []kmsg.JoinGroupRequestProtocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	lastSeen         time.Time
	assignment       []byte
	joined           bool            // rejoined during the current rebalance
	synced           bool            // sent SyncGroup for the current generation
	join             chan joinResult // a JoinGroup waiting, or nil
	sync             chan syncResult // a SyncGroup waiting, or nil
}

// group is one classic group.
type group struct {
	name         string
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	pending      map[string]time.Time // member ids handed out by MEMBER_ID_REQUIRED, until when
	deadline     time.Time            // end of the current PreparingRebalance
	syncDeadline time.Time            // when members that have not synced are removed (zero: none)
	delay        initialDelay         // an empty group's first join (initial_delay.go)
}

// coordinator holds the classic groups of this agent.
type coordinator struct {
	s *Server

	mu     sync.Mutex // protects groups and every group and member in it
	groups map[string]*group
}

func newCoordinator(s *Server) *coordinator {
	return &coordinator{s: s, groups: map[string]*group{}}
}

// groupTick is how often rebalance deadlines and sessions are checked.
const groupTick = 100 * time.Millisecond

// run checks deadlines and sessions until ctx ends. Each pass looks at
// the groups held, which are only those with members or pending ids.
func (c *coordinator) run(ctx context.Context) {
	t := time.NewTicker(groupTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.mu.Lock()
			for _, g := range c.groups {
				for _, m := range g.members {
					c.failWaiters(m, kerr.NotCoordinator.Code)
				}
			}
			c.mu.Unlock()
			return
		case now := <-t.C:
			view := c.s.agents.current()
			c.mu.Lock()
			for _, g := range c.groups {
				if !view.ownsGroup(g.name) {
					c.s.log.Info("kafka: group moved to another coordinator", "group", g.name, "coordinator", coordinatorOf(g.name, view.agents, view.self).NodeID)
					for _, m := range g.members {
						c.failWaiters(m, kerr.NotCoordinator.Code)
					}
					delete(c.groups, g.name)
					continue
				}
				c.tick(g, now)
			}
			c.mu.Unlock()
		}
	}
}

// tick expires members and pending ids and ends a rebalance past its
// deadline. Locked.
func (c *coordinator) tick(g *group, now time.Time) {
	pendingGone := false
	for id, until := range g.pending {
		if now.After(until) {
			delete(g.pending, id)
			pendingGone = true
		}
	}
	syncLate := !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline)
	expired := false
	for id, m := range g.members {
		why := expireRule(expiryFacts{
			state: g.state, waiting: m.join != nil || m.sync != nil,
			sinceSeen: now.Sub(m.lastSeen), session: m.sessionTimeout,
			synced: m.synced, syncLate: syncLate,
		})
		switch why {
		case expirySession:
			c.s.log.Info("kafka: group member session expired", "group", g.name, "member", id, "client", m.clientID, "state", g.state.String())
		case expirySync:
			c.s.log.Info("kafka: group member removed: joined but did not send SyncGroup within the rebalance timeout", "group", g.name, "member", id, "client", m.clientID)
		default:
			continue
		}
		delete(g.members, id) // completeJoin picks another leader if need be
		expired = true
	}
	if syncLate {
		g.syncDeadline = time.Time{} // every member synced or is gone
	}
	switch {
	case g.state == statePreparing && !now.Before(g.deadline) && g.delay.on:
		next, complete := delayedJoinEnd(g.delay, now, c.s.cfg.InitialRebalanceDelay)
		if complete {
			c.completeJoin(g)
		} else {
			g.deadline, g.delay.joined = next, false
		}
	case g.state == statePreparing && !now.Before(g.deadline):
		c.completeJoin(g)
	case (expired || pendingGone) && g.state == statePreparing:
		// The others may all have rejoined already.
		c.maybeComplete(g)
		if len(g.members) == 0 {
			c.completeJoin(g)
		}
	case expired:
		c.rebalance(g, now)
	}
	c.forgetIfIdle(g)
}

// forgetIfIdle drops a group with neither members nor pending ids. Locked.
func (c *coordinator) forgetIfIdle(g *group) {
	if len(g.members) == 0 && len(g.pending) == 0 {
		delete(c.groups, g.name)
	}
}

// failWaiters answers m's waiting calls with code. Locked.
func (c *coordinator) failWaiters(m *member, code int16) {
	if m.join != nil {
		m.join <- joinResult{code: code, memberID: m.id, generation: -1}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncResult{code: code}
		m.sync = nil
	}
}

// rebalance starts a PreparingRebalance (or, without members, empties
// the group). Locked.
func (c *coordinator) rebalance(g *group, now time.Time) {
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = stateEmpty, "", ""
		g.generation++
		return
	}
	wasEmpty := g.state == stateEmpty
	g.state = statePreparing
	g.syncDeadline = time.Time{}
	for _, m := range g.members {
		m.joined = m.join != nil
		if m.sync != nil {
			m.sync <- syncResult{code: kerr.RebalanceInProgress.Code}
			m.sync = nil
		}
	}
	longest := longestRebalance(g)
	g.deadline = now.Add(longest)
	g.delay = initialDelay{first: wasEmpty}
	if wasEmpty && c.s.cfg.InitialRebalanceDelay > 0 {
		g.deadline = now.Add(min(longest, c.s.cfg.InitialRebalanceDelay))
		g.delay = initialDelay{on: true, first: true, end: now.Add(longest)}
	}
}

// maybeComplete completes the join once every member has rejoined and no
// member id handed out by MEMBER_ID_REQUIRED is still to join, unless an
// empty group's first join waits out its initial delay (tick ends it).
// Locked.
func (c *coordinator) maybeComplete(g *group) {
	if g.state != statePreparing || g.delay.on {
		return
	}
	if len(g.pending) > 0 && !g.delay.first {
		// A member told MEMBER_ID_REQUIRED is on its way back with its id:
		// the join waits for it (until its session or the rebalance
		// timeout), as Kafka's does, rather than completing and
		// rebalancing again as soon as it arrives. Not an empty group's
		// first join: Kafka ends that one on its initial delay's timer
		// (0 by default here), whoever is pending.
		return
	}
	for _, m := range g.members {
		if !m.joined {
			return
		}
	}
	c.completeJoin(g)
}

// completeJoin ends a PreparingRebalance: dynamic members that did not
// rejoin are removed, the generation is bumped, a protocol every member
// supports is chosen and every waiting JoinGroup is answered (the leader
// with the members). Locked.
func (c *coordinator) completeJoin(g *group) {
	for id, m := range g.members {
		if !m.joined && m.instanceID == nil {
			c.s.log.Info("kafka: group member removed: did not rejoin in time", "group", g.name, "member", id)
			c.failWaiters(m, kerr.UnknownMemberID.Code)
			delete(g.members, id)
		}
	}
	// A static member that did not rejoin stays, with the metadata it
	// joined with (the leader assigns it its share), as in Kafka: its
	// session, or the sync deadline, removes it if it does not come back.
	leader, ok := joinedLeader(g)
	if !ok && len(g.members) > 0 {
		// Only static members that did not rejoin: no one to answer. Wait
		// another rebalance timeout; their sessions remove them (Kafka
		// reschedules the join the same way).
		g.deadline = time.Now().Add(longestRebalance(g))
		c.s.log.Warn("kafka: group could not complete its rebalance: no member rejoined", "group", g.name)
		return
	}
	g.generation++
	g.syncDeadline, g.delay = time.Time{}, initialDelay{}
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = stateEmpty, "", ""
		return
	}
	g.leader = leader
	g.protocol = chooseProtocol(g)
	g.state = stateCompleting
	c.s.log.Debug("kafka: group joined", "group", g.name, "generation", g.generation, "members", len(g.members), "leader", g.leader, "protocol", g.protocol)
	all := joinMembers(g)
	now := time.Now()
	g.syncDeadline = now.Add(longestRebalance(g)) // every member syncs within it (expireRule)
	for _, m := range g.members {
		m.assignment = nil
		m.joined, m.synced = false, false
		if m.join == nil {
			continue
		}
		r := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader, memberID: m.id}
		if m.id == g.leader {
			r.members = all
		}
		m.join <- r
		m.join = nil
		m.lastSeen = now
	}
}

// longestRebalance is the longest rebalance timeout of g's members: what
// a join, and the syncs after it, may take. Locked.
func longestRebalance(g *group) time.Duration {
	var longest time.Duration
	for _, m := range g.members {
		longest = max(longest, m.rebalanceTimeout)
	}
	return longest
}

// joinedLeader returns the group's leader if it rejoined, or else the
// rejoined member with the smallest id; false when no member rejoined.
// Locked.
func joinedLeader(g *group) (string, bool) {
	if m, ok := g.members[g.leader]; ok && m.joined {
		return g.leader, true
	}
	ids := make([]string, 0, len(g.members))
	for id, m := range g.members {
		if m.joined {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	sort.Strings(ids)
	return ids[0], true
}

// joinMembers is the members list of the leader's JoinGroup answer, by
// member id. Locked.
func joinMembers(g *group) []kmsg.JoinGroupResponseMember {
	all := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID = m.id, m.instanceID
		jm.ProtocolMetadata = protocolMetadata(m, g.protocol)
		all = append(all, jm)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].MemberID < all[j].MemberID })
	return all
}

func supports(m *member, protocol string) bool {
	return slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == protocol })
}

func protocolMetadata(m *member, protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// newMemberID is a fresh member id: the client id and a random suffix,
// as Kafka makes them.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if len(clientID) > 64 {
		clientID = clientID[:64]
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// joinRequest is a JoinGroup as the coordinator sees it.
type joinRequest struct {
	group, memberID, protocolType string
	instanceID                    *string
	clientID, host                string
	protocols                     []kmsg.JoinGroupRequestProtocol
	session, rebalance            time.Duration
	requireKnownID                bool // v4+: an empty member id gets MEMBER_ID_REQUIRED
	canSkipAssignment             bool // v9+: the answer can carry SkipAssignment
}

// join adds or refreshes a member and starts (or joins) a rebalance. It
// returns the channel the answer comes on, or an immediate answer.
func (c *coordinator) join(r joinRequest) (<-chan joinResult, joinResult) {
	switch {
	case r.group == "":
		return nil, joinResult{code: kerr.InvalidGroupID.Code}
	case r.session < c.s.cfg.MinSessionTimeout || r.session > c.s.cfg.MaxSessionTimeout:
		return nil, joinResult{code: kerr.InvalidSessionTimeout.Code, memberID: r.memberID}
	case r.protocolType == "" || len(r.protocols) == 0:
		return nil, joinResult{code: kerr.InconsistentGroupProtocol.Code, memberID: r.memberID}
	case !c.s.agents.current().ownsGroup(r.group):
		return nil, joinResult{code: kerr.NotCoordinator.Code, memberID: r.memberID}
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[r.group]
	if !ok {
		if len(c.groups) >= c.s.cfg.MaxGroups {
			return nil, joinResult{code: kerr.CoordinatorNotAvailable.Code, memberID: r.memberID}
		}
		g = &group{name: r.group, members: map[string]*member{}, pending: map[string]time.Time{}}
		c.groups[r.group] = g
	}
	if len(g.members) > 0 && g.protocolType != r.protocolType {
		return nil, joinResult{code: kerr.InconsistentGroupProtocol.Code, memberID: r.memberID}
	}
	for _, m := range g.members {
		if m.id != r.memberID && !slices.ContainsFunc(r.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return supports(m, p.Name) }) {
			return nil, joinResult{code: kerr.InconsistentGroupProtocol.Code, memberID: r.memberID}
		}
	}
	// A static member (group.instance.id) restarted without its member id
	// takes over its previous id; a member id other than the holder's is
	// fenced (staticRule).
	holder := g.instanceHolder(r.instanceID)
	switch staticRule(r.instanceID, holder, r.memberID, true) {
	case staticFenced:
		return nil, joinResult{code: kerr.FencedInstanceID.Code, memberID: r.memberID}
	case staticTakeOver:
		old := g.members[holder]
		stable := g.state == stateStable // keepsProtocol needs a Stable group's leader
		if staticKeepsAssignment(stable, stable && g.keepsProtocol(old, r.protocols), holder == g.leader, r.canSkipAssignment) {
			return nil, c.replaceStatic(g, old, r, now)
		}
		c.failWaiters(old, kerr.FencedInstanceID.Code)
		delete(g.members, holder)
		if g.leader == holder {
			g.leader = ""
		}
	}
	takeOver := holder != "" && r.memberID == "" // a static member replaced, not a new one
	m, known := g.members[r.memberID]
	switch {
	case known:
	case r.memberID == "":
		id := newMemberID(r.clientID)
		if r.requireKnownID && r.instanceID == nil {
			g.pending[id] = now.Add(r.session)
			return nil, joinResult{code: kerr.MemberIDRequired.Code, memberID: id}
		}
		r.memberID = id
	default:
		if _, ok := g.pending[r.memberID]; !ok && r.instanceID == nil {
			c.forgetIfIdle(g)
			return nil, joinResult{code: kerr.UnknownMemberID.Code, memberID: r.memberID}
		}
		delete(g.pending, r.memberID)
	}
	if known && rejoinRule(g.state, m.id == g.leader, sameProtocols(m.protocols, r.protocols)) == rejoinCurrent {
		m.lastSeen = now
		return nil, currentGeneration(g, m)
	}
	if !known {
		if len(g.members) >= c.s.cfg.MaxGroupMembers {
			c.maybeComplete(g) // the join may have waited for this pending id
			c.forgetIfIdle(g)
			return nil, joinResult{code: kerr.GroupMaxSizeReached.Code, memberID: r.memberID}
		}
		m = &member{id: r.memberID}
		g.members[m.id] = m
	}
	g.protocolType = r.protocolType
	m.instanceID, m.clientID, m.host = r.instanceID, r.clientID, r.host
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = r.protocols, r.session, r.rebalance
	m.lastSeen = now
	if m.join != nil { // a previous join of this member still waits
		m.join <- joinResult{code: kerr.RebalanceInProgress.Code, memberID: m.id, generation: -1}
	}
	ch := make(chan joinResult, 1)
	m.join = ch
	if g.state != statePreparing {
		c.rebalance(g, now)
	} else if !known && !takeOver && g.delay.on {
		g.delay.joined = true // a new member during the initial delay starts it again
	}
	m.joined = true
	c.maybeComplete(g)
	return ch, joinResult{}
}

// sync records the leader's assignment or waits for it.
// protocolType and protocol are the request's (v5+; nil: not given): when
// given, they must be the group's (INCONSISTENT_GROUP_PROTOCOL, as Kafka).
func (c *coordinator) sync(groupName, memberID string, instance *string, generation int32, protocolType, protocol *string, assignments []kmsg.SyncGroupRequestGroupAssignment) (<-chan syncResult, syncResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m, code := c.lookup(groupName, memberID, instance, generation)
	if code != 0 {
		return nil, syncResult{code: code}
	}
	if protocolDiffers(protocolType, g.protocolType) || protocolDiffers(protocol, g.protocol) {
		return nil, syncResult{code: kerr.InconsistentGroupProtocol.Code}
	}
	m.lastSeen = time.Now()
	switch g.state {
	case statePreparing:
		return nil, syncResult{code: kerr.RebalanceInProgress.Code}
	case stateStable:
		m.synced = true
		return nil, g.assigned(m)
	}
	m.synced = true
	if m.sync != nil {
		m.sync <- syncResult{code: kerr.RebalanceInProgress.Code}
		m.sync = nil
	}
	if memberID != g.leader {
		ch := make(chan syncResult, 1)
		m.sync = ch
		return ch, syncResult{}
	}
	for _, a := range assignments {
		if am, ok := g.members[a.MemberID]; ok {
			am.assignment = a.MemberAssignment
		}
	}
	g.state = stateStable
	for _, om := range g.members {
		if om.sync != nil {
			om.sync <- g.assigned(om)
			om.sync = nil
		}
	}
	return nil, g.assigned(m)
}

// protocolDiffers reports whether a SyncGroup's protocol type or name
// (nil: not given) differs from the group's ("": none yet).
func protocolDiffers(req *string, group string) bool {
	return req != nil && group != "" && *req != group
}

// lookup finds a member of the current generation (instance: the static
// member's instance id the request names, or nil). Locked.
func (c *coordinator) lookup(groupName, memberID string, instance *string, generation int32) (*group, *member, int16) {
	if groupName == "" {
		return nil, nil, kerr.InvalidGroupID.Code // as Kafka's coordinator, before anything else
	}
	if !c.s.agents.current().ownsGroup(groupName) {
		return nil, nil, kerr.NotCoordinator.Code
	}
	g, ok := c.groups[groupName]
	if !ok {
		return nil, nil, kerr.UnknownMemberID.Code
	}
	if staticRule(instance, g.instanceHolder(instance), memberID, false) == staticFenced {
		return g, nil, kerr.FencedInstanceID.Code
	}
	m, ok := g.members[memberID]
	if !ok {
		return g, nil, kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return g, m, kerr.IllegalGeneration.Code
	}
	return g, m, 0
}

// heartbeat keeps a member's session and tells it of a rebalance.
func (c *coordinator) heartbeat(groupName, memberID string, instance *string, generation int32) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, m, code := c.lookup(groupName, memberID, instance, generation)
	if m != nil {
		m.lastSeen = time.Now()
	}
	if code != 0 {
		return code
	}
	if g.state == statePreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leave removes members (by id, or by instance id when id is empty).
func (c *coordinator) leave(groupName string, ids []string, instances []*string) []int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	codes := make([]int16, len(ids))
	if groupName == "" {
		for i := range codes {
			codes[i] = kerr.InvalidGroupID.Code
		}
		return codes
	}
	g, ok := c.groups[groupName]
	if !ok {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return codes
	}
	removed, pendingLeft := false, false
	for i, id := range ids {
		if id == "" && instances[i] != nil {
			for mid, m := range g.members {
				if m.instanceID != nil && *m.instanceID == *instances[i] {
					id = mid
				}
			}
		}
		if id != "" && staticRule(instances[i], g.instanceHolder(instances[i]), id, false) == staticFenced {
			codes[i] = kerr.FencedInstanceID.Code
			continue
		}
		m, ok := g.members[id]
		if _, pending := g.pending[id]; !ok && pending {
			delete(g.pending, id) // an id MEMBER_ID_REQUIRED handed out: it leaves (Kafka answers NONE)
			pendingLeft = true
			continue
		}
		if !ok {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		c.failWaiters(m, kerr.UnknownMemberID.Code)
		delete(g.members, id)
		removed = true
	}
	if !removed && pendingLeft && g.state == statePreparing {
		c.maybeComplete(g) // the join may have waited for it
	}
	if removed {
		if g.state == statePreparing {
			c.maybeComplete(g)
			if len(g.members) == 0 {
				c.completeJoin(g)
			}
		} else {
			c.rebalance(g, time.Now())
		}
	}
	c.forgetIfIdle(g)
	return codes
}

// commitCheck fences an offset commit of a classic group (commitFence
// is the rule).
func (c *coordinator) commitCheck(groupName, memberID string, generation int32) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := commitFacts{memberless: generation < 0 && memberID == "", generation: generation}
	if f.memberless {
		if g, ok := c.groups[groupName]; ok {
			f.members = len(g.members)
		}
		return commitFence(f)
	}
	g, m, code := c.lookup(groupName, memberID, nil, generation)
	if code == kerr.NotCoordinator.Code {
		return code
	}
	if m != nil {
		f.memberKnown, f.current, f.state = true, g.generation, g.state
	}
	if code = commitFence(f); code == 0 {
		m.lastSeen = time.Now() // a commit taken keeps the session, as a heartbeat
	}
	return code
}

// commitFacts is what commitFence decides on.
type commitFacts struct {
	memberless  bool  // generation < 0 and no member id: a simple (standalone or admin) commit
	members     int   // of the group held here, for a simple commit (0: none, or not held)
	memberKnown bool  // the member id is one of them
	generation  int32 // the commit's
	current     int32 // the group's
	state       groupState
}

// commitFence is the rule Apache Kafka's group coordinator applies to an
// offset commit of a classic group: a simple commit goes in only while the
// group has no members (ILLEGAL_GENERATION otherwise); a member commit
// needs a known member (UNKNOWN_MEMBER_ID) of the current generation
// (ILLEGAL_GENERATION). It goes in while the group is stable and also
// while it prepares a rebalance: until the next generation forms, the
// member still owns its partitions, and it commits what it has processed
// before it rejoins (an eager member's revoke). Once the generation has
// formed and waits for the leader's assignment (CompletingRebalance), no
// member knows what it owns: REBALANCE_IN_PROGRESS, and the client
// commits again after its SyncGroup.
func commitFence(f commitFacts) int16 {
	switch {
	case f.memberless && f.members > 0:
		return kerr.IllegalGeneration.Code
	case f.memberless:
		return 0
	case !f.memberKnown:
		return kerr.UnknownMemberID.Code
	case f.generation != f.current:
		return kerr.IllegalGeneration.Code
	case f.state == stateCompleting:
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// has reports whether memberID is a member of a classic group held here.
func (c *coordinator) has(groupName, memberID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[groupName]
	if !ok {
		return false
	}
	_, ok = g.members[memberID]
	return ok
}

// groupView is a classic group as DescribeGroups and ListGroups show it.
type groupView struct {
	state, protocolType, protocol string
	members                       []kmsg.DescribeGroupsResponseGroupMember
}

// describe returns a classic group held here.
func (c *coordinator) describe(name string) (groupView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[name]
	if !ok || len(g.members) == 0 {
		return groupView{}, false
	}
	v := groupView{state: g.state.String(), protocolType: g.protocolType, protocol: g.protocol}
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.host
		dm.ProtocolMetadata = protocolMetadata(m, g.protocol)
		dm.MemberAssignment = m.assignment
		v.members = append(v.members, dm)
	}
	sort.Slice(v.members, func(i, j int) bool { return v.members[i].MemberID < v.members[j].MemberID })
	return v, true
}

// list returns the classic groups with members held here, by name.
func (c *coordinator) list() map[string]groupView {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]groupView{}
	for name, g := range c.groups {
		if len(g.members) > 0 {
			out[name] = groupView{state: g.state.String(), protocolType: g.protocolType}
		}
	}
	return out
}
