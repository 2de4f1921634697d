package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-broker/floe/metadata"
)

// topicRef resolves a topic a request names by name, or, byID (the
// versions that replaced names with topic ids: OffsetCommit and
// OffsetFetch v10), by its id: an id that names no topic is
// UNKNOWN_TOPIC_ID, never the name's UNKNOWN_TOPIC_OR_PARTITION.
func (s *Server) topicRef(ctx context.Context, name string, id [16]byte, byID bool) (metadata.Topic, error) {
	if !byID {
		return s.be.KafkaTopic(ctx, name)
	}
	fid := topicIDOf(id)
	if fid <= 0 {
		return metadata.Topic{}, kerr.UnknownTopicID
	}
	t, err := s.be.KafkaTopicByID(ctx, fid)
	if err != nil && errCode(err) == kerr.UnknownTopicOrPartition.Code {
		return metadata.Topic{}, kerr.UnknownTopicID
	}
	return t, err
}
