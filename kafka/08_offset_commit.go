package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// OffsetCommit: v0 to v10, advertised up to v9. v10 names topics by id
// (an id that names no topic is UNKNOWN_TOPIC_ID; the answer gives the
// ids back); it is served to a client that sends it but not listed in
// ApiVersions, so that no client negotiates it: franz-go's kadm (1.17)
// would, and send topic names only, which v10 drops from the wire
// (Apache Kafka 4.1 keeps v10 unstable, unlisted; the Java client 4.1
// commits at v9).
//
// A commit naming a group.instance.id (v7+) of a classic group is
// FENCED_INSTANCE_ID from a member id other than the instance's, and
// UNKNOWN_MEMBER_ID when no member holds the instance (Kafka's
// validateMember).
// A classic member's commit is fenced by the coordinator (member id and
// generation of a group not rebalancing; generation -1 without a member id
// commits for a group with no members, as admin tools and manual
// assignment do), then written to floe's group positions, all partitions
// in one transaction: `floe group`, lag and gRPC consumers see them.
// A KIP-848 member's commit (v9, its member epoch as the generation) is
// fenced by floe's store exactly as a gRPC member's: STALE_MEMBER_EPOCH
// for an old epoch or a partition the member does not own.
// Deviations: v0 (ZooKeeper-era) commits are taken as v1; the leader
// epoch and retention time are ignored; a group that has live members of
// floe's own (gRPC, KIP-848-like) protocol refuses Kafka commits with
// NON_EMPTY_GROUP: the two protocols share positions, not membership.

func init() { registerUnadvertised(kmsg.OffsetCommit, 0, 10, 9, async(offsetCommit)) }

// maxCommitMetadata bounds a committed position's metadata (as gRPC's).
const maxCommitMetadata = 4096

func offsetCommit(ctx context.Context, s *Server, _ *conn, req *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := int16(0)
	// A member this agent's classic coordinator does not know is fenced
	// by floe's store: a KIP-848 member (its member epoch in Generation),
	// or a classic member this agent forgot (UNKNOWN_MEMBER_ID).
	floeMember := false
	instCode := int16(0)
	if req.Group != "" {
		instCode = s.groups.instanceCheck(req.Group, req.MemberID, req.InstanceID)
	}
	switch {
	case req.Group == "":
		code = kerr.InvalidGroupID.Code
	case instCode != 0: // v7+: a static instance's (validateMember)
		code = instCode
	case req.Version >= 1 && req.MemberID != "" && req.Generation >= 0 && !s.groups.has(req.Group, req.MemberID):
		floeMember = true
	case req.Version >= 1:
		code = s.groups.commitCheck(req.Group, req.MemberID, req.Generation)
	}
	var offsets []metadata.OffsetCommit
	type at struct{ t, p int }
	var where []at
	for ti, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t metadata.Topic
		var terr error
		if code == 0 {
			t, terr = s.topicRef(ctx, rt.Topic, rt.TopicID, req.Version >= 10)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			switch {
			case code != 0:
			case terr != nil:
				sp.ErrorCode = errCode(terr)
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.Offset < 0:
				sp.ErrorCode = kerr.InvalidCommitOffsetSize.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxCommitMetadata:
				sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				md := ""
				if rp.Metadata != nil {
					md = *rp.Metadata
				}
				offsets = append(offsets, metadata.OffsetCommit{TopicID: t.ID, Partition: rp.Partition, Offset: rp.Offset, Metadata: md})
				where = append(where, at{ti, len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(offsets) == 0 {
		return resp
	}
	member, epoch := "", int32(0)
	if floeMember {
		member, epoch = req.MemberID, req.Generation
	}
	if err := s.be.KafkaCommitOffsets(ctx, req.Group, member, epoch, offsets); err != nil {
		c := errCode(err)
		if floeMember && c == kerr.IllegalGeneration.Code {
			c = kerr.StaleMemberEpoch.Code
		}
		for _, w := range where {
			resp.Topics[w.t].Partitions[w.p].ErrorCode = c
		}
	}
	return resp
}
