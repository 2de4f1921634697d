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
