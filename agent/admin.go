package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/auth/authpb"
)

// Bounds of the admin service's input.
const (
	// maxPasswordBytes bounds a SCRAM password sent to UpsertUser.
	maxPasswordBytes = 1024
	// maxTokenTTL bounds a token's lifetime.
	maxTokenTTL = 100 * 365 * 24 * time.Hour
)

// adminServer is the AdminService: tokens, SCRAM users and ACLs in the
// metadata store. Who may call it is the interceptors' business (ALTER on
// the cluster); it validates its input at the edge.
type adminServer struct {
	floev1.UnimplementedAdminServiceServer
	store   auth.Store
	maxACLs int
}

// AdminServer returns the agent's AdminService, for servers that register
// services themselves (Register adds it).
func (a *Agent) AdminServer() floev1.AdminServiceServer { return a.admin }

// invalidField is InvalidArgument naming the request's field.
func invalidField(rpc, field string, err error) error {
	return status.Errorf(codes.InvalidArgument, "%s: %s: %v", rpc, field, err)
}

// adminStatus maps the store's auth errors, then everything else as the
// agent does.
func adminStatus(rpc string, err error) error {
	switch {
	case errors.Is(err, auth.ErrNotFound):
		return status.Errorf(codes.NotFound, "%s: %v", rpc, err)
	case errors.Is(err, auth.ErrInvalid):
		return status.Errorf(codes.InvalidArgument, "%s: %v", rpc, err)
	}
	return toStatus(err)
}

func (s *adminServer) CreateToken(ctx context.Context, req *floev1.CreateTokenRequest) (*floev1.CreateTokenResponse, error) {
	if err := validPrincipal(req.GetPrincipal()); err != nil {
		return nil, invalidField("create token", "principal", err)
	}
	ttl := time.Duration(req.GetTtlMs()) * time.Millisecond
	if req.GetTtlMs() < 0 || req.GetTtlMs() > maxTokenTTL.Milliseconds() {
		return nil, invalidField("create token", "ttl_ms", fmt.Errorf("%d must be 0 (never expires) to %d", req.GetTtlMs(), maxTokenTTL.Milliseconds()))
	}
	text, t, err := auth.NewToken(req.GetPrincipal(), ttl)
	if err != nil {
		return nil, adminStatus("create token", err)
	}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return nil, adminStatus("create token", err)
	}
	return &floev1.CreateTokenResponse{Token: text, Info: authpb.TokenInfo(t)}, nil
}

func (s *adminServer) ListTokens(ctx context.Context, _ *floev1.ListTokensRequest) (*floev1.ListTokensResponse, error) {
	ts, err := s.store.ListTokens(ctx)
	if err != nil {
		return nil, adminStatus("list tokens", err)
	}
	out := &floev1.ListTokensResponse{Tokens: make([]*floev1.TokenInfo, len(ts))}
	for i, t := range ts {
		out.Tokens[i] = authpb.TokenInfo(t)
	}
	return out, nil
}

func (s *adminServer) RevokeToken(ctx context.Context, req *floev1.RevokeTokenRequest) (*floev1.RevokeTokenResponse, error) {
	if !auth.ValidTokenID(req.GetId()) {
		return nil, invalidField("revoke token", "id", fmt.Errorf("%q is not a token id (16 lowercase hex digits, as floe token list shows)", req.GetId()))
	}
	if err := s.store.RevokeToken(ctx, req.GetId()); err != nil {
		return nil, adminStatus("revoke token", err)
	}
	return &floev1.RevokeTokenResponse{}, nil
}

func (s *adminServer) UpsertUser(ctx context.Context, req *floev1.UpsertUserRequest) (*floev1.UpsertUserResponse, error) {
	const rpc = "upsert user"
	if err := validUserName(req.GetName()); err != nil {
		return nil, invalidField(rpc, "name", err)
	}
	mech, err := authpb.ScramFromProto(req.GetMechanism())
	if err != nil || mech == auth.ScramUnknown {
		return nil, invalidField(rpc, "mechanism", fmt.Errorf("%v: want SCRAM_SHA_256 or SCRAM_SHA_512", req.GetMechanism()))
	}
	if n := len(req.GetPassword()); n == 0 || n > maxPasswordBytes {
		return nil, invalidField(rpc, "password", fmt.Errorf("%d bytes, want 1 to %d", n, maxPasswordBytes))
	}
	iterations := int(req.GetIterations())
	if iterations == 0 {
		iterations = auth.DefaultScramIterations
	}
	if iterations < auth.MinScramIterations || iterations > auth.MaxScramIterations {
		return nil, invalidField(rpc, "iterations", fmt.Errorf("%d, want %d to %d (0: %d)", iterations,
			auth.MinScramIterations, auth.MaxScramIterations, auth.DefaultScramIterations))
	}
	c, err := auth.NewScramCredential(req.GetName(), mech, req.GetPassword(), nil, iterations)
	if err != nil {
		return nil, adminStatus(rpc, err)
	}
	if err := s.store.PutScramCredential(ctx, c); err != nil {
		return nil, adminStatus(rpc, err)
	}
	return &floev1.UpsertUserResponse{}, nil
}

// validUserName accepts what a principal's name may be.
func validUserName(name string) error { return validPrincipal(auth.PrincipalPrefix + name) }

// validPrincipal accepts User:NAME, but not User:* (which in an ACL means
// every principal).
func validPrincipal(p string) error {
	if _, err := auth.ParsePrincipal(p); err != nil {
		return err
	}
	if p == auth.PrincipalPrefix+"*" {
		return fmt.Errorf("%w: %q names every principal; a token or user needs one", auth.ErrInvalid, p)
	}
	return nil
}

func (s *adminServer) ListUsers(ctx context.Context, _ *floev1.ListUsersRequest) (*floev1.ListUsersResponse, error) {
	cs, err := s.store.ListScramCredentials(ctx)
	if err != nil {
		return nil, adminStatus("list users", err)
	}
	out := &floev1.ListUsersResponse{Users: make([]*floev1.UserInfo, len(cs))}
	for i, c := range cs {
		out.Users[i] = &floev1.UserInfo{Name: c.User, Mechanism: authpb.ScramToProto(c.Mechanism), Iterations: int32(c.Iterations)}
	}
	return out, nil
}

func (s *adminServer) DeleteUser(ctx context.Context, req *floev1.DeleteUserRequest) (*floev1.DeleteUserResponse, error) {
	const rpc = "delete user"
	if err := validUserName(req.GetName()); err != nil {
		return nil, invalidField(rpc, "name", err)
	}
	mech, err := authpb.ScramFromProto(req.GetMechanism())
	if err != nil {
		return nil, invalidField(rpc, "mechanism", err)
	}
	mechs := []auth.ScramMechanism{mech}
	if mech == auth.ScramUnknown {
		mechs = []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512}
	}
	var deleted int32
	for _, m := range mechs {
		err := s.store.DeleteScramCredential(ctx, req.GetName(), m)
		switch {
		case err == nil:
			deleted++
		case !errors.Is(err, auth.ErrNotFound):
			return nil, adminStatus(rpc, err)
		}
	}
	if deleted == 0 {
		return nil, status.Errorf(codes.NotFound, "%s: user %q has no credential to delete", rpc, req.GetName())
	}
	return &floev1.DeleteUserResponse{Deleted: deleted}, nil
}

func (s *adminServer) CreateAcls(ctx context.Context, req *floev1.CreateAclsRequest) (*floev1.CreateAclsResponse, error) {
	const rpc = "create acls"
	if len(req.GetAcls()) == 0 {
		return nil, invalidField(rpc, "acls", errors.New("empty"))
	}
	if len(req.GetAcls()) > s.maxACLs {
		return nil, limitError(codes.ResourceExhausted, "max_acls", int64(s.maxACLs),
			"%s: %d ACLs, over the agent's limit of %d (max_acls)", rpc, len(req.GetAcls()), s.maxACLs)
	}
	acls := make([]auth.ACL, len(req.GetAcls()))
	for i, pa := range req.GetAcls() {
		a, err := authpb.ACLFromProto(pa)
		if err == nil {
			err = a.Validate()
		}
		if err != nil {
			return nil, invalidField(rpc, fmt.Sprintf("acls[%d]", i), err)
		}
		acls[i] = a.Normalize()
	}
	existing, err := s.store.ListACLs(ctx, auth.ACLFilter{})
	if err != nil {
		return nil, adminStatus(rpc, err)
	}
	if n := len(existing) + countNew(existing, acls); n > s.maxACLs {
		return nil, limitError(codes.ResourceExhausted, "max_acls", int64(s.maxACLs),
			"%s: there are %d ACLs; these would make %d, over the agent's limit of %d (max_acls)", rpc, len(existing), n, s.maxACLs)
	}
	if err := s.store.CreateACLs(ctx, acls); err != nil {
		return nil, adminStatus(rpc, err)
	}
	return &floev1.CreateAclsResponse{}, nil
}

// countNew counts the distinct ACLs of acls that existing lacks. The
// check is the agent's: concurrent creates may pass the bound by their
// number.
func countNew(existing, acls []auth.ACL) int {
	seen := make(map[auth.ACL]bool, len(existing)+len(acls))
	for _, a := range existing {
		seen[a] = true
	}
	n := 0
	for _, a := range acls {
		if !seen[a] {
			seen[a] = true
			n++
		}
	}
	return n
}

func (s *adminServer) ListAcls(ctx context.Context, req *floev1.ListAclsRequest) (*floev1.ListAclsResponse, error) {
	f, err := authpb.FilterFromProto(req.GetFilter())
	if err != nil {
		return nil, invalidField("list acls", "filter", err)
	}
	acls, err := s.store.ListACLs(ctx, f)
	if err != nil {
		return nil, adminStatus("list acls", err)
	}
	return &floev1.ListAclsResponse{Acls: authpb.ACLsToProto(acls)}, nil
}

func (s *adminServer) DeleteAcls(ctx context.Context, req *floev1.DeleteAclsRequest) (*floev1.DeleteAclsResponse, error) {
	f, err := authpb.FilterFromProto(req.GetFilter())
	if err != nil {
		return nil, invalidField("delete acls", "filter", err)
	}
	if f == (auth.ACLFilter{}) && !req.GetAll() {
		return nil, invalidField("delete acls", "filter", errors.New("empty: it would delete every ACL; set all to mean it"))
	}
	acls, err := s.store.DeleteACLs(ctx, f)
	if err != nil {
		return nil, adminStatus("delete acls", err)
	}
	return &floev1.DeleteAclsResponse{Deleted: authpb.ACLsToProto(acls)}, nil
}
