package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// memStore is an auth.Store in memory that announces ACL changes.
type memStore struct {
	mu       sync.Mutex // protects everything below
	acls     []ACL
	tokens   map[string]Token
	reads    int // Token and ListACLs calls
	failList error
	watchers []chan struct{}
}

func newMemStore() *memStore { return &memStore{tokens: make(map[string]Token)} }

func (m *memStore) CreateToken(_ context.Context, t Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[t.ID] = t
	return nil
}

func (m *memStore) Token(_ context.Context, id string) (Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	t, ok := m.tokens[id]
	if !ok {
		return Token{}, ErrNotFound
	}
	return t, nil
}

func (m *memStore) ListTokens(context.Context) ([]Token, error) { return nil, nil }

func (m *memStore) RevokeToken(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tokens[id]
	t.Revoked = true
	m.tokens[id] = t
	return nil
}

func (m *memStore) PutScramCredential(context.Context, ScramCredential) error { return nil }
func (m *memStore) ScramCredential(context.Context, string, ScramMechanism) (ScramCredential, error) {
	return ScramCredential{}, ErrNotFound
}
func (m *memStore) ListScramCredentials(context.Context) ([]ScramCredential, error) { return nil, nil }
func (m *memStore) DeleteScramCredential(context.Context, string, ScramMechanism) error {
	return nil
}

func (m *memStore) CreateACLs(_ context.Context, acls []ACL) error {
	m.mu.Lock()
	m.acls = append(m.acls, acls...)
	m.mu.Unlock()
	m.announce()
	return nil
}

func (m *memStore) ListACLs(context.Context, ACLFilter) ([]ACL, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.failList != nil {
		return nil, m.failList
	}
	return append([]ACL(nil), m.acls...), nil
}

func (m *memStore) DeleteACLs(_ context.Context, f ACLFilter) ([]ACL, error) {
	m.mu.Lock()
	var kept, gone []ACL
	for _, a := range m.acls {
		if f.Matches(a) {
			gone = append(gone, a)
		} else {
			kept = append(kept, a)
		}
	}
	m.acls = kept
	m.mu.Unlock()
	m.announce()
	return gone, nil
}

func (m *memStore) ACLChanges(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers = append(m.watchers, ch)
	m.mu.Unlock()
	return ch, nil
}

func (m *memStore) announce() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// eventually polls cond (no timing assert: it only bounds the wait).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheRefreshesOnNotification(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	s := newMemStore()
	cfg := DefaultCacheConfig()
	cfg.Refresh = time.Hour // only the notification can refresh it
	cfg.Superusers = []string{"User:root"}
	c, err := NewCache(ctx, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	alice := Principal{Name: "alice"}
	if c.Authorize(alice, OpRead, Topic("t")).Allowed {
		t.Fatal("allowed with no ACLs")
	}
	if !c.Authorize(Principal{Name: "root"}, OpDelete, Cluster()).Allowed {
		t.Fatal("superuser refused")
	}
	if err := s.CreateACLs(ctx, []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache sees the new ACL", func() bool { return c.Authorize(alice, OpRead, Topic("t")).Allowed })
	if c.Authorize(alice, OpRead, Group("t")).Allowed {
		t.Error("a topic ACL allows a group")
	}
	if _, err := s.DeleteACLs(ctx, ACLFilter{Principal: "User:alice"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cache drops the deleted ACL", func() bool { return !c.Authorize(alice, OpRead, Topic("t")).Allowed })
}

func TestCacheRefreshesOnPeriod(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newMemStore()
	// No watcher: a Store without ACLChanges.
	plain := struct{ Store }{s}
	cfg := DefaultCacheConfig()
	cfg.Refresh = 10 * time.Millisecond
	c, err := NewCache(context.Background(), plain, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.mu.Lock()
	s.acls = append(s.acls, acl(Allow, "User:*", ResourceGroup, PatternPrefixed, "g", OpRead))
	s.mu.Unlock()
	eventually(t, "the periodic reload", func() bool { return c.Authorize(Principal{Name: "x"}, OpRead, Group("g1")).Allowed })
}

func TestCacheBoundAndFailures(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	s := newMemStore()
	allowT := acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)
	s.acls = []ACL{allowT}
	cfg := DefaultCacheConfig()
	cfg.Refresh = time.Hour
	cfg.MaxACLs = 2
	cfg.Superusers = []string{"User:root"}
	c, err := NewCache(ctx, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	alice := Principal{Name: "alice"}

	// A failing store keeps the last ACLs.
	s.mu.Lock()
	s.failList = errors.New("down")
	s.mu.Unlock()
	if err := c.Reload(ctx); err == nil {
		t.Fatal("Reload hid the store's error")
	}
	if n, err := c.Len(); n != 1 || err == nil || !c.Authorize(alice, OpRead, Topic("t")).Allowed {
		t.Fatalf("after a failed reload: %d ACLs, %v", n, err)
	}
	s.mu.Lock()
	s.failList = nil
	s.acls = append(s.acls, allowT, allowT)
	s.mu.Unlock()

	// Past the bound: closed to all but superusers.
	if err := c.Reload(ctx); !errors.Is(err, ErrTooManyACLs) {
		t.Fatalf("Reload of 3 ACLs with MaxACLs 2: %v", err)
	}
	if c.Authorize(alice, OpRead, Topic("t")).Allowed || !c.Authorize(Principal{Name: "root"}, OpRead, Topic("t")).Allowed {
		t.Fatal("over the bound the cache must allow superusers only")
	}
	s.mu.Lock()
	s.acls = s.acls[:1]
	s.mu.Unlock()
	if err := c.Reload(ctx); err != nil || !c.Authorize(alice, OpRead, Topic("t")).Allowed {
		t.Fatalf("back under the bound: %v", err)
	}

	for _, bad := range []CacheConfig{{Refresh: 0, MaxACLs: 1}, {Refresh: time.Second}, {Refresh: time.Second, MaxACLs: 1, Superusers: []string{"root"}}} {
		if _, err := NewCache(ctx, s, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewCache(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	s.mu.Lock()
	s.failList = errors.New("down")
	s.mu.Unlock()
	if _, err := NewCache(ctx, s, cfg); err == nil {
		t.Error("NewCache over a failing store succeeded")
	}
}

func TestTokenVerifier(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	text, tok, err := NewToken("User:alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultVerifierConfig()
	cfg.MaxCached = 2
	v, err := NewTokenVerifier(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := tok.Created
	v.now = func() time.Time { return now }

	p, err := v.Verify(ctx, text)
	if err != nil || p.Name != "alice" {
		t.Fatalf("Verify = %v, %v", p, err)
	}
	if _, err := v.Verify(ctx, text); err != nil || s.reads != 1 {
		t.Fatalf("second Verify: %v, %d store reads, want 1", err, s.reads)
	}
	wrong := text[:len(text)-1] + map[bool]string{true: "1", false: "0"}[text[len(text)-1] == '0']
	if _, err := v.Verify(ctx, wrong); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("wrong secret: %v", err)
	}

	// Revoked in the store: noticed once the cached copy is Refresh old.
	if err := s.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(cfg.Refresh - time.Nanosecond)
	if _, err := v.Verify(ctx, text); err != nil {
		t.Fatalf("within Refresh the cached token still verifies: %v", err)
	}
	now = now.Add(time.Nanosecond)
	if _, err := v.Verify(ctx, text); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token after Refresh: %v", err)
	}

	// Expiry needs no store read.
	text2, tok2, _ := NewToken("User:bob", time.Minute)
	s.CreateToken(ctx, tok2)
	now = tok2.Created
	if _, err := v.Verify(ctx, text2); err != nil {
		t.Fatal(err)
	}
	now = tok2.Expires
	if _, err := v.Verify(ctx, text2); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expired: %v", err)
	}

	// Unknown ids are refused and not cached; the cache stays bounded.
	for i := 0; i < 5; i++ {
		unknown, _, _ := NewToken("User:x", 0)
		if _, err := v.Verify(ctx, unknown); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("unknown token: %v", err)
		}
		t3, tok3, _ := NewToken("User:y", 0)
		s.CreateToken(ctx, tok3)
		if _, err := v.Verify(ctx, t3); err != nil {
			t.Fatal(err)
		}
		if n := v.Cached(); n > cfg.MaxCached {
			t.Fatalf("%d tokens cached, MaxCached %d", n, cfg.MaxCached)
		}
	}
	if _, err := v.Verify(ctx, "Bearer x"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("malformed: %v", err)
	}
	if _, err := NewTokenVerifier(s, VerifierConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero config: %v", err)
	}
}

// BenchmarkCacheAuthorize is the cost of one ACL check against 1000 topic
// ACLs (the allow matches the last).
func BenchmarkCacheAuthorize(b *testing.B) {
	s := newMemStore()
	for i := range 1000 {
		s.acls = append(s.acls, acl(Allow, "User:u", ResourceTopic, PatternLiteral, "t"+string(rune('a'+i%26))+time.Duration(i).String(), OpRead))
	}
	s.acls = append(s.acls, acl(Allow, "User:alice", ResourceTopic, PatternPrefixed, "orders", OpRead))
	c, err := NewCache(context.Background(), s, DefaultCacheConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := Principal{Name: "alice"}
	b.ReportAllocs()
	for b.Loop() {
		if !c.Authorize(p, OpRead, Topic("orders.eu")).Allowed {
			b.Fatal("refused")
		}
	}
}
