package kafka

import (
	"context"
	"encoding/binary"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// Metadata: v0 to v12.
//
// The cluster is one broker, this agent (Config.NodeID, at the advertised
// address or else the address the client connected to), leader, only
// replica and only in-sync replica of every partition, with leader epoch
// 0: every agent answers the same, and each can serve every partition.
// Topic ids are floe's topic ids in the last 8 bytes of the UUID.
// Deviations: topics are never auto-created (AllowAutoTopicCreation is
// ignored: create them with CreateTopics or `floe topic create`); no
// authorized operations are reported.

func init() { register(kmsg.Metadata, 0, 12, async(metadataAPI)) }

func metadataAPI(ctx context.Context, s *Server, cc *conn, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = []kmsg.MetadataResponseBroker{s.broker(cc)}
	resp.ClusterID = &s.cfg.ClusterID
	resp.ControllerID = s.cfg.NodeID
	var topics []metadata.Topic
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		ts, err := s.be.KafkaTopics(ctx)
		if err != nil {
			// No error field at the top: answer no topics, the client retries.
			s.log.Warn("kafka: metadata: list topics", "client", cc.client(), "err", err)
			return resp
		}
		topics = ts
	}
	for _, rt := range req.Topics {
		var (
			t   metadata.Topic
			err error
		)
		switch {
		case rt.Topic != nil:
			t, err = s.be.KafkaTopic(ctx, *rt.Topic)
		case topicIDOf(rt.TopicID) > 0:
			t, err = s.be.KafkaTopicByID(ctx, topicIDOf(rt.TopicID))
		default:
			err = kerr.UnknownTopicID
		}
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, errCode(err)
			if mt.ErrorCode == kerr.UnknownTopicOrPartition.Code && rt.Topic == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		topics = append(topics, t)
	}
	for _, t := range topics {
		resp.Topics = append(resp.Topics, s.topicMetadata(t))
	}
	return resp
}

func (s *Server) topicMetadata(t metadata.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = topicUUID(t.ID)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	for p := range mt.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		mp.Leader = s.cfg.NodeID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.cfg.NodeID}
		mp.ISR = []int32{s.cfg.NodeID}
		mt.Partitions[p] = mp
	}
	return mt
}

// broker is this agent as Metadata presents it to cc's client.
func (s *Server) broker(cc *conn) kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = s.cfg.NodeID
	b.Host, b.Port = s.advertised(cc)
	return b
}

// advertised is the host and port clients are told to connect to.
func (s *Server) advertised(cc *conn) (string, int32) {
	host, port := s.cfg.AdvertisedHost, s.cfg.AdvertisedPort
	if cc.local != nil {
		if host == "" {
			host = cc.local.IP.String()
		}
		if port == 0 {
			port = int32(cc.local.Port)
		}
	} else if h, p, err := net.SplitHostPort(cc.nc.LocalAddr().String()); err == nil {
		if host == "" {
			host = h
		}
		if n, err := strconv.Atoi(p); err == nil && port == 0 {
			port = int32(n)
		}
	}
	return host, port
}

// topicUUID is floe's topic id as a Kafka topic UUID.
func topicUUID(id int64) [16]byte {
	var u [16]byte
	copy(u[:], "floe")
	binary.BigEndian.PutUint64(u[8:], uint64(id))
	return u
}

// topicIDOf is the floe topic id in a Kafka topic UUID (0 if none).
func topicIDOf(u [16]byte) int64 {
	if string(u[:4]) != "floe" {
		return 0
	}
	return int64(binary.BigEndian.Uint64(u[8:]))
}
