package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/internal/testenv"
)

// TestACLCacheAcrossStores changes ACLs through one store while an ACL
// cache reads another on the same database, as two agents do: the
// notification alone (the refresh period is an hour) updates the cache.
func TestACLCacheAcrossStores(t *testing.T) {
	dsn := testenv.Postgres(t)
	before := goleak.IgnoreCurrent()
	a, b := open(t, dsn), open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := auth.DefaultCacheConfig()
	cfg.Refresh = time.Hour
	cache, err := auth.NewCache(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	alice := auth.Principal{Name: "alice"}
	acl := auth.ACL{Principal: "User:alice", Resource: auth.ResourceTopic, Pattern: auth.PatternPrefixed, Name: "orders", Operation: auth.OpRead, Permission: auth.Allow}
	if err := a.CreateACLs(ctx, []auth.ACL{acl}); err != nil {
		t.Fatal(err)
	}
	for !cache.Authorize(alice, auth.OpRead, auth.Topic("orders.eu")).Allowed {
		select {
		case <-ctx.Done():
			t.Fatal("the other store's cache never saw the new ACL")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := a.DeleteACLs(ctx, auth.ACLFilter{Principal: "User:alice"}); err != nil {
		t.Fatal(err)
	}
	for cache.Authorize(alice, auth.OpRead, auth.Topic("orders.eu")).Allowed {
		select {
		case <-ctx.Done():
			t.Fatal("the other store's cache never dropped the deleted ACL")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cache.Close()
	a.Close()
	b.Close()
	goleak.VerifyNone(t, before)
}

func TestACLChannelName(t *testing.T) {
	if got := aclChannel("floe_commits"); got != "floe_commits_acls" {
		t.Errorf("aclChannel = %q", got)
	}
	long := strings.Repeat("c", maxChannelName)
	if got := aclChannel(long); len(got) != maxChannelName || got == long || !strings.HasSuffix(got, "_acls") {
		t.Errorf("aclChannel of a %d-byte name = %q", len(long), got)
	}
}

// TestACLChangesAfterReconnect kills the listener's connection: ACL
// changes announced meanwhile are lost, so the store signals a change once
// it listens again, and later changes are announced.
func TestACLChangesAfterReconnect(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := s.ACLChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", killed, err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no ACL change signalled after the listener reconnected")
	}
	// Drain a change the reconnect may have merged, then one more change.
	select {
	case <-ch:
	default:
	}
	if err := s.CreateACLs(ctx, []auth.ACL{{Principal: "User:a", Resource: auth.ResourceGroup, Pattern: auth.PatternLiteral,
		Name: "g", Operation: auth.OpRead, Permission: auth.Allow}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("no ACL change announced after the reconnect")
	}
}
