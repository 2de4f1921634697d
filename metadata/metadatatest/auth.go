package metadatatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
)

// authTests are the auth.Store conformance tests.
var authTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"AuthTokens", testAuthTokens},
	{"AuthScramCredentials", testAuthScram},
	{"AuthACLs", testAuthACLs},
	{"AuthACLFilters", testAuthACLFilters},
	{"AuthACLChanges", testAuthACLChanges},
}

func testAuthTokens(t *testing.T, s metadata.Store) {
	c := ctx(t)
	textA, a, err := auth.NewToken("User:alice", 720*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := auth.NewToken("User:bob", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Created = a.Created.Add(time.Second) // listed after a
	for _, tok := range []auth.Token{a, b} {
		if err := s.CreateToken(c, tok); err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
	}
	if err := s.CreateToken(c, a); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("CreateToken of an existing id: %v, want auth.ErrInvalid", err)
	}
	bad := b
	bad.ID = "nothex"
	if err := s.CreateToken(c, bad); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("CreateToken of a malformed token: %v, want auth.ErrInvalid", err)
	}
	got, err := s.Token(c, a.ID)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if !sameToken(got, a) {
		t.Fatalf("Token = %+v, want %+v", got, a)
	}
	_, secret, _ := auth.ParseToken(textA)
	if err := got.Verify(secret, a.Created.Add(time.Minute)); err != nil {
		t.Fatalf("stored token does not verify: %v", err)
	}
	list, err := s.ListTokens(c)
	if err != nil || len(list) != 2 || !sameToken(list[0], a) || !sameToken(list[1], b) {
		t.Fatalf("ListTokens = %+v, %v; want a then b", list, err)
	}
	if err := s.RevokeToken(c, a.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if got, err := s.Token(c, a.ID); err != nil || !got.Revoked {
		t.Fatalf("after RevokeToken: %+v, %v", got, err)
	}
	if err := got.Verify(secret, time.Now()); err != nil {
		t.Fatal("the copy read before revocation is unchanged")
	}
	if got, _ := s.Token(c, a.ID); !errors.Is(got.Verify(secret, time.Now()), auth.ErrUnauthenticated) {
		t.Error("a revoked token verifies")
	}
	if got, _ := s.Token(c, b.ID); got.Revoked {
		t.Error("revoking a revoked b")
	}
	if err := s.RevokeToken(c, "0000000000000000"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("RevokeToken of an unknown id: %v, want auth.ErrNotFound", err)
	}
	if _, err := s.Token(c, "0000000000000000"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("Token of an unknown id: %v, want auth.ErrNotFound", err)
	}
}

func sameToken(a, b auth.Token) bool {
	return a.ID == b.ID && a.Principal == b.Principal && bytes.Equal(a.Hash, b.Hash) && a.Created.Equal(b.Created) &&
		a.Expires.Equal(b.Expires) && a.Revoked == b.Revoked
}

func testAuthScram(t *testing.T, s metadata.Store) {
	c := ctx(t)
	cred := func(user string, m auth.ScramMechanism, password string) auth.ScramCredential {
		sc, err := auth.NewScramCredential(user, m, password, nil, auth.MinScramIterations)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	alice256, alice512, bob256 := cred("alice", auth.ScramSHA256, "p1"), cred("alice", auth.ScramSHA512, "p2"), cred("bob", auth.ScramSHA256, "p3")
	for _, sc := range []auth.ScramCredential{bob256, alice512, alice256} {
		if err := s.PutScramCredential(c, sc); err != nil {
			t.Fatalf("PutScramCredential: %v", err)
		}
	}
	got, err := s.ScramCredential(c, "alice", auth.ScramSHA512)
	if err != nil || !sameScram(got, alice512) {
		t.Fatalf("ScramCredential = %+v, %v; want %+v", got, err, alice512)
	}
	list, err := s.ListScramCredentials(c)
	if err != nil || len(list) != 3 || !sameScram(list[0], alice256) || !sameScram(list[1], alice512) || !sameScram(list[2], bob256) {
		t.Fatalf("ListScramCredentials = %+v, %v; want by user then mechanism", list, err)
	}
	// A new password replaces the credential of its mechanism only.
	alice256b := cred("alice", auth.ScramSHA256, "new")
	if err := s.PutScramCredential(c, alice256b); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ScramCredential(c, "alice", auth.ScramSHA256); err != nil || !sameScram(got, alice256b) {
		t.Fatalf("after replacing: %+v, %v", got, err)
	}
	if got, err := s.ScramCredential(c, "alice", auth.ScramSHA512); err != nil || !sameScram(got, alice512) {
		t.Fatalf("the other mechanism changed: %+v, %v", got, err)
	}
	if err := s.DeleteScramCredential(c, "alice", auth.ScramSHA256); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScramCredential(c, "alice", auth.ScramSHA256); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("deleted credential: %v, want auth.ErrNotFound", err)
	}
	if err := s.DeleteScramCredential(c, "alice", auth.ScramSHA256); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("second delete: %v, want auth.ErrNotFound", err)
	}
	if _, err := s.ScramCredential(c, "carol", auth.ScramSHA256); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("unknown user: %v, want auth.ErrNotFound", err)
	}
	bad := bob256
	bad.Iterations = 1
	if err := s.PutScramCredential(c, bad); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("too few iterations: %v, want auth.ErrInvalid", err)
	}
	if got, _ := s.ScramCredential(c, "bob", auth.ScramSHA256); got.Iterations != bob256.Iterations {
		t.Error("a refused credential was stored")
	}
}

func sameScram(a, b auth.ScramCredential) bool {
	return a.User == b.User && a.Mechanism == b.Mechanism && bytes.Equal(a.Salt, b.Salt) && a.Iterations == b.Iterations &&
		bytes.Equal(a.StoredKey, b.StoredKey) && bytes.Equal(a.ServerKey, b.ServerKey)
}

// aclSet is a mix of every field's values.
func aclSet() []auth.ACL {
	var out []auth.ACL
	for i, p := range []string{"User:alice", "User:bob", "User:*"} {
		out = append(out,
			auth.ACL{Principal: p, Host: "*", Resource: auth.ResourceTopic, Pattern: auth.PatternLiteral, Name: "orders", Operation: auth.OpRead, Permission: auth.Allow},
			auth.ACL{Principal: p, Host: "*", Resource: auth.ResourceTopic, Pattern: auth.PatternPrefixed, Name: "orders", Operation: auth.OpWrite, Permission: auth.Deny},
			auth.ACL{Principal: p, Host: "*", Resource: auth.ResourceGroup, Pattern: auth.PatternLiteral, Name: "*", Operation: auth.Operation(int(auth.OpRead) + i), Permission: auth.Allow},
			auth.ACL{Principal: p, Host: "*", Resource: auth.ResourceCluster, Pattern: auth.PatternLiteral, Name: auth.ClusterName, Operation: auth.OpAll, Permission: auth.Allow},
		)
	}
	return out
}

func sortACLs(acls []auth.ACL) []auth.ACL {
	out := slices.Clone(acls)
	slices.SortFunc(out, func(a, b auth.ACL) int {
		switch as, bs := a.String(), b.String(); {
		case as < bs:
			return -1
		case as > bs:
			return 1
		}
		return 0
	})
	return out
}

func sameACLs(t *testing.T, what string, got, want []auth.ACL) {
	t.Helper()
	if g, w := sortACLs(got), sortACLs(want); !slices.Equal(g, w) {
		t.Errorf("%s:\n got %v\nwant %v", what, g, w)
	}
}

func testAuthACLs(t *testing.T, s metadata.Store) {
	c := ctx(t)
	set := aclSet()
	if err := s.CreateACLs(c, set); err != nil {
		t.Fatalf("CreateACLs: %v", err)
	}
	// An identical entry again, and with the host left empty ("*"): no-ops.
	again := set[0]
	again.Host = ""
	if err := s.CreateACLs(c, []auth.ACL{set[0], again}); err != nil {
		t.Fatalf("CreateACLs of existing entries: %v", err)
	}
	all, err := s.ListACLs(c, auth.ACLFilter{})
	if err != nil {
		t.Fatal(err)
	}
	sameACLs(t, "ListACLs after an identical create", all, set)
	if again, _ := s.ListACLs(c, auth.ACLFilter{}); !slices.Equal(again, all) {
		t.Error("ListACLs order is not stable")
	}

	// One invalid entry refuses the whole call.
	fresh := auth.ACL{Principal: "User:carol", Host: "*", Resource: auth.ResourceTopic, Pattern: auth.PatternLiteral, Name: "x", Operation: auth.OpRead, Permission: auth.Allow}
	invalid := fresh
	invalid.Principal = "carol"
	if err := s.CreateACLs(c, []auth.ACL{fresh, invalid}); !errors.Is(err, auth.ErrInvalid) {
		t.Fatalf("CreateACLs with an invalid entry: %v, want auth.ErrInvalid", err)
	}
	if got, _ := s.ListACLs(c, auth.ACLFilter{Principal: "User:carol"}); len(got) != 0 {
		t.Fatalf("a refused call stored %v", got)
	}

	f := auth.ACLFilter{Resource: auth.ResourceTopic, Pattern: auth.PatternPrefixed}
	gone, err := s.DeleteACLs(c, f)
	if err != nil {
		t.Fatal(err)
	}
	var want, kept []auth.ACL
	for _, a := range set {
		if f.Matches(a) {
			want = append(want, a)
		} else {
			kept = append(kept, a)
		}
	}
	sameACLs(t, "DeleteACLs returned", gone, want)
	left, _ := s.ListACLs(c, auth.ACLFilter{})
	sameACLs(t, "ListACLs after DeleteACLs", left, kept)
	if gone, err := s.DeleteACLs(c, f); err != nil || len(gone) != 0 {
		t.Errorf("second DeleteACLs = %v, %v; want none", gone, err)
	}
	if gone, err := s.DeleteACLs(c, auth.ACLFilter{}); err != nil || len(gone) != len(kept) {
		t.Errorf("DeleteACLs of everything = %d, %v; want %d", len(gone), err, len(kept))
	}
}

// testAuthACLFilters holds the store's filter to auth.ACLFilter.Matches
// over filters made from every subset of each ACL's fields.
func testAuthACLFilters(t *testing.T, s metadata.Store) {
	c := ctx(t)
	set := aclSet()
	if err := s.CreateACLs(c, set); err != nil {
		t.Fatal(err)
	}
	for _, a := range set {
		for mask := range 1 << 6 {
			var f auth.ACLFilter
			if mask&1 != 0 {
				f.Principal = a.Principal
			}
			if mask&2 != 0 {
				f.Resource = a.Resource
			}
			if mask&4 != 0 {
				f.Pattern = a.Pattern
			}
			if mask&8 != 0 {
				f.Name = a.Name
			}
			if mask&16 != 0 {
				f.Operation = a.Operation
			}
			if mask&32 != 0 {
				f.Permission = a.Permission
			}
			got, err := s.ListACLs(c, f)
			if err != nil {
				t.Fatal(err)
			}
			var want []auth.ACL
			for _, b := range set {
				if f.Matches(b) {
					want = append(want, b)
				}
			}
			sameACLs(t, fmt.Sprintf("ListACLs of %s by filter %+v", a, f), got, want)
		}
	}
	// A filter naming nothing stored selects nothing.
	if got, _ := s.ListACLs(c, auth.ACLFilter{Name: "none"}); len(got) != 0 {
		t.Errorf("filter by an unknown name: %v", got)
	}
}

func testAuthACLChanges(t *testing.T, s metadata.Store) {
	c := ctx(t)
	wctx, cancel := context.WithCancel(c)
	ch, err := s.ACLChanges(wctx)
	if err != nil {
		t.Fatalf("ACLChanges: %v", err)
	}
	await := func(what string) {
		t.Helper()
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
		case <-c.Done():
			t.Fatalf("%s: no change announced", what)
		}
	}
	set := aclSet()
	if err := s.CreateACLs(c, set[:2]); err != nil {
		t.Fatal(err)
	}
	await("after CreateACLs")
	if _, err := s.DeleteACLs(c, auth.ACLFilter{Principal: set[0].Principal}); err != nil {
		t.Fatal(err)
	}
	await("after DeleteACLs")
	cancel()
	for range ch { // drains what is pending, then ends: closed with its context
	}
}
