package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v0 to v6 (v6 names topics by name or by id).
//
// A topic is deleted at once: its records become unreadable and its
// files are collected by the compactor.

func init() { register(kmsg.DeleteTopics, 0, 6, async(deleteTopics)) }

func deleteTopics(ctx context.Context, s *Server, _ *conn, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := req.TopicNames
	ids := make([][16]byte, len(names))
	if req.Version >= 6 {
		names, ids = names[:0], ids[:0]
		for _, t := range req.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if id := topicIDOf(t.TopicID); id > 0 {
				if tt, err := s.be.KafkaTopicByID(ctx, id); err == nil {
					name = tt.Name
				}
			}
			names, ids = append(names, name), append(ids, t.TopicID)
		}
	}
	for i, name := range names {
		st := kmsg.NewDeleteTopicsResponseTopic()
		n := name
		st.Topic, st.TopicID = &n, ids[i]
		if name == "" {
			st.ErrorCode = kerr.UnknownTopicID.Code
		} else if err := s.be.KafkaDeleteTopic(ctx, name); err != nil {
			st.ErrorCode, st.ErrorMessage = errCode(err), errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
