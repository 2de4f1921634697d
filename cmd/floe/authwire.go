package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
)

// authBackends opens, on a server's metadata store, what enforcement asks
// of the auth implementation: the ACL answer (a cache of the store's
// ACLs, reloaded on change notifications), the bearer-token verifier, the
// store itself (SCRAM credentials and the Kafka ACL APIs), and a close
// that stops what they run. nil: none, and a server with auth.enabled
// refuses to start (tests swap it).
var authBackends = openAuthBackends

// openAuthBackends is authBackends on the metadata store's auth tables.
// Superusers are the Guard's (access), not the cache's.
func openAuthBackends(ctx context.Context, meta metadata.Store, refresh time.Duration, log *slog.Logger) (auth.Authorizer, access.TokenVerifier, auth.Store, func(), error) {
	cfg := auth.DefaultCacheConfig()
	cfg.Logger, cfg.Refresh = log, refresh
	cache, err := auth.NewCache(ctx, meta, cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	vcfg := auth.DefaultVerifierConfig()
	vcfg.Refresh = refresh
	v, err := auth.NewTokenVerifier(meta, vcfg)
	if err != nil {
		cache.Close()
		return nil, nil, nil, nil, err
	}
	return cache, storeTokens{v}, meta, cache.Close, nil
}

// storeTokens is auth's TokenVerifier as access asks for it.
type storeTokens struct{ v *auth.TokenVerifier }

func (t storeTokens) VerifyToken(ctx context.Context, token string) (auth.Principal, error) {
	return t.v.Verify(ctx, token)
}

// errNoAuthBackends refuses auth.enabled in a build without them.
var errNoAuthBackends = errors.New("auth.enabled: this build has no ACL and token store")

// serverAuth is one server process's enforcement: the Guard every check
// goes through, built from the settings before the stores are open, and
// the authorizer and verifier it asks, filled once they are (open). Until
// then checks are refused and tokens unverifiable (Unavailable, 503).
type serverAuth struct {
	guard *access.Guard
	gate  *httpGate
	late  *lateAuth
	store auth.Store // set by open
	stop  func()     // set by open: stops the backends
	// refresh is auth.refresh: the ACL cache's longest reload interval and
	// the token cache's trust period.
	refresh time.Duration
}

// close stops what open started.
func (s *serverAuth) close() {
	if s != nil && s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// newServerAuth builds the enforcement of settings a.
func newServerAuth(a AuthSettings, reg prometheus.Registerer, log *slog.Logger) (*serverAuth, error) {
	cfg, err := a.accessConfig()
	if err != nil {
		return nil, err
	}
	late := &lateAuth{}
	g, err := access.NewGuard(cfg, late, access.GuardOptions{Logger: log, Registry: reg})
	if err != nil {
		return nil, err
	}
	gate, err := newHTTPGate(a)
	if err != nil {
		return nil, err
	}
	gate.set(g, late)
	return &serverAuth{guard: g, gate: gate, late: late, refresh: a.Refresh}, nil
}

// grpcOptions are the interceptors of agent.AuthServerOptions, the
// agent found through late (nil when auth is off).
func (s *serverAuth) grpcOptions(late *lateAgent) []grpc.ServerOption {
	if !s.guard.Enabled() {
		return nil
	}
	return agent.AuthServerOptions(s.guard, s.late, func(ctx context.Context, group string) ([]string, error) {
		a := late.ag.Load()
		if a == nil {
			return nil, status.Error(codes.Unavailable, "starting")
		}
		return a.GroupTopics(ctx, group)
	})
}

// open fills the authorizer and verifier from meta (nothing when auth is
// off).
func (s *serverAuth) open(ctx context.Context, meta metadata.Store, log *slog.Logger) error {
	if !s.guard.Enabled() {
		return nil
	}
	if authBackends == nil {
		return errNoAuthBackends
	}
	az, v, st, stop, err := authBackends(ctx, meta, s.refresh, log)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	s.late.set(az, v)
	s.store, s.stop = st, stop
	return nil
}

// lateAuth is an auth.Authorizer and access.TokenVerifier that answer once
// set: before, every check is refused and every token unverifiable.
type lateAuth struct {
	p atomic.Pointer[authPair]
}

type authPair struct {
	az auth.Authorizer
	v  access.TokenVerifier
}

func (l *lateAuth) set(az auth.Authorizer, v access.TokenVerifier) {
	l.p.Store(&authPair{az: az, v: v})
}

func (l *lateAuth) Authorize(p auth.Principal, op auth.Operation, res auth.Resource) auth.Decision {
	if a := l.p.Load(); a != nil {
		return a.az.Authorize(p, op, res)
	}
	return auth.Decision{Reason: "ACLs not loaded yet"}
}

func (l *lateAuth) VerifyToken(ctx context.Context, token string) (auth.Principal, error) {
	if a := l.p.Load(); a != nil {
		return a.v.VerifyToken(ctx, token)
	}
	return auth.Principal{}, errors.New("auth: starting: token store not open yet")
}

// kafkaOptions adds the Kafka listener's SASL and ACL collaborators to
// opts (none when auth is off: SASL offers no mechanism, the ACL APIs
// answer SECURITY_DISABLED).
func (s *serverAuth) kafkaOptions(opts kafka.Options) kafka.Options {
	if s == nil || !s.guard.Enabled() {
		return opts
	}
	opts.Guard, opts.Credentials, opts.ACLs = s.guard, s.store, s.store
	return opts
}
