package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0 to v3, served only to refuse.
//
// Deviation: floe's metadata store fixes a topic's partition count at
// creation (adding partitions would move keys to other partitions and
// floe has no path for it), so every topic is answered INVALID_REQUEST
// saying so; a count not above the current one gets INVALID_PARTITIONS
// and an unknown topic UNKNOWN_TOPIC_OR_PARTITION, as in Apache Kafka.
// The API is listed by ApiVersions so that `kafka-topics --alter` and
// admin clients get this message rather than a missing API.

func init() { register(kmsg.CreatePartitions, 0, 3, async(createPartitions)) }

func createPartitions(ctx context.Context, s *Server, _ *conn, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		t, err := s.be.KafkaTopic(ctx, rt.Topic)
		var msg string
		switch {
		case err != nil:
			st.ErrorCode, st.ErrorMessage = errCode(err), errMessage(err)
		case rt.Count <= t.Partitions:
			st.ErrorCode = kerr.InvalidPartitions.Code
			msg = fmt.Sprintf("topic %s has %d partitions; %d is not more", rt.Topic, t.Partitions, rt.Count)
		default:
			st.ErrorCode = kerr.InvalidRequest.Code
			msg = fmt.Sprintf("floe cannot add partitions to topic %s (it keeps its %d); create a new topic with %d", rt.Topic, t.Partitions, rt.Count)
		}
		if msg != "" {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
