package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// The GroupService handlers: thin translations between topic names (the
// API) and topic ids (the store), validated at the edge.

// maxGroupPartitions bounds the partitions named by one group request.
const maxGroupPartitions = 1 << 16

// maxCommitMetadata bounds the metadata string of one committed position.
const maxCommitMetadata = 4096

// Heartbeat implements floev1.GroupServiceServer.
func (a *Agent) Heartbeat(ctx context.Context, req *floev1.GroupHeartbeatRequest) (*floev1.GroupHeartbeatResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	if req.GetSessionTimeoutMs() < 0 {
		return nil, errf(codes.InvalidArgument, "heartbeat: session_timeout_ms must not be negative")
	}
	owned, err := a.resolveTPs(ctx, req.GetOwned())
	if err != nil {
		return nil, err
	}
	var sub []string
	if len(req.GetSubscription()) > 0 {
		sub = req.GetSubscription()
	}
	resp, err := a.meta.Heartbeat(ctx, metadata.HeartbeatRequest{
		Group: req.GetGroup(), MemberID: req.GetMemberId(), MemberEpoch: req.GetMemberEpoch(),
		Subscription: sub, Owned: owned,
		SessionTimeout: time.Duration(req.GetSessionTimeoutMs()) * time.Millisecond,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	names := newTopicNames(a.meta)
	assigned, err := names.tps(ctx, resp.Assigned)
	if err != nil {
		return nil, toStatus(err)
	}
	return &floev1.GroupHeartbeatResponse{
		MemberId: resp.MemberID, MemberEpoch: resp.MemberEpoch, GroupEpoch: resp.GroupEpoch,
		Assigned: assigned, Pending: int32(resp.Pending),
		HeartbeatIntervalMs: int32(resp.HeartbeatInterval / time.Millisecond),
	}, nil
}

// CommitOffsets implements floev1.GroupServiceServer.
func (a *Agent) CommitOffsets(ctx context.Context, req *floev1.CommitOffsetsRequest) (*floev1.CommitOffsetsResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	if len(req.GetOffsets()) == 0 {
		return nil, errf(codes.InvalidArgument, "commit offsets: no offsets")
	}
	if len(req.GetOffsets()) > maxGroupPartitions {
		return nil, errf(codes.InvalidArgument, "commit offsets: %d offsets, limit %d", len(req.GetOffsets()), maxGroupPartitions)
	}
	offs := make([]metadata.OffsetCommit, 0, len(req.GetOffsets()))
	seen := make(map[metadata.TopicPartition]bool, len(req.GetOffsets()))
	for _, o := range req.GetOffsets() {
		if o.GetOffset() < 0 {
			return nil, errf(codes.InvalidArgument, "commit offsets: negative offset %d for %s/%d", o.GetOffset(), o.GetTopic(), o.GetPartition())
		}
		if len(o.GetMetadata()) > maxCommitMetadata {
			return nil, errf(codes.InvalidArgument, "commit offsets: metadata of %s/%d is %d bytes, limit %d", o.GetTopic(), o.GetPartition(), len(o.GetMetadata()), maxCommitMetadata)
		}
		tp, err := a.resolveTP(ctx, o.GetTopic(), o.GetPartition())
		if err != nil {
			return nil, err
		}
		if seen[tp] {
			return nil, errf(codes.InvalidArgument, "commit offsets: %s/%d named twice", o.GetTopic(), o.GetPartition())
		}
		seen[tp] = true
		offs = append(offs, metadata.OffsetCommit{TopicID: tp.TopicID, Partition: tp.Partition, Offset: o.GetOffset(), Metadata: o.GetMetadata()})
	}
	err := a.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{
		Group: req.GetGroup(), MemberID: req.GetMemberId(), MemberEpoch: req.GetMemberEpoch(), Offsets: offs,
	})
	if err != nil {
		return nil, toStatus(err)
	}
	a.grp.committed(req.GetGroup(), req.GetMemberId(), offs)
	return &floev1.CommitOffsetsResponse{}, nil
}

// FetchOffsets implements floev1.GroupServiceServer.
func (a *Agent) FetchOffsets(ctx context.Context, req *floev1.FetchOffsetsRequest) (*floev1.FetchOffsetsResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	tps, err := a.resolveTPs(ctx, req.GetPartitions())
	if err != nil {
		return nil, err
	}
	offs, err := a.meta.FetchOffsets(ctx, req.GetGroup(), tps)
	if err != nil {
		return nil, toStatus(err)
	}
	names := newTopicNames(a.meta)
	resp := &floev1.FetchOffsetsResponse{}
	for _, o := range offs {
		n, ok, err := names.name(ctx, o.TopicID)
		if err != nil {
			return nil, toStatus(err)
		}
		if !ok {
			continue
		}
		resp.Offsets = append(resp.Offsets, &floev1.CommittedOffset{Topic: n, Partition: o.Partition, Offset: o.Offset,
			Metadata: o.Metadata, CommitTimeMs: o.CommitTime.UnixMilli()})
	}
	return resp, nil
}

// ListGroups implements floev1.GroupServiceServer.
func (a *Agent) ListGroups(ctx context.Context, _ *floev1.ListGroupsRequest) (*floev1.ListGroupsResponse, error) {
	gs, err := a.meta.ListGroups(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &floev1.ListGroupsResponse{}
	for _, g := range gs {
		resp.Groups = append(resp.Groups, &floev1.GroupListing{Group: g.Group, State: string(g.State), Members: int32(g.Members)})
	}
	return resp, nil
}

// DescribeGroup implements floev1.GroupServiceServer (lag in groups_lag.go).
func (a *Agent) DescribeGroup(ctx context.Context, req *floev1.DescribeGroupRequest) (*floev1.DescribeGroupResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	d, err := a.meta.DescribeGroup(ctx, req.GetGroup())
	if err != nil {
		return nil, toStatus(err)
	}
	names := newTopicNames(a.meta)
	resp := &floev1.DescribeGroupResponse{
		Group: d.Group, State: string(d.State), GroupEpoch: d.GroupEpoch,
		LastRebalanceDurationMs: d.LastRebalanceDuration.Milliseconds(),
	}
	if !d.LastRebalance.IsZero() {
		resp.LastRebalanceMs = d.LastRebalance.UnixMilli()
	}
	owners := make(map[metadata.TopicPartition]string)
	for _, m := range d.Members {
		pm := &floev1.GroupMember{MemberId: m.MemberID, MemberEpoch: m.MemberEpoch, Subscription: m.Subscription,
			SessionTimeoutMs: int32(m.SessionTimeout / time.Millisecond),
			LastHeartbeatMs:  m.LastHeartbeat.UnixMilli(), JoinedAtMs: m.JoinedAt.UnixMilli()}
		for _, l := range []struct {
			in  []metadata.TopicPartition
			out *[]*floev1.TopicPartition
		}{{m.Assigned, &pm.Assigned}, {m.Revoking, &pm.Revoking}, {m.Target, &pm.Target}} {
			if *l.out, err = names.tps(ctx, l.in); err != nil {
				return nil, toStatus(err)
			}
		}
		for _, tp := range m.Assigned {
			owners[tp] = m.MemberID
		}
		for _, tp := range m.Revoking {
			owners[tp] = m.MemberID
		}
		resp.Members = append(resp.Members, pm)
	}
	lags, err := a.groupLag(ctx, d.Group, names, time.Now())
	if err != nil {
		return nil, toStatus(err)
	}
	committed := make(map[metadata.TopicPartition]metadata.CommittedOffset, len(d.Offsets))
	for _, o := range d.Offsets {
		committed[metadata.TopicPartition{TopicID: o.TopicID, Partition: o.Partition}] = o
	}
	for _, l := range lags {
		tp := metadata.TopicPartition{TopicID: l.topicID, Partition: l.pb.Partition}
		l.pb.Owner = owners[tp]
		if o, ok := committed[tp]; ok {
			l.pb.Metadata, l.pb.CommitTimeMs = o.Metadata, o.CommitTime.UnixMilli()
		}
		resp.Partitions = append(resp.Partitions, l.pb)
	}
	return resp, nil
}

// DeleteGroup implements floev1.GroupServiceServer.
func (a *Agent) DeleteGroup(ctx context.Context, req *floev1.DeleteGroupRequest) (*floev1.DeleteGroupResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	if err := a.meta.DeleteGroup(ctx, req.GetGroup()); err != nil {
		return nil, toStatus(err)
	}
	a.grp.forget(req.GetGroup())
	return &floev1.DeleteGroupResponse{}, nil
}

// ResetOffsets implements floev1.GroupServiceServer.
func (a *Agent) ResetOffsets(ctx context.Context, req *floev1.ResetOffsetsRequest) (*floev1.ResetOffsetsResponse, error) {
	if err := checkGroupName("group", req.GetGroup()); err != nil {
		return nil, err
	}
	var spec metadata.ResetSpec
	switch req.GetSpec() {
	case floev1.ResetSpec_RESET_SPEC_EARLIEST:
		spec = metadata.ResetEarliest
	case floev1.ResetSpec_RESET_SPEC_LATEST:
		spec = metadata.ResetLatest
	case floev1.ResetSpec_RESET_SPEC_TIMESTAMP:
		spec = metadata.ResetTimestamp
	case floev1.ResetSpec_RESET_SPEC_OFFSET:
		spec = metadata.ResetOffset
		if req.GetOffset() < 0 {
			return nil, errf(codes.InvalidArgument, "reset offsets: negative offset %d", req.GetOffset())
		}
	case floev1.ResetSpec_RESET_SPEC_SHIFT:
		spec = metadata.ResetShift
	default:
		return nil, errf(codes.InvalidArgument, "reset offsets: spec must be earliest, latest, timestamp, offset or shift (got %d)", req.GetSpec())
	}
	tps, err := a.resolveTPs(ctx, req.GetPartitions())
	if err != nil {
		return nil, err
	}
	if len(req.GetTopics()) > maxGroupPartitions {
		return nil, errf(codes.InvalidArgument, "reset offsets: %d topics, limit %d", len(req.GetTopics()), maxGroupPartitions)
	}
	var topics []int64
	for _, n := range req.GetTopics() {
		t, err := a.topics.get(ctx, n)
		if err != nil {
			return nil, toStatus(err)
		}
		topics = append(topics, t.ID)
	}
	plan, err := a.meta.ResetOffsets(ctx, metadata.ResetOffsetsRequest{
		Group: req.GetGroup(), Partitions: tps, Topics: topics, Spec: spec,
		Timestamp: req.GetTimestampMs(), Offset: req.GetOffset(), Shift: req.GetShift(),
		Force: req.GetForce(), DryRun: req.GetDryRun(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	names := newTopicNames(a.meta)
	resp := &floev1.ResetOffsetsResponse{}
	for _, r := range plan {
		n, ok, err := names.name(ctx, r.TopicID)
		if err != nil {
			return nil, toStatus(err)
		}
		if !ok {
			continue
		}
		resp.Plan = append(resp.Plan, &floev1.OffsetResetPlan{Topic: n, Partition: r.Partition, Previous: r.Previous, New: r.New})
	}
	return resp, nil
}

// CopyOffsets implements floev1.GroupServiceServer.
func (a *Agent) CopyOffsets(ctx context.Context, req *floev1.CopyOffsetsRequest) (*floev1.CopyOffsetsResponse, error) {
	if err := checkGroupName("from group", req.GetFrom()); err != nil {
		return nil, err
	}
	if err := checkGroupName("to group", req.GetTo()); err != nil {
		return nil, err
	}
	if req.GetFrom() == req.GetTo() {
		return nil, errf(codes.InvalidArgument, "copy offsets: from and to are the same group %q", req.GetFrom())
	}
	n, err := a.meta.CopyOffsets(ctx, req.GetFrom(), req.GetTo())
	if err != nil {
		return nil, toStatus(err)
	}
	return &floev1.CopyOffsetsResponse{Copied: int32(n)}, nil
}

func checkGroupName(what, s string) error {
	if s == "" || len(s) > metadata.MaxGroupNameLen {
		return errf(codes.InvalidArgument, "%s must be 1 to %d bytes", what, metadata.MaxGroupNameLen)
	}
	return nil
}

// resolveTP checks a partition named by topic name and returns it by id.
func (a *Agent) resolveTP(ctx context.Context, topic string, p int32) (metadata.TopicPartition, error) {
	t, err := a.topicPartition(ctx, topic, p)
	if err != nil {
		return metadata.TopicPartition{}, err
	}
	return metadata.TopicPartition{TopicID: t.ID, Partition: p}, nil
}

func (a *Agent) resolveTPs(ctx context.Context, in []*floev1.TopicPartition) ([]metadata.TopicPartition, error) {
	if len(in) > maxGroupPartitions {
		return nil, errf(codes.InvalidArgument, "%d partitions named, limit %d", len(in), maxGroupPartitions)
	}
	var out []metadata.TopicPartition
	for _, tp := range in {
		r, err := a.resolveTP(ctx, tp.GetTopic(), tp.GetPartition())
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// topicNames maps topic ids to names for one request, one TopicByID per id.
type topicNames struct {
	meta  metadata.Store
	names map[int64]metadata.Topic // found topics
	gone  map[int64]bool           // deleted ones
}

func newTopicNames(meta metadata.Store) *topicNames {
	return &topicNames{meta: meta, names: make(map[int64]metadata.Topic), gone: make(map[int64]bool)}
}

// topic returns the topic with id; ok false when it was deleted.
func (n *topicNames) topic(ctx context.Context, id int64) (metadata.Topic, bool, error) {
	if t, ok := n.names[id]; ok {
		return t, true, nil
	}
	if n.gone[id] {
		return metadata.Topic{}, false, nil
	}
	t, err := n.meta.TopicByID(ctx, id)
	switch {
	case errors.Is(err, metadata.ErrTopicNotFound):
		n.gone[id] = true
		return metadata.Topic{}, false, nil
	case err != nil:
		return metadata.Topic{}, false, fmt.Errorf("topic by id: %w", err)
	}
	n.names[id] = t
	return t, true, nil
}

func (n *topicNames) name(ctx context.Context, id int64) (string, bool, error) {
	t, ok, err := n.topic(ctx, id)
	return t.Name, ok, err
}

// tps translates partitions by id to partitions by name, leaving out those
// of deleted topics.
func (n *topicNames) tps(ctx context.Context, in []metadata.TopicPartition) ([]*floev1.TopicPartition, error) {
	var out []*floev1.TopicPartition
	for _, tp := range in {
		name, ok, err := n.name(ctx, tp.TopicID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, &floev1.TopicPartition{Topic: name, Partition: tp.Partition})
		}
	}
	return out, nil
}
