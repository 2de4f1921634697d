package kafka

import (
	"errors"
	"github.com/floe-broker/floe/batcher"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
)

func withReason(c codes.Code, reason string) error {
	st, _ := status.New(c, "x").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "floe"})
	return st.Err()
}

// TestErrCode: floe's errors map to the Kafka codes clients act on.
func TestErrCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{status.Error(codes.NotFound, "x"), kerr.UnknownTopicOrPartition},
		{status.Error(codes.AlreadyExists, "x"), kerr.TopicAlreadyExists},
		{withReason(codes.InvalidArgument, agent.ReasonRecordTooLarge), kerr.MessageTooLarge},
		{withReason(codes.InvalidArgument, agent.ReasonRequestTooLarge), kerr.MessageTooLarge},
		{withReason(codes.InvalidArgument, agent.ReasonInvalidBatch), kerr.CorruptMessage},
		{withReason(codes.InvalidArgument, agent.ReasonInvalidValue), kerr.InvalidRecord},
		{withReason(codes.InvalidArgument, agent.ReasonInvalidTimestamp), kerr.InvalidTimestamp},
		{withReason(codes.FailedPrecondition, agent.ReasonUnknownProducer), kerr.UnknownProducerID},
		{withReason(codes.FailedPrecondition, agent.ReasonProducerFenced), kerr.InvalidProducerEpoch},
		{withReason(codes.FailedPrecondition, agent.ReasonOutOfOrderSequence), kerr.OutOfOrderSequenceNumber},
		{withReason(codes.Unknown, agent.ReasonOutcomeUnknown), kerr.RequestTimedOut},
		{withReason(codes.Unavailable, agent.ReasonNotCommitted), kerr.NotEnoughReplicas},
		{withReason(codes.Unavailable, agent.ReasonShuttingDown), kerr.NotLeaderForPartition},
		{withReason(codes.FailedPrecondition, agent.ReasonGroupNotEmpty), kerr.NonEmptyGroup},
		{withReason(codes.FailedPrecondition, agent.ReasonStaleMemberEpoch), kerr.IllegalGeneration},
		{withReason(codes.FailedPrecondition, agent.ReasonNotPartitionOwner), kerr.StaleMemberEpoch},
		{withReason(codes.OutOfRange, "OFFSET_OUT_OF_RANGE"), kerr.OffsetOutOfRange},
		{status.Error(codes.ResourceExhausted, "x"), kerr.RequestTimedOut},
		{status.Error(codes.Internal, "x"), kerr.UnknownServerError},
		{errors.New("plain"), kerr.UnknownServerError},
		{kerr.UnknownTopicID, kerr.UnknownTopicID},
	} {
		if got := errCode(c.err); got != c.want.Code {
			t.Errorf("%v: code %d, want %s (%d)", c.err, got, c.want.Message, c.want.Code)
		}
	}
	if errCode(nil) != 0 {
		t.Error("nil is not 0")
	}
}

// TestConfigValidate names the bad field.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatal(err)
	}
	for field, mutate := range map[string]func(*Config){
		"MaxFrameBytes":             func(c *Config) { c.MaxFrameBytes = 10 },
		"MaxConnections":            func(c *Config) { c.MaxConnections = 0 },
		"MaxInFlight":               func(c *Config) { c.MaxInFlight = 0 },
		"MaxBufferedBytes":          func(c *Config) { c.MaxBufferedBytes = int64(c.MaxFrameBytes) - 1 },
		"WriteTimeout":              func(c *Config) { c.WriteTimeout = 0 },
		"MinSessionTimeout":         func(c *Config) { c.MaxSessionTimeout = c.MinSessionTimeout - 1 },
		"InitialRebalanceDelay":     func(c *Config) { c.InitialRebalanceDelay = -1 },
		"MaxGroups":                 func(c *Config) { c.MaxGroups = 0 },
		"MaxGroupMembers":           func(c *Config) { c.MaxGroupMembers = 0 },
		"AdvertisedPort":            func(c *Config) { c.AdvertisedPort = -1 },
		"MaxFetchSessions":          func(c *Config) { c.MaxFetchSessions = -1 },
		"MaxFetchSessionPartitions": func(c *Config) { c.MaxFetchSessionPartitions = 0 },
		"FetchSessionEviction":      func(c *Config) { c.FetchSessionEviction = 0 },
	} {
		c := DefaultConfig()
		mutate(&c)
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func testCoordinator(t *testing.T) *coordinator {
	cfg := DefaultConfig()
	cfg.MinSessionTimeout = 10 * time.Millisecond
	s, err := New(cfg, nopBackend{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s.groups
}

// nopBackend satisfies Backend for coordinator tests (never called).
type nopBackend struct{ Backend }

// KafkaNewWriter keeps no writer (every connection asks for one).
func (nopBackend) KafkaNewWriter() *batcher.Writer { return nil }

func joinReq(member string) joinRequest {
	return joinRequest{group: "g", memberID: member, protocolType: "consumer", clientID: "c",
		protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{1}}},
		session:   time.Second, rebalance: time.Second, requireKnownID: true}
}

// TestCoordinatorJoin: MEMBER_ID_REQUIRED, unknown ids, a two-member
// rebalance, SyncGroup, heartbeats, session expiry and leave.
func TestCoordinatorJoin(t *testing.T) {
	c := testCoordinator(t)
	if _, r := c.join(joinReq("made-up")); r.code != kerr.UnknownMemberID.Code {
		t.Fatalf("an id never handed out: %d", r.code)
	}
	_, r := c.join(joinReq(""))
	if r.code != kerr.MemberIDRequired.Code || r.memberID == "" {
		t.Fatalf("an empty id: %+v", r)
	}
	a := r.memberID
	ch, _ := c.join(joinReq(a))
	ja := <-ch
	if ja.code != 0 || ja.leader != a || ja.generation != 1 || len(ja.members) != 1 {
		t.Fatalf("first join: %+v", ja)
	}
	if _, s := c.sync("g", a, nil, 1, nil, nil, []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: []byte("all")}}); s.code != 0 || string(s.assignment) != "all" {
		t.Fatalf("leader sync: %+v", s)
	}
	// A second member: the first must rejoin.
	_, r = c.join(joinReq(""))
	bID := r.memberID
	chB, _ := c.join(joinReq(bID))
	if code := c.heartbeat("g", a, nil, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during the rebalance: %d", code)
	}
	if code := c.commitCheck("g", a, 1); code != 0 {
		t.Fatalf("a commit of the current generation while the rebalance prepares (Kafka takes it): %d", code)
	}
	chA, _ := c.join(joinReq(a))
	ja, jb := <-chA, <-chB
	if ja.generation != 2 || jb.generation != 2 || ja.leader != a || len(ja.members) != 2 || len(jb.members) != 0 {
		t.Fatalf("second join: %+v / %+v", ja, jb)
	}
	if code := c.commitCheck("g", bID, 2); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a commit before the assignment (CompletingRebalance): %d", code)
	}
	if code := c.commitCheck("g", a, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("a commit of the previous generation: %d", code)
	}
	if code := c.heartbeat("g", a, nil, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("an old generation: %d", code)
	}
	syncB, _ := c.sync("g", bID, nil, 2, nil, nil, nil) // waits for the leader
	if _, s := c.sync("g", a, nil, 2, nil, nil, []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: []byte("A")}, {MemberID: bID, MemberAssignment: []byte("B")}}); string(s.assignment) != "A" {
		t.Fatalf("leader's assignment: %+v", s)
	}
	if s := <-syncB; s.code != 0 || string(s.assignment) != "B" {
		t.Fatalf("follower's assignment: %+v", s)
	}
	if code := c.commitCheck("g", bID, 2); code != 0 {
		t.Fatalf("a commit of the current generation: %d", code)
	}
	if code := c.commitCheck("g", "", -1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("a member-less commit of a group with members: %d", code)
	}
	// b stops heartbeating: past its session it is removed and a rebalances.
	c.mu.Lock()
	c.groups["g"].members[bID].lastSeen = time.Now().Add(-time.Hour)
	c.tick(c.groups["g"], time.Now())
	_, still := c.groups["g"].members[bID]
	c.mu.Unlock()
	if still {
		t.Fatal("an expired member is still in the group")
	}
	if code := c.heartbeat("g", a, nil, 2); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("after an expiry: %d", code)
	}
	chA, _ = c.join(joinReq(a))
	if ja := <-chA; ja.generation != 3 || len(ja.members) != 1 {
		t.Fatalf("rejoin alone: %+v", ja)
	}
	if codes := c.leave("g", []string{a}, []*string{nil}); codes[0] != 0 {
		t.Fatalf("leave: %v", codes)
	}
	if _, ok := c.describe("g"); ok {
		t.Fatal("an empty group is still described as classic")
	}
	if code := c.commitCheck("g", "", -1); code != 0 {
		t.Fatalf("a member-less commit of an empty group: %d", code)
	}
}

// TestCommitFence: the rule of a classic group's offset commit, state by
// state (Apache Kafka's GroupCoordinator).
func TestCommitFence(t *testing.T) {
	member := commitFacts{members: 2, memberKnown: true, generation: 4, current: 4}
	with := func(f commitFacts, edit func(*commitFacts)) commitFacts { edit(&f); return f }
	for _, tc := range []struct {
		name string
		f    commitFacts
		want int16
	}{
		{"simple commit, no members", commitFacts{memberless: true, generation: -1}, 0},
		{"simple commit, members", commitFacts{memberless: true, generation: -1, members: 1, state: stateStable}, kerr.IllegalGeneration.Code},
		{"stable", with(member, func(f *commitFacts) { f.state = stateStable }), 0},
		{"preparing a rebalance", with(member, func(f *commitFacts) { f.state = statePreparing }), 0},
		{"completing a rebalance", with(member, func(f *commitFacts) { f.state = stateCompleting }), kerr.RebalanceInProgress.Code},
		{"older generation", with(member, func(f *commitFacts) { f.state, f.generation = stateStable, 3 }), kerr.IllegalGeneration.Code},
		{"newer generation", with(member, func(f *commitFacts) { f.state, f.generation = statePreparing, 5 }), kerr.IllegalGeneration.Code},
		{"older generation while completing", with(member, func(f *commitFacts) { f.state, f.generation = stateCompleting, 3 }), kerr.IllegalGeneration.Code},
		{"unknown member", with(member, func(f *commitFacts) { f.memberKnown = false; f.state = stateStable }), kerr.UnknownMemberID.Code},
		{"group not held", commitFacts{generation: 1}, kerr.UnknownMemberID.Code},
	} {
		if got := commitFence(tc.f); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCoordinatorStaticMember: a static member rejoining with its instance
// id takes over its previous member id, which is fenced (staticRule).
func TestCoordinatorStaticMember(t *testing.T) {
	c := testCoordinator(t)
	inst := "instance-1"
	r1 := joinReq("")
	r1.instanceID = &inst
	ch, _ := c.join(r1)
	first := <-ch
	if first.code != 0 {
		t.Fatalf("static join: %+v", first)
	}
	ch2, _ := c.join(r1) // restarted: no member id, same instance id
	second := <-ch2
	if second.code != 0 || second.memberID == first.memberID {
		t.Fatalf("static rejoin: %+v (first %s)", second, first.memberID)
	}
	if code := c.heartbeat("g", first.memberID, nil, second.generation); code != kerr.UnknownMemberID.Code {
		t.Fatalf("the replaced id heartbeats: %d", code)
	}
	// The stale process, naming the instance, is answered
	// FENCED_INSTANCE_ID on its heartbeat, sync, join and leave and changes
	// nothing (before, its join took the instance back and fenced the new
	// one: a loop of rebalances).
	gen := second.generation
	if code := c.heartbeat("g", first.memberID, &inst, gen); code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale heartbeat: %d", code)
	}
	if _, s := c.sync("g", first.memberID, &inst, gen, nil, nil, nil); s.code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale sync: %+v", s)
	}
	stale := r1
	stale.memberID = first.memberID
	if _, j := c.join(stale); j.code != kerr.FencedInstanceID.Code {
		t.Fatalf("stale join: %+v", j)
	}
	if codes := c.leave("g", []string{first.memberID}, []*string{&inst}); codes[0] != kerr.FencedInstanceID.Code {
		t.Fatalf("stale leave: %v", codes)
	}
	// The new holder is untouched: same generation, still the member.
	if _, s := c.sync("g", second.memberID, &inst, gen, nil, nil, nil); s.code != 0 {
		t.Fatalf("the holder's sync after the stale requests: %+v", s)
	}
	if code := c.heartbeat("g", second.memberID, &inst, gen); code != 0 {
		t.Fatalf("the holder's heartbeat after the stale requests: %d", code)
	}
	if codes := c.leave("g", []string{""}, []*string{&inst}); codes[0] != 0 {
		t.Fatalf("leave by instance id: %v", codes)
	}
}

// An empty group id is INVALID_GROUP_ID for SyncGroup, Heartbeat and
// LeaveGroup, and an id MEMBER_ID_REQUIRED handed out leaves with NONE
// (and is then unknown), as in Apache Kafka's coordinator.
func TestCoordinatorGroupIDAndPendingLeave(t *testing.T) {
	c := testCoordinator(t)
	if code := c.heartbeat("", "m", nil, 1); code != kerr.InvalidGroupID.Code {
		t.Errorf("heartbeat of group \"\": %d", code)
	}
	if _, s := c.sync("", "m", nil, 1, nil, nil, nil); s.code != kerr.InvalidGroupID.Code {
		t.Errorf("sync of group \"\": %d", s.code)
	}
	if codes := c.leave("", []string{"m"}, []*string{nil}); codes[0] != kerr.InvalidGroupID.Code {
		t.Errorf("leave of group \"\": %v", codes)
	}
	_, r := c.join(joinReq(""))
	if r.code != kerr.MemberIDRequired.Code {
		t.Fatalf("join: %+v", r)
	}
	if codes := c.leave("g", []string{r.memberID}, []*string{nil}); codes[0] != 0 {
		t.Fatalf("leave of a pending id: %v", codes)
	}
	if _, j := c.join(joinReq(r.memberID)); j.code != kerr.UnknownMemberID.Code {
		t.Fatalf("a join with the id that left: %+v", j)
	}
}

// A v5 SyncGroup's protocol type and name, when given, must be the
// group's (INCONSISTENT_GROUP_PROTOCOL, nothing recorded); the answer
// carries the group's.
func TestCoordinatorSyncProtocolCheck(t *testing.T) {
	c := testCoordinator(t)
	_, r := c.join(joinReq(""))
	ch, _ := c.join(joinReq(r.memberID))
	j := <-ch
	str := func(s string) *string { return &s }
	all := []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.memberID, MemberAssignment: []byte("all")}}
	for _, tc := range []struct{ typ, name *string }{{str("connect"), nil}, {nil, str("roundrobin")}, {str("consumer"), str("sticky")}} {
		if _, s := c.sync("g", j.memberID, nil, j.generation, tc.typ, tc.name, all); s.code != kerr.InconsistentGroupProtocol.Code {
			t.Fatalf("sync with %v/%v: %+v, want INCONSISTENT_GROUP_PROTOCOL", tc.typ, tc.name, s)
		}
	}
	if code := c.commitCheck("g", j.memberID, j.generation); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a refused sync completed the rebalance: commit %d", code)
	}
	_, s := c.sync("g", j.memberID, nil, j.generation, str("consumer"), str("range"), all)
	if s.code != 0 || string(s.assignment) != "all" || s.protocolType != "consumer" || s.protocol != "range" {
		t.Fatalf("sync with the group's protocol: %+v", s)
	}
	if _, s = c.sync("g", j.memberID, nil, j.generation, nil, nil, nil); s.code != 0 || s.protocol != "range" {
		t.Fatalf("sync without the protocol (v4 and below): %+v", s)
	}
}
