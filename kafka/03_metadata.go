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
// The brokers are the live agents (cluster.go): this agent at the
// advertised address or else the address the client connected to, the
// others at the addresses their rows in the store give. Each partition's
// leader, only replica and only in-sync replica is the agent leaderOf
// picks (every agent answers the same; any agent can serve any
// partition), with leader epoch 0. The controller is the agent with the
// lowest node id.
// Topic ids are floe's topic ids in the last 8 bytes of the UUID.
// Deviations: topics are never auto-created (AllowAutoTopicCreation is
// ignored: create them with CreateTopics or `floe topic create`); no
// authorized operations are reported.

func init() { register(kmsg.Metadata, 0, 12, async(metadataAPI)) }

func metadataAPI(ctx context.Context, s *Server, cc *conn, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	view := s.agents.current()
	resp.Brokers = s.brokers(cc, view)
	resp.ClusterID = &s.cfg.ClusterID
	resp.ControllerID = view.agents[0].NodeID
	zone := clientZone(cc.clientIDNow())
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
		// By id when no name is given: the Java client (4.1, KIP-848
		// regex subscriptions) asks for its assigned topic ids with an
		// empty name, not a null one.
		switch {
		case rt.Topic != nil && (*rt.Topic != "" || rt.TopicID == [16]byte{}):
			t, err = s.be.KafkaTopic(ctx, *rt.Topic)
		default:
			t, err = s.topicRef(ctx, "", rt.TopicID, true)
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
		resp.Topics = append(resp.Topics, topicMetadata(t, view, zone))
	}
	return resp
}

func topicMetadata(t metadata.Topic, view *clusterView, zone string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = topicUUID(t.ID)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, t.Partitions)
	for p := range mt.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		leader := view.self.NodeID
		if len(view.agents) > 1 {
			leader = leaderOf(t.ID, int32(p), view.agents, zone).NodeID
		}
		mp.Leader = leader
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{leader}
		mp.ISR = []int32{leader}
		mt.Partitions[p] = mp
	}
	return mt
}

// brokers are the live agents as Metadata presents them to cc's client:
// this agent at the address advertised to cc, the others at their rows'.
func (s *Server) brokers(cc *conn, view *clusterView) []kmsg.MetadataResponseBroker {
	out := make([]kmsg.MetadataResponseBroker, 0, len(view.agents))
	for _, a := range view.agents {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = a.NodeID, a.Host, a.Port
		if a.ID == view.self.ID {
			b.Host, b.Port = s.advertised(cc)
		}
		if a.Zone != "" {
			z := a.Zone
			b.Rack = &z
		}
		out = append(out, b)
	}
	return out
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
