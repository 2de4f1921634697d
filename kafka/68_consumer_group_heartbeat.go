package kafka

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
)

// ConsumerGroupHeartbeat: v0 to v1 (KIP-848, `group.protocol=consumer`).
//
// floe's own groups are KIP-848's: this is floe's group heartbeat (the
// one gRPC consumers use), so a Kafka consumer of this protocol and a gRPC
// consumer are members of one group, with one assignment (floe's balanced
// sticky assignor) and one set of positions. Epoch 0 joins (with the
// member id the client chose, or one floe makes), -1 and -2 leave; the
// answer's assignment is what the member may own now (partitions still
// held by another member arrive in a later heartbeat, as in Kafka).
// A regex subscription (SubscribedTopicRegex) is resolved to topic names
// by the agent (regex_subscriptions.go): the topics it matches that the
// member may DESCRIBE, redone when the topic set changes; an invalid one
// is INVALID_REGULAR_EXPRESSION.
// Deviations: the session timeout is floe's default (45 s); server
// assignor names and rack ids are ignored; the assignment is sent in
// every answer (Kafka sends it only when it changed); a regex is Go's
// (RE2), not RE2/J (see regex_subscriptions.go).

func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, async(consumerGroupHeartbeat)) }

// memberKey names a KIP-848 member.
type memberKey struct{ group, member string }

// ownedCache remembers what each KIP-848 member last said it owns: a
// heartbeat that leaves its owned partitions out (null: unchanged) owns
// what it owned before.
type ownedCache struct {
	mu  sync.Mutex // protects m
	m   map[memberKey][]metadata.TopicPartition
	max int
}

func (c *ownedCache) get(k memberKey) ([]metadata.TopicPartition, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *ownedCache) set(k memberKey, v []metadata.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old := range c.m { // full: forget one; its next heartbeat reads the store
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

func (c *ownedCache) drop(k memberKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

func consumerGroupHeartbeat(ctx context.Context, s *Server, c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	epoch := req.MemberEpoch
	if epoch == -2 { // a static member's leave
		epoch = metadata.LeaveEpoch
	}
	key := memberKey{req.Group, req.MemberID}
	hb := metadata.HeartbeatRequest{Group: req.Group, MemberID: req.MemberID, MemberEpoch: epoch}
	if r := req.SubscribedTopicRegex; r != nil && *r == "" { // the regex is dropped
		s.regex.forget(key)
	}
	var regex *regexMember
	if epoch != metadata.LeaveEpoch {
		sub, m, err := s.regex.subscription(ctx, key, req.SubscribedTopicRegex, req.SubscribedTopicNames, epoch == metadata.JoinEpoch, s.describable(c))
		var bad errInvalidRegex
		switch {
		case errors.As(err, &bad):
			return fail(kerr.InvalidRegularExpression.Code, bad.msg)
		case err != nil:
			return fail(errCode(err), *errMessage(err))
		}
		hb.Subscription, regex = sub, m
	}
	// A leave's subscription is ignored: the Java consumer unsubscribes as
	// it closes, so its leave names no topic.
	if regex == nil && req.SubscribedTopicNames != nil && epoch != metadata.LeaveEpoch {
		hb.Subscription = req.SubscribedTopicNames
		if len(hb.Subscription) == 0 {
			return fail(kerr.InvalidRequest.Code, "an empty subscription: leave the group instead")
		}
	}
	if epoch > 0 {
		owned, err := s.ownedOf(ctx, key, req.Topics)
		if err != nil {
			return fail(errCode(err), *errMessage(err))
		}
		hb.Owned = owned
	}
	hr, err := s.be.KafkaGroupHeartbeat(ctx, hb)
	if err != nil {
		s.owned.drop(key)
		code := errCode(err)
		if code == kerr.IllegalGeneration.Code { // floe's stale epoch: rejoin
			code = kerr.FencedMemberEpoch.Code
		}
		return fail(code, *errMessage(err))
	}
	id := hr.MemberID
	resp.MemberID, resp.MemberEpoch = &id, hr.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(hr.HeartbeatInterval / time.Millisecond)
	if epoch == metadata.LeaveEpoch {
		s.owned.drop(memberKey{req.Group, id})
		s.regex.forget(memberKey{req.Group, id})
		return resp
	}
	s.regex.remember(memberKey{req.Group, id}, regex)
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	byTopic := map[int64][]int32{}
	for _, tp := range hr.Assigned {
		byTopic[tp.TopicID] = append(byTopic[tp.TopicID], tp.Partition)
	}
	ids := make([]int64, 0, len(byTopic))
	for tid := range byTopic {
		ids = append(ids, tid)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, tid := range ids {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID, at.Partitions = topicUUID(tid), byTopic[tid]
		a.Topics = append(a.Topics, at)
	}
	resp.Assignment = &a
	// Until the member says otherwise, it owns what it owned and what it
	// was just given (over-counting only delays a move; under-counting
	// could give a partition it still reads to another member).
	k := memberKey{req.Group, id}
	owned, _ := s.owned.get(k)
	s.owned.set(k, mergeOwned(owned, hr.Assigned))
	return resp
}

// describable is whether c's principal may DESCRIBE a topic (always, with
// authorization off).
func (s *Server) describable(c *conn) func(topic string) bool {
	g := s.guard()
	if !g.Enabled() {
		return func(string) bool { return true }
	}
	p, _ := c.authenticated()
	ck := connChecker{s: s, p: p}
	return func(topic string) bool { return ck.permits(auth.OpDescribe, auth.Topic(topic)) }
}

// ownedOf is what the member owns: the partitions of the request, or, when
// it left them out (unchanged), what it last said, or failing that what
// the store says it holds.
func (s *Server) ownedOf(ctx context.Context, key memberKey, topics []kmsg.ConsumerGroupHeartbeatRequestTopic) ([]metadata.TopicPartition, error) {
	if topics != nil {
		owned := []metadata.TopicPartition{}
		for _, t := range topics {
			id := topicIDOf(t.TopicID)
			if id <= 0 {
				continue // a topic floe never named: nothing of it is floe's to track
			}
			for _, p := range t.Partitions {
				owned = append(owned, metadata.TopicPartition{TopicID: id, Partition: p})
			}
		}
		s.owned.set(key, owned)
		return owned, nil
	}
	if owned, ok := s.owned.get(key); ok {
		return owned, nil
	}
	d, err := s.be.KafkaDescribeGroup(ctx, key.group)
	if err != nil {
		return nil, err
	}
	for _, m := range d.Members {
		if m.MemberID == key.member {
			owned := mergeOwned(m.Assigned, m.Revoking)
			s.owned.set(key, owned)
			return owned, nil
		}
	}
	return []metadata.TopicPartition{}, nil
}

// mergeOwned is a ∪ b (a new slice).
func mergeOwned(a, b []metadata.TopicPartition) []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(a)+len(b))
	seen := make(map[metadata.TopicPartition]bool, len(a)+len(b))
	for _, tp := range append(append([]metadata.TopicPartition{}, a...), b...) {
		if !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	return out
}
