package kafka

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// The cluster Kafka clients see: every live agent is a broker. Agents
// learn each other from the metadata store (metadata/agents.go): each
// beats a row of its own every Config.AgentTTL/4, with the address
// clients reach it at, and reads the live rows back. From that view two
// pure rules, the same on every agent, place things:
//
//   - leaderOf: each partition's leader, by rendezvous hashing over the
//     live agents (of the client's zone, when its client.id names one as
//     floe_az=<zone> and some agent is in it). Any agent can serve any
//     partition, so a client that reaches the "wrong" one is still served;
//     the rule only keeps every agent's answer the same, so clients do not
//     see leaders move with the broker they asked.
//   - coordinatorOf: each classic consumer group's coordinator, by
//     rendezvous hashing over the agents' distinct addresses. Classic
//     membership lives in the coordinator's memory (groups.go), so every
//     member of a group must reach the same agent; the others answer
//     NOT_COORDINATOR. Agents that share one address (a Service in front
//     of them) all count as that address's coordinator: clients cannot
//     tell them apart (see docs/kafka.md).
//
// An agent that dies drops out of the view once its row's ttl passes;
// its groups move to survivors, whose members rejoin there and resume from
// the committed positions (which are in the store, never in an agent). A
// clean shutdown removes the row at once. Views of two agents can differ
// for up to one beat interval after an agent joins or leaves.

// clusterView is one beat's outcome. Immutable once published.
type clusterView struct {
	self   metadata.AgentInfo   // this agent, with the node id the store gave it
	agents []metadata.AgentInfo // live agents by node id, self included
}

// cluster beats this agent's row and holds the latest view.
type cluster struct {
	s    *Server
	view atomic.Pointer[clusterView]
}

func newCluster(s *Server) *cluster {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	self := metadata.AgentInfo{ID: host + "-" + hex.EncodeToString(b[:]), NodeID: s.cfg.NodeID, Zone: s.cfg.Zone}
	c := &cluster{s: s}
	c.view.Store(&clusterView{self: self, agents: []metadata.AgentInfo{self}})
	return c
}

// current is the latest view.
func (c *cluster) current() *clusterView { return c.view.Load() }

// start sets this agent's address from the listener and beats once, so
// that the first clients already see the cluster.
func (c *cluster) start(ctx context.Context, lis net.Addr) {
	v := *c.current()
	v.self.Host, v.self.Port = registeredAddr(c.s.cfg, lis)
	v.agents = []metadata.AgentInfo{v.self}
	c.view.Store(&v)
	c.beat(ctx)
}

// run beats until ctx ends, then removes this agent's row.
func (c *cluster) run(ctx context.Context) {
	t := time.NewTicker(c.s.cfg.AgentTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := c.s.be.KafkaLeaveAgent(lctx, c.current().self.ID); err != nil {
				c.s.log.Warn("kafka: leave the agents table", "err", err)
			}
			return
		case <-t.C:
			c.beat(ctx)
		}
	}
}

// beat refreshes this agent's row and publishes the live agents. On a
// failure the previous view stays (the row lives until its ttl).
func (c *cluster) beat(ctx context.Context) {
	old := c.current()
	bctx, cancel := context.WithTimeout(ctx, c.s.cfg.AgentTTL/2)
	defer cancel()
	live, err := c.s.be.KafkaBeatAgent(bctx, old.self, c.s.cfg.AgentTTL)
	if err != nil {
		if ctx.Err() == nil {
			c.s.log.Warn("kafka: agent heartbeat failed; keeping the last view of the cluster", "err", err)
		}
		return
	}
	v := &clusterView{self: old.self, agents: live}
	for _, a := range live {
		if a.ID == old.self.ID {
			v.self = a
		}
	}
	if len(live) != len(old.agents) {
		c.s.log.Info("kafka: live agents", "agents", len(live), "node_id", v.self.NodeID)
	}
	c.view.Store(v)
}

// registeredAddr is the address this agent's row gives other agents to
// advertise: the advertised host and port if set, else the listener's
// (its IP if bound to one, else this machine's first non-loopback IP, else
// its host name).
func registeredAddr(cfg Config, lis net.Addr) (string, int32) {
	host, port := cfg.AdvertisedHost, cfg.AdvertisedPort
	h, p, _ := net.SplitHostPort(lis.String())
	if port == 0 {
		n, _ := strconv.Atoi(p)
		port = int32(n)
	}
	if host == "" {
		if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
			host = h
		} else {
			host = machineHost()
		}
	}
	return host, port
}

func machineHost() string {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.String()
			}
		}
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "localhost"
}

// score is the rendezvous weight of (key, candidate).
func score(key, candidate string) uint64 {
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

// leaderOf is the partition's leader among agents (non-empty, by node
// id): the top rendezvous score over the agents of zone if any is in it,
// else over all.
func leaderOf(topicID int64, partition int32, agents []metadata.AgentInfo, zone string) metadata.AgentInfo {
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
		if s := score(string(key[:]), strconv.Itoa(int(a.NodeID))); !found || s > top {
			best, top, found = a, s, true
		}
	}
	return best
}

// coordinatorOf is the classic group's coordinator among agents
// (non-empty, by node id): the top rendezvous score over their distinct
// addresses; at that address self if self is there, else the agent with
// the lowest node id.
func coordinatorOf(group string, agents []metadata.AgentInfo, self metadata.AgentInfo) metadata.AgentInfo {
	var best metadata.AgentInfo
	var top uint64
	found := false
	for _, a := range agents {
		s := score(group, addrOf(a))
		if !found || s > top {
			best, top, found = a, s, true
		}
	}
	if addrOf(self) == addrOf(best) {
		return self
	}
	return best
}

func addrOf(a metadata.AgentInfo) string {
	return net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port)))
}

// ownsGroup reports whether this agent coordinates the classic group.
func (v *clusterView) ownsGroup(group string) bool {
	return coordinatorOf(group, v.agents, v.self).ID == v.self.ID
}

// clientZone is the zone a client names in its client.id as
// floe_az=<zone> (separated from the rest by ',', ';' or a space).
func clientZone(clientID string) string {
	_, rest, ok := strings.Cut(clientID, "floe_az=")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ",; "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}
