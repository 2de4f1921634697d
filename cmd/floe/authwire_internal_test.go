package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
)

// TestServerAuth: off, nothing is enforced and no store is needed; on,
// checks are refused until the stores' authorizer and verifier are set,
// and a build without them refuses to start.
func TestServerAuth(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	off, err := newServerAuth(defaultAuthSettings(), prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if off.grpcOptions(&lateAgent{}) != nil || off.open(ctx, nil, log) != nil || off.kafkaOptions(kafka.Options{}).Guard != nil {
		t.Fatal("auth off enforces something")
	}

	set := defaultAuthSettings()
	set.Enabled, set.Superusers = true, "User:root"
	on, err := newServerAuth(set, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if len(on.grpcOptions(&lateAgent{})) == 0 {
		t.Fatal("auth on without interceptors")
	}
	alice := auth.Principal{Name: "alice"}
	if on.guard.Allowed("grpc", alice, auth.OpRead, auth.Topic("t")) {
		t.Fatal("allowed before the ACLs are loaded")
	}
	if _, err := on.late.VerifyToken(ctx, "x"); err == nil || access.IsUnauthenticated(err) {
		t.Fatalf("token before the store is open: %v, want unavailable", err)
	}
	saved := authBackends
	t.Cleanup(func() { authBackends = saved })
	authBackends = nil
	if err := on.open(ctx, nil, log); !errors.Is(err, errNoAuthBackends) {
		t.Fatalf("open without backends: %v", err)
	}
	st, v := accesstest.NewStore(), accesstest.NewVerifier()
	v.Add("tok", "alice")
	st.Allow("User:alice", auth.OpRead, auth.Topic("t"))
	authBackends = func(context.Context, metadata.Store, time.Duration, *slog.Logger) (auth.Authorizer, access.TokenVerifier, auth.Store, func(), error) {
		return st, v, st, func() {}, nil
	}
	if err := on.open(ctx, nil, log); err != nil {
		t.Fatal(err)
	}
	if !on.guard.Allowed("grpc", alice, auth.OpRead, auth.Topic("t")) || on.guard.Allowed("grpc", alice, auth.OpWrite, auth.Topic("t")) {
		t.Fatal("ACLs not applied once open")
	}
	if p, err := on.late.VerifyToken(ctx, "tok"); err != nil || p != alice {
		t.Fatalf("token once open: %v, %v", p, err)
	}
	if o := on.kafkaOptions(kafka.Options{}); o.Guard == nil || o.Credentials == nil || o.ACLs == nil {
		t.Fatalf("kafka options: %+v", o)
	}
}

// TestDevRefusesAuthWithoutBackends: floe dev -auth-enabled in a build
// without an ACL store ends with an error naming the setting, rather than
// serving unprotected.
func TestDevRefusesAuthWithoutBackends(t *testing.T) {
	saved := authBackends
	t.Cleanup(func() { authBackends = saved })
	authBackends = nil
	dir := t.TempDir()
	err := runDev(context.Background(), []string{"-auth-enabled", "-data", filepath.Join(dir, "data"),
		"-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-kafka-listen", ""}, io.Discard, io.Discard)
	if !errors.Is(err, errNoAuthBackends) {
		t.Fatalf("floe dev -auth-enabled: %v, want %v", err, errNoAuthBackends)
	}
}
