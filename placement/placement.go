// Package placement holds the pure rules that place work on the live
// agents (metadata/agents.go): which agent a partition prefers (its
// leader) and which agent coordinates a classic consumer group. Every
// agent computes them from the same view of the agents table, so that
// every answer names the same agent whichever agent was asked; the Kafka
// listener's Metadata and FindCoordinator answers and the gRPC
// TopicService.DescribePlacement answer all come from here.
//
// Both rules are rendezvous (highest random weight) hashing: each
// candidate scores score(key, candidate) and the top score wins. When an
// agent joins, it takes only the keys it now scores highest on; when one
// leaves, only its keys move (each to its runner-up). Nothing else moves,
// so clients that cache the placement keep most of it across a change.
//
// Placement is a preference, never a refusal: any agent serves any
// partition. It exists so that the producers of one partition reach one
// agent, whose batcher then writes that partition alone, instead of two
// agents queueing on each other's row locks in the sequencer.
package placement

import (
	"encoding/binary"
	"hash/fnv"
	"net"
	"strconv"

	"github.com/floe-broker/floe/metadata"
)

// Score is the rendezvous weight of (key, candidate).
func Score(key, candidate string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(candidate))
	x := h.Sum64()
	// splitmix64's finalizer: fnv's low bits alone spread poorly.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Leader is the partition's preferred agent among agents (non-empty, any
// order): the top rendezvous score, by node id, over the agents of zone
// if any is in it, else over all.
func Leader(topicID int64, partition int32, agents []metadata.AgentInfo, zone string) metadata.AgentInfo {
	var key [12]byte
	binary.BigEndian.PutUint64(key[:], uint64(topicID))
	binary.BigEndian.PutUint32(key[8:], uint32(partition))
	inZone := false
	for _, a := range agents {
		inZone = inZone || (zone != "" && a.Zone == zone)
	}
	var best metadata.AgentInfo
	var top uint64
	found := false
	for _, a := range agents {
		if inZone && a.Zone != zone {
			continue
		}
		if s := Score(string(key[:]), strconv.Itoa(int(a.NodeID))); !found || s > top {
			best, top, found = a, s, true
		}
	}
	return best
}

// Coordinator is the classic group's coordinator among agents (non-empty,
// any order): the top rendezvous score over their distinct Kafka
// addresses; at that address self if self is there, else the first agent
// of agents there.
func Coordinator(group string, agents []metadata.AgentInfo, self metadata.AgentInfo) metadata.AgentInfo {
	var best metadata.AgentInfo
	var top uint64
	found := false
	for _, a := range agents {
		s := Score(group, KafkaAddr(a))
		if !found || s > top {
			best, top, found = a, s, true
		}
	}
	if KafkaAddr(self) == KafkaAddr(best) {
		return self
	}
	return best
}

// KafkaAddr is the address an agent's row gives Kafka clients.
func KafkaAddr(a metadata.AgentInfo) string {
	return net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port)))
}
