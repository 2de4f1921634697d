package access

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/auth"
)

// Guard answers every check of the front ends: superusers first, then the
// Authorizer (the ACL cache), and records each denial (a log line at most
// once per DenialLogInterval per principal, operation and resource, and
// floe_auth_denied_total). With authentication off every check passes.
type Guard struct {
	cfg   Config
	authz auth.Authorizer
	log   *slog.Logger
	now   func() time.Time
	m     *prometheus.CounterVec

	mu     sync.Mutex           // protects logged
	logged map[denial]time.Time // when each denial was last logged (at most MaxDenialKeys)
}

type denial struct {
	principal string
	op        auth.Operation
	res       auth.Resource
}

// GuardOptions are a Guard's collaborators.
type GuardOptions struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: no metric
	Now      func() time.Time      // nil: time.Now
}

// NewGuard builds a Guard over authz (required when cfg.Enabled).
func NewGuard(cfg Config, authz auth.Authorizer, opts GuardOptions) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Enabled && authz == nil {
		return nil, errors.New("access: an Authorizer is required with authentication on")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	g := &Guard{cfg: cfg, authz: authz, log: opts.Logger, now: opts.Now, logged: map[denial]time.Time{}}
	g.m = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floe_auth_denied_total",
		Help: "Requests (or parts of requests) refused by the ACLs, by API (grpc, kafka, http), operation and resource type.",
	}, []string{"api", "operation", "resource_type"})
	if opts.Registry != nil {
		if err := opts.Registry.Register(g.m); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			g.m = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return g, nil
}

// Enabled reports whether authentication and authorization are on.
func (g *Guard) Enabled() bool { return g != nil && g.cfg.Enabled }

// Config returns the guard's settings (the zero Config for a nil Guard:
// auth off).
func (g *Guard) Config() Config {
	if g == nil {
		return Config{}
	}
	return g.cfg
}

// Allowed reports whether p may perform op on res, recording a denial
// against api ("grpc", "kafka", "http").
func (g *Guard) Allowed(api string, p auth.Principal, op auth.Operation, res auth.Resource) bool {
	if !g.Enabled() {
		return true
	}
	d := g.decide(p, op, res)
	if !d.Allowed {
		g.denied(api, p, op, res, d.Reason)
	}
	return d.Allowed
}

// Permits is Allowed without recording a denial: for filtering lists
// (ListTopics, Metadata) where what is hidden is not a refusal.
func (g *Guard) Permits(p auth.Principal, op auth.Operation, res auth.Resource) bool {
	return !g.Enabled() || g.decide(p, op, res).Allowed
}

func (g *Guard) decide(p auth.Principal, op auth.Operation, res auth.Resource) auth.Decision {
	ps := p.String()
	for _, s := range g.cfg.Superusers {
		if s == ps {
			return auth.Decision{Allowed: true, Reason: "superuser"}
		}
	}
	return g.authz.Authorize(p, op, res)
}

// denied counts and (at most once per interval per key) logs a denial.
func (g *Guard) denied(api string, p auth.Principal, op auth.Operation, res auth.Resource, reason string) {
	g.m.WithLabelValues(api, op.String(), res.Type.String()).Inc()
	k := denial{principal: p.Name, op: op, res: res}
	now := g.now()
	g.mu.Lock()
	last, seen := g.logged[k]
	fresh := !seen || now.Sub(last) >= g.cfg.DenialLogInterval
	if fresh {
		if !seen && len(g.logged) >= g.cfg.MaxDenialKeys {
			g.sweep(now)
		}
		g.logged[k] = now
	}
	g.mu.Unlock()
	if fresh {
		g.log.Warn("auth: denied", "api", api, "principal", p.String(), "operation", op.String(),
			"resource_type", res.Type.String(), "resource", res.Name, "reason", reason)
	}
}

// sweep forgets the denials logged over an interval ago, and if that frees
// nothing, all of them: the map stays within MaxDenialKeys (a flood of
// distinct denials logs again rather than grows). Called with mu held.
func (g *Guard) sweep(now time.Time) {
	for k, t := range g.logged {
		if now.Sub(t) >= g.cfg.DenialLogInterval {
			delete(g.logged, k)
		}
	}
	if len(g.logged) >= g.cfg.MaxDenialKeys {
		clear(g.logged)
	}
}

// DenialKeys is how many denials the log remembers (for tests of its bound).
func (g *Guard) DenialKeys() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.logged)
}

// DeniedCounter is floe_auth_denied_total.
func (g *Guard) DeniedCounter() *prometheus.CounterVec { return g.m }
