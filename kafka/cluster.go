package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/placement"
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
	if g := grpcAddr(c.s.cfg.GRPCAddr, v.self.Host); len(g) <= metadata.MaxAgentFieldLen {
		v.self.GRPCAddr = g
	}
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

// grpcAddr is the gRPC address this agent's row names (its grpc_addr):
// listen's host, or host where listen's is empty or unspecified ("" when
// listen is not host:port).
func grpcAddr(listen, host string) string {
	h, p, err := net.SplitHostPort(listen)
	if err != nil || p == "" {
		return ""
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = host
	}
	return net.JoinHostPort(h, p)
}

// LiveAgents is this agent's latest view of the live agents (by node id,
// itself included, each with its gRPC address, "" if it named none).
func (s *Server) LiveAgents() []metadata.AgentInfo { return s.agents.current().agents }

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

// leaderOf is the partition's leader among agents: placement.Leader,
// the rule the gRPC DescribePlacement answer shares.
func leaderOf(topicID int64, partition int32, agents []metadata.AgentInfo, zone string) metadata.AgentInfo {
	return placement.Leader(topicID, partition, agents, zone)
}

// coordinatorOf is the classic group's coordinator among agents:
// placement.Coordinator.
func coordinatorOf(group string, agents []metadata.AgentInfo, self metadata.AgentInfo) metadata.AgentInfo {
	return placement.Coordinator(group, agents, self)
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
