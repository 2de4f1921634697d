package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floe-broker/floe/console"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// readiness is whether the agent can serve: its stores answer. It backs
// /readyz and, once the gRPC server runs, the gRPC health service.
type readiness struct {
	log *slog.Logger

	mu       sync.Mutex     // protects the fields below
	reason   string         // why not ready, as /readyz says it; "" when ready
	cause    string         // the error behind reason, for the log only
	hs       *health.Server // nil until the gRPC server is built
	stopping bool           // the agent drains: not ready for good
}

func newReadiness(log *slog.Logger, reason string) *readiness {
	return &readiness{log: log, reason: reason}
}

// healthServices are the gRPC health service names floe answers for ("" is
// the whole server).
var healthServices = []string{"", "floe.v1.LogService", "floe.v1.TopicService"}

// attach makes hs follow the readiness from now on.
func (r *readiness) attach(hs *health.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hs = hs
	r.applyLocked()
}

// storeError is a store that did not answer a readiness check: /readyz
// names the store, the log the cause.
type storeError struct {
	store string // "metadata store", "object store"
	err   error
}

func (e *storeError) Error() string { return e.store + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// publicReason is what /readyz says of err: which store does not answer,
// never the cause (addresses, user and database names).
func publicReason(err error) string {
	var se *storeError
	if errors.As(err, &se) {
		return se.store + " unavailable"
	}
	return "a store does not answer"
}

// causeText is err's text on one line, for the log.
func causeText(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// set records the outcome of a check (nil: ready) and logs a change.
func (r *readiness) set(err error) {
	reason, cause := "", ""
	if err != nil {
		reason, cause = publicReason(err), causeText(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return
	}
	was := r.reason
	r.reason, r.cause = reason, cause
	r.applyLocked()
	switch {
	case reason != "" && was == "":
		r.log.Warn("not ready", "reason", reason, "cause", cause)
	case reason == "" && was != "":
		r.log.Info("ready", "was", was)
	}
}

// stop makes the agent not ready for good: it drains.
func (r *readiness) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping, r.reason, r.cause = true, "stopping", ""
	r.applyLocked()
}

// setStarting records that the start waits for what, and why (err),
// without logging (the start logs each attempt).
func (r *readiness) setStarting(what string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reason, r.cause = "starting: waiting for the "+what, causeText(err)
}

func (r *readiness) applyLocked() {
	if r.hs == nil {
		return
	}
	st := healthpb.HealthCheckResponse_SERVING
	if r.reason != "" {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, s := range healthServices {
		r.hs.SetServingStatus(s, st)
	}
}

// ServeHTTP is /readyz: 200 "ready", or 503 with the reason (which store)
// and a request id; the cause goes to the log with the same id.
func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	reason, cause := r.reason, r.cause
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if reason != "" {
		id := console.NewRequestID()
		if cause != "" {
			r.log.Info("readyz answered 503", "request_id", id, "cause", cause)
		}
		w.Header().Set("X-Request-Id", id)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s (request id %s)\n", reason, id)
		return
	}
	fmt.Fprintln(w, "ready")
}

// readyProbeKey is the key whose HEAD checks the object store: it never
// exists, so the cheap "not found" answer proves the store answers.
const readyProbeKey = "floe-readiness-probe"

// checkStores asks each store one cheap question, each bounded by timeout.
func checkStores(ctx context.Context, meta metadata.Store, store objectstore.Store, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err := meta.Ping(pctx)
	cancel()
	if err != nil {
		return &storeError{store: "metadata store", err: err}
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	_, err = store.Head(hctx, readyProbeKey)
	cancel()
	if err != nil && !errors.Is(err, objectstore.ErrNotFound) {
		return &storeError{store: "object store", err: err}
	}
	return nil
}

// watchReadiness checks the stores every interval until ctx ends.
func watchReadiness(ctx context.Context, r *readiness, meta metadata.Store, store objectstore.Store, interval time.Duration) {
	timeout := min(interval, 2*time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		err := checkStores(ctx, meta, store, timeout)
		if ctx.Err() != nil {
			return
		}
		r.set(err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// permanentError marks a start failure that waiting cannot fix (a missing
// bucket, refused credentials, a refused schema): the agent exits.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// starter retries the steps of an agent's start with capped exponential
// backoff until they succeed or ctx ends.
type starter struct {
	log       *slog.Logger
	ready     *readiness
	failFast  bool          // the first failure ends the start
	attempt   time.Duration // bounds one attempt
	backoff   time.Duration // the first wait
	maxBackof time.Duration // the cap of the waits
}

// errStartCanceled means ctx ended while the start waited.
var errStartCanceled = errors.New("start canceled while waiting for the stores")

// retry runs step until it succeeds. A *permanentError, or any error with
// failFast, is returned at once; ctx ending returns errStartCanceled.
func (s *starter) retry(ctx context.Context, what string, step func(ctx context.Context) error) error {
	wait := s.backoff
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, s.attempt)
		err := step(actx)
		cancel()
		if err == nil {
			if n > 1 {
				s.log.Info("reached "+what, "attempts", n)
			}
			return nil
		}
		if ctx.Err() != nil {
			return errStartCanceled
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return perm.err
		}
		if s.failFast {
			return err
		}
		s.ready.setStarting(what, err)
		s.log.Warn("waiting for the "+what, "attempt", n, "retry_in", wait, "cause", strings.Join(strings.Fields(err.Error()), " "))
		select {
		case <-ctx.Done():
			return errStartCanceled
		case <-time.After(wait):
		}
		wait = min(2*wait, s.maxBackof)
	}
}
