package metadata

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"
)

// Live agents: each agent keeps a row of its own (a heartbeat) so that
// agents learn each other from the store, never from configuration lists.
// The Kafka front end uses them to name every agent a broker and to route
// each classic consumer group to one coordinator.
//
// An agent's row lives until ttl after its last beat by the store's clock
// (PostgreSQL's now(), Go's clock for SQLite); a beat also removes the
// rows that expired, so the table holds the live agents and those of the
// last ttl. A node id is assigned on an agent's first beat and kept while
// the row lives; an agent whose row lapsed, and a restarted agent (a new
// id), get a new one, larger than every node id given before. The rule is
// AgentLive and PlanAgentBeat; the backends read the rows and the clock
// and write the plan.

// ErrInvalidAgent reports a malformed agent beat (empty or too long id or
// host, a port out of range, a gRPC address that is not host:port, a
// non-positive ttl).
var ErrInvalidAgent = errors.New("metadata: invalid agent")

// MaxAgentFieldLen bounds an agent's id, host, zone and gRPC address.
const MaxAgentFieldLen = 255

// AgentInfo is one live agent as its beat described it.
type AgentInfo struct {
	ID     string // unique per agent process
	NodeID int32  // assigned by the store on the first beat
	Host   string // where Kafka clients reach it
	Port   int32
	Zone   string // availability zone, "" if unknown
	// GRPCAddr is where gRPC clients reach it (host:port), "" if it
	// named none (an agent of an earlier release): DescribePlacement
	// then gives it no partitions' clients.
	GRPCAddr string
}

// AgentStore records live agents.
type AgentStore interface {
	// BeatAgent records a (its NodeID is ignored) as live until ttl from
	// now, removes expired rows and returns every live agent, a included,
	// ordered by node id.
	BeatAgent(ctx context.Context, a AgentInfo, ttl time.Duration) ([]AgentInfo, error)
	// LeaveAgent removes agent id's row (a clean shutdown); no-op if none.
	LeaveAgent(ctx context.Context, id string) error
}

// ValidateAgent checks a beat at the edge of both backends.
func ValidateAgent(a AgentInfo, ttl time.Duration) error {
	switch {
	case a.ID == "" || len(a.ID) > MaxAgentFieldLen:
		return fmt.Errorf("%w: agent id must be 1 to 255 bytes", ErrInvalidAgent)
	case a.Host == "" || len(a.Host) > MaxAgentFieldLen:
		return fmt.Errorf("%w: agent host must be 1 to 255 bytes", ErrInvalidAgent)
	case len(a.Zone) > MaxAgentFieldLen:
		return fmt.Errorf("%w: agent zone must be at most 255 bytes", ErrInvalidAgent)
	case a.Port <= 0 || a.Port > 65535:
		return fmt.Errorf("%w: agent port must be 1 to 65535", ErrInvalidAgent)
	case len(a.GRPCAddr) > MaxAgentFieldLen || !validGRPCAddr(a.GRPCAddr):
		return fmt.Errorf("%w: agent grpc address must be empty or host:port of at most 255 bytes", ErrInvalidAgent)
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: agent ttl must be at least 1 ms", ErrInvalidAgent)
	}
	return nil
}

// validGRPCAddr: addr is "" or host:port with a non-empty host and port.
func validGRPCAddr(addr string) bool {
	if addr == "" {
		return true
	}
	h, p, err := net.SplitHostPort(addr)
	return err == nil && h != "" && p != ""
}

// AgentRow is an agent's stored row.
type AgentRow struct {
	AgentInfo
	ExpiresAt time.Time // by the store's clock
}

// AgentLive reports whether a row expiring at expiresAt is live at now,
// by the store's clock: it is until its expiry, inclusive.
func AgentLive(expiresAt, now time.Time) bool { return !expiresAt.Before(now) }

// AgentBeatPlan is what one beat writes and answers.
type AgentBeatPlan struct {
	// KeepNodeID: the agent's row is live and keeps NodeID. Otherwise the
	// agent gets a new node id: its old row, if any, is replaced by a new
	// one.
	KeepNodeID bool
	NodeID     int32
	ExpiresAt  time.Time // the agent's row's new expiry: now + ttl
	// Expired are the other agents' rows to remove, each only if it was
	// not refreshed since it was read (same ExpiresAt).
	Expired []AgentRow
	// Others are the other live agents, by node id.
	Others []AgentInfo
}

// PlanAgentBeat decides a beat of a at now (the store's clock) over the
// stored rows.
func PlanAgentBeat(rows []AgentRow, a AgentInfo, now time.Time, ttl time.Duration) AgentBeatPlan {
	p := AgentBeatPlan{ExpiresAt: now.Add(ttl)}
	for _, r := range rows {
		live := AgentLive(r.ExpiresAt, now)
		switch {
		case r.ID == a.ID:
			p.KeepNodeID, p.NodeID = live, r.NodeID
		case live:
			p.Others = append(p.Others, r.AgentInfo)
		default:
			p.Expired = append(p.Expired, r)
		}
	}
	if !p.KeepNodeID {
		p.NodeID = 0
	}
	sort.Slice(p.Others, func(i, j int) bool { return p.Others[i].NodeID < p.Others[j].NodeID })
	return p
}

// Live is the beat's answer: the other live agents and self (a with the
// node id the store kept or gave), by node id.
func (p AgentBeatPlan) Live(self AgentInfo) []AgentInfo {
	live := append(make([]AgentInfo, 0, len(p.Others)+1), p.Others...)
	i := sort.Search(len(live), func(i int) bool { return live[i].NodeID > self.NodeID })
	live = append(live, AgentInfo{})
	copy(live[i+1:], live[i:])
	live[i] = self
	return live
}
