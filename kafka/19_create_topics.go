package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// CreateTopics: v0 to v7.
//
// NumPartitions -1 means 1 (or the count of a replica assignment given);
// the replication factor is accepted and ignored (the object store
// replicates); configs are floe's topic config (retention.ms,
// retention.bytes, cleanup.policy, iceberg.*, value.schema, ...: checked
// as `floe topic create` checks them; keys floe does not know are kept).
// ValidateOnly checks the name and partition count only.

func init() { register(kmsg.CreateTopics, 0, 7, async(createTopics)) }

func createTopics(ctx context.Context, s *Server, _ *conn, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.ReplicationFactor = 1
		parts := rt.NumPartitions
		if parts == -1 {
			parts = 1
			if len(rt.ReplicaAssignment) > 0 {
				parts = int32(len(rt.ReplicaAssignment))
			}
		}
		st.NumPartitions = parts
		st.Configs = []kmsg.CreateTopicsResponseTopicConfig{} // nullable: the Java client wants a list
		cfg := map[string]string{}
		for _, c := range rt.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		var err error
		switch {
		case parts < 1 || parts > metadata.MaxPartitions:
			st.ErrorCode = kerr.InvalidPartitions.Code
		case req.ValidateOnly:
			err = metadata.ValidateTopicName(rt.Topic)
			if err == nil {
				err = metadata.ValidateTopicConfig(cfg)
			}
			if err != nil {
				st.ErrorCode = kerr.InvalidRequest.Code
			}
		default:
			var t metadata.Topic
			if t, err = s.be.KafkaCreateTopic(ctx, rt.Topic, parts, cfg); err == nil {
				st.TopicID = topicUUID(t.ID)
			} else {
				st.ErrorCode = errCode(err)
			}
		}
		if err != nil {
			st.ErrorMessage = errMessage(err)
			st.NumPartitions, st.ReplicationFactor = -1, -1
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
