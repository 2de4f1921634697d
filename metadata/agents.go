package metadata

import (
	"context"
	"errors"
	"fmt"
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
// the row lives; a restarted agent (a new id) gets a new one.

// ErrInvalidAgent reports a malformed agent beat (empty or too long id or
// host, a port out of range, a non-positive ttl).
var ErrInvalidAgent = errors.New("metadata: invalid agent")

// MaxAgentFieldLen bounds an agent's id, host and zone.
const MaxAgentFieldLen = 255

// AgentInfo is one live agent as its beat described it.
type AgentInfo struct {
	ID     string // unique per agent process
	NodeID int32  // assigned by the store on the first beat
	Host   string // where Kafka clients reach it
	Port   int32
	Zone   string // availability zone, "" if unknown
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
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: agent ttl must be at least 1 ms", ErrInvalidAgent)
	}
	return nil
}
