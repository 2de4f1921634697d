package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/batcher"
)

func TestAdminTokens(t *testing.T) {
	h := start(t, nil)
	a := h.c.Admin()
	ctx := context.Background()
	resp, err := a.CreateToken(ctx, &floev1.CreateTokenRequest{Principal: "User:alice", TtlMs: time.Hour.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	info := resp.GetInfo()
	if info.GetPrincipal() != "User:alice" || info.GetExpiresAtMs()-info.GetCreatedAtMs() != time.Hour.Milliseconds() {
		t.Fatalf("token info %v", info)
	}
	// The token verifies against what the store holds.
	v, err := auth.NewTokenVerifier(h.meta, auth.DefaultVerifierConfig())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := v.Verify(ctx, resp.GetToken()); err != nil || p.Name != "alice" {
		t.Fatalf("Verify = %v, %v", p, err)
	}
	list, err := a.ListTokens(ctx, &floev1.ListTokensRequest{})
	if err != nil || len(list.GetTokens()) != 1 || list.GetTokens()[0].GetId() != info.GetId() {
		t.Fatalf("ListTokens = %v, %v", list, err)
	}
	if strings.Contains(list.String(), strings.TrimPrefix(resp.GetToken(), "floe_"+info.GetId()+"_")) {
		t.Fatal("ListTokens shows the secret")
	}
	if _, err := a.RevokeToken(ctx, &floev1.RevokeTokenRequest{Id: info.GetId()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.meta.Token(ctx, info.GetId()); !got.Revoked {
		t.Fatal("not revoked in the store")
	}
	if _, err := a.RevokeToken(ctx, &floev1.RevokeTokenRequest{Id: "0123456789abcdef"}); code(err) != codes.NotFound {
		t.Errorf("revoke unknown: %v, want NotFound", err)
	}
	for _, c := range []struct {
		req   *floev1.CreateTokenRequest
		field string
	}{
		{&floev1.CreateTokenRequest{Principal: "alice"}, "principal"},
		{&floev1.CreateTokenRequest{Principal: "User:*"}, "principal"},
		{&floev1.CreateTokenRequest{Principal: "User:a", TtlMs: -1}, "ttl_ms"},
		{&floev1.CreateTokenRequest{Principal: "User:a", TtlMs: 1 << 62}, "ttl_ms"},
	} {
		if _, err := a.CreateToken(ctx, c.req); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.field) {
			t.Errorf("CreateToken(%v) = %v, want InvalidArgument naming %s", c.req, err, c.field)
		}
	}
	if _, err := a.RevokeToken(ctx, &floev1.RevokeTokenRequest{Id: "x"}); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "id") {
		t.Errorf("revoke malformed id: %v", err)
	}
	if list, _ := a.ListTokens(ctx, &floev1.ListTokensRequest{}); len(list.GetTokens()) != 1 {
		t.Errorf("refused calls stored tokens: %v", list)
	}
}

func TestAdminUsers(t *testing.T) {
	h := start(t, nil)
	a := h.c.Admin()
	ctx := context.Background()
	if _, err := a.UpsertUser(ctx, &floev1.UpsertUserRequest{Name: "alice", Mechanism: floev1.ScramMechanism_SCRAM_SHA_512, Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpsertUser(ctx, &floev1.UpsertUserRequest{Name: "alice", Mechanism: floev1.ScramMechanism_SCRAM_SHA_256, Password: "pw", Iterations: 4096}); err != nil {
		t.Fatal(err)
	}
	// The agent derived the credential from the password it was sent.
	c, err := h.meta.ScramCredential(ctx, "alice", auth.ScramSHA512)
	if err != nil || c.Iterations != auth.DefaultScramIterations {
		t.Fatalf("stored credential %+v, %v", c, err)
	}
	want, _ := auth.NewScramCredential("alice", auth.ScramSHA512, "pw", c.Salt, c.Iterations)
	if string(want.StoredKey) != string(c.StoredKey) || string(want.ServerKey) != string(c.ServerKey) {
		t.Fatal("the stored keys are not the password's")
	}
	users, err := a.ListUsers(ctx, &floev1.ListUsersRequest{})
	if err != nil || len(users.GetUsers()) != 2 || users.GetUsers()[0].GetIterations() != 4096 {
		t.Fatalf("ListUsers = %v, %v", users, err)
	}
	for _, c := range []struct {
		req   *floev1.UpsertUserRequest
		field string
	}{
		{&floev1.UpsertUserRequest{Mechanism: 1, Password: "p"}, "name"},
		{&floev1.UpsertUserRequest{Name: "*", Mechanism: 1, Password: "p"}, "name"},
		{&floev1.UpsertUserRequest{Name: "b", Password: "p"}, "mechanism"},
		{&floev1.UpsertUserRequest{Name: "b", Mechanism: 7, Password: "p"}, "mechanism"},
		{&floev1.UpsertUserRequest{Name: "b", Mechanism: 1}, "password"},
		{&floev1.UpsertUserRequest{Name: "b", Mechanism: 1, Password: strings.Repeat("p", 1025)}, "password"},
		{&floev1.UpsertUserRequest{Name: "b", Mechanism: 1, Password: "p", Iterations: 100}, "iterations"},
		{&floev1.UpsertUserRequest{Name: "b", Mechanism: 1, Password: "p", Iterations: auth.MaxScramIterations + 1}, "iterations"},
	} {
		if _, err := a.UpsertUser(ctx, c.req); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.field) {
			t.Errorf("UpsertUser(%v) = %v, want InvalidArgument naming %s", c.req, err, c.field)
		}
	}
	d, err := a.DeleteUser(ctx, &floev1.DeleteUserRequest{Name: "alice", Mechanism: floev1.ScramMechanism_SCRAM_SHA_256})
	if err != nil || d.GetDeleted() != 1 {
		t.Fatalf("DeleteUser one mechanism = %v, %v", d, err)
	}
	d, err = a.DeleteUser(ctx, &floev1.DeleteUserRequest{Name: "alice"})
	if err != nil || d.GetDeleted() != 1 {
		t.Fatalf("DeleteUser every mechanism = %v, %v", d, err)
	}
	if _, err := a.DeleteUser(ctx, &floev1.DeleteUserRequest{Name: "alice"}); code(err) != codes.NotFound {
		t.Errorf("DeleteUser of none: %v, want NotFound", err)
	}
}

func TestAdminACLs(t *testing.T) {
	h := start(t, func(c *agent.Config, _ *batcher.Config) { c.MaxACLs = 3 })
	a := h.c.Admin()
	ctx := context.Background()
	read := &floev1.Acl{Principal: "User:alice", ResourceType: floev1.AclResourceType_ACL_RESOURCE_TYPE_TOPIC,
		PatternType: floev1.AclPatternType_ACL_PATTERN_TYPE_PREFIXED, Name: "orders",
		Operation: floev1.AclOperation_ACL_OPERATION_READ, Permission: floev1.AclPermission_ACL_PERMISSION_ALLOW}
	deny := &floev1.Acl{Principal: "User:*", ResourceType: floev1.AclResourceType_ACL_RESOURCE_TYPE_CLUSTER,
		PatternType: floev1.AclPatternType_ACL_PATTERN_TYPE_LITERAL, Name: auth.ClusterName,
		Operation: floev1.AclOperation_ACL_OPERATION_ALTER, Permission: floev1.AclPermission_ACL_PERMISSION_DENY}
	if _, err := a.CreateAcls(ctx, &floev1.CreateAclsRequest{Acls: []*floev1.Acl{read, deny, read}}); err != nil {
		t.Fatal(err)
	}
	// Identical entries do not count twice against max_acls.
	if _, err := a.CreateAcls(ctx, &floev1.CreateAclsRequest{Acls: []*floev1.Acl{read}}); err != nil {
		t.Fatalf("recreating an entry at the bound: %v", err)
	}
	list, err := a.ListAcls(ctx, &floev1.ListAclsRequest{})
	if err != nil || len(list.GetAcls()) != 2 || list.GetAcls()[0].GetHost() != "*" {
		t.Fatalf("ListAcls = %v, %v", list, err)
	}
	stored, _ := h.meta.ListACLs(ctx, auth.ACLFilter{})
	if d := auth.Authorize(stored, nil, auth.Principal{Name: "alice"}, auth.OpRead, auth.Topic("orders.eu")); !d.Allowed {
		t.Fatalf("stored ACLs do not allow: %+v", d)
	}
	more := func(name string) *floev1.Acl {
		m := proto.Clone(read).(*floev1.Acl)
		m.Name = name
		return m
	}
	if _, err := a.CreateAcls(ctx, &floev1.CreateAclsRequest{Acls: []*floev1.Acl{more("a"), more("b")}}); code(err) != codes.ResourceExhausted ||
		!strings.Contains(err.Error(), "max_acls") {
		t.Fatalf("past max_acls: %v, want ResourceExhausted naming max_acls", err)
	}
	if list, _ := a.ListAcls(ctx, &floev1.ListAclsRequest{}); len(list.GetAcls()) != 2 {
		t.Fatalf("a refused create stored ACLs: %v", list)
	}
	bad := proto.Clone(read).(*floev1.Acl)
	bad.Principal = "alice"
	for _, c := range []struct {
		req   *floev1.CreateAclsRequest
		field string
	}{
		{&floev1.CreateAclsRequest{}, "acls"},
		{&floev1.CreateAclsRequest{Acls: []*floev1.Acl{more("ok"), bad}}, "acls[1]"},
		{&floev1.CreateAclsRequest{Acls: []*floev1.Acl{{Principal: "User:a", ResourceType: 9}}}, "acls[0]"},
	} {
		if _, err := a.CreateAcls(ctx, c.req); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), c.field) {
			t.Errorf("CreateAcls(%v) = %v, want InvalidArgument naming %s", c.req, err, c.field)
		}
	}
	f := &floev1.AclFilter{Permission: floev1.AclPermission_ACL_PERMISSION_DENY}
	if got, err := a.ListAcls(ctx, &floev1.ListAclsRequest{Filter: f}); err != nil || len(got.GetAcls()) != 1 || got.GetAcls()[0].GetPrincipal() != "User:*" {
		t.Fatalf("ListAcls(deny) = %v, %v", got, err)
	}
	if _, err := a.DeleteAcls(ctx, &floev1.DeleteAclsRequest{}); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "filter") {
		t.Fatalf("DeleteAcls with no filter: %v, want InvalidArgument", err)
	}
	if _, err := a.ListAcls(ctx, &floev1.ListAclsRequest{Filter: &floev1.AclFilter{Operation: 42}}); code(err) != codes.InvalidArgument {
		t.Fatalf("ListAcls with a bad filter: %v", err)
	}
	del, err := a.DeleteAcls(ctx, &floev1.DeleteAclsRequest{Filter: f})
	if err != nil || len(del.GetDeleted()) != 1 {
		t.Fatalf("DeleteAcls = %v, %v", del, err)
	}
	del, err = a.DeleteAcls(ctx, &floev1.DeleteAclsRequest{All: true})
	if err != nil || len(del.GetDeleted()) != 1 {
		t.Fatalf("DeleteAcls(all) = %v, %v", del, err)
	}
}
