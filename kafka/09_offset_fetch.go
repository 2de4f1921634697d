package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// OffsetFetch: v1 to v10 (v8 asks for several groups at once; v9's member
// id and epoch are not checked; v10 names topics by id: an id that names
// no topic answers UNKNOWN_TOPIC_ID in each partition asked for, and every
// answered topic carries its id).
//
// Positions are floe's group positions, whoever committed them (a Kafka
// consumer, a gRPC consumer, `floe group reset`). A partition without a
// position answers offset -1. Topics nil asks for every position of the
// group. Deviations: RequireStable is met at once (no transactions, so no
// pending offsets); leader epochs are -1.

func init() { register(kmsg.OffsetFetch, 1, 10, async(offsetFetch)) }

// wantedTopic is one topic an OffsetFetch asks for.
type wantedTopic struct {
	topic string
	id    [16]byte // v10
	parts []int32
}

func offsetFetch(ctx context.Context, s *Server, _ *conn, req *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var want []wantedTopic
		if req.Topics != nil {
			want = []wantedTopic{}
			for _, t := range req.Topics {
				want = append(want, wantedTopic{topic: t.Topic, parts: t.Partitions})
			}
		}
		topics, code := s.groupOffsets(ctx, req.Group, want, false)
		resp.ErrorCode = code
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range req.Groups {
		var want []wantedTopic
		if g.Topics != nil {
			want = []wantedTopic{}
			for _, t := range g.Topics {
				want = append(want, wantedTopic{t.Topic, t.TopicID, t.Partitions})
			}
		}
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		rg.Topics, rg.ErrorCode = s.groupOffsets(ctx, g.Group, want, req.Version >= 10)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// groupOffsets reads a group's positions for want (nil: all of them),
// its topics named by id if byID. Each answered topic has its name and
// its id (the version decides which goes on the wire).
func (s *Server) groupOffsets(ctx context.Context, group string, want []wantedTopic, byID bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	if group == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	if want == nil {
		got, err := s.be.KafkaFetchOffsets(ctx, group, nil)
		if err != nil {
			return nil, errCode(err)
		}
		names := map[int64]string{}
		byTopic := map[int64]int{}
		for _, o := range got {
			name, ok := names[o.TopicID]
			if !ok {
				t, err := s.be.KafkaTopicByID(ctx, o.TopicID)
				if err != nil {
					names[o.TopicID] = ""
					continue
				}
				name = t.Name
				names[o.TopicID] = name
			}
			if name == "" {
				continue
			}
			i, ok := byTopic[o.TopicID]
			if !ok {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = name, topicUUID(o.TopicID)
				out = append(out, rt)
				i = len(out) - 1
				byTopic[o.TopicID] = i
			}
			out[i].Partitions = append(out[i].Partitions, offsetPartition(o.Partition, o.Offset, o.Metadata, 0))
		}
		return out, 0
	}
	for _, w := range want {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = w.topic, w.id
		t, terr := s.topicRef(ctx, w.topic, w.id, byID)
		var committed map[int32]metadata.CommittedOffset
		if terr == nil {
			rt.Topic, rt.TopicID = t.Name, topicUUID(t.ID)
			tps := make([]metadata.TopicPartition, 0, len(w.parts))
			for _, p := range w.parts {
				tps = append(tps, metadata.TopicPartition{TopicID: t.ID, Partition: p})
			}
			got, err := s.be.KafkaFetchOffsets(ctx, group, tps)
			if err != nil {
				return nil, errCode(err)
			}
			committed = make(map[int32]metadata.CommittedOffset, len(got))
			for _, o := range got {
				committed[o.Partition] = o
			}
		}
		for _, p := range w.parts {
			switch o, ok := committed[p]; {
			case terr != nil:
				rt.Partitions = append(rt.Partitions, offsetPartition(p, -1, "", errCode(terr)))
			case ok:
				rt.Partitions = append(rt.Partitions, offsetPartition(p, o.Offset, o.Metadata, 0))
			default:
				rt.Partitions = append(rt.Partitions, offsetPartition(p, -1, "", 0))
			}
		}
		out = append(out, rt)
	}
	return out, 0
}

func offsetPartition(p int32, offset int64, md string, code int16) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, offset, -1, code
	rp.Metadata = &md
	return rp
}
