// Package authpb converts the auth package's values to and from the gRPC
// API's messages (AdminService), for the agent and the CLI alike. The
// proto enumerations number their values as auth does (UNSPECIFIED is
// auth's Unknown); TestEnumsMatch holds them together.
package authpb

import (
	"fmt"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// TokenInfo is a stored token's public part.
func TokenInfo(t auth.Token) *floev1.TokenInfo {
	ti := &floev1.TokenInfo{Id: t.ID, Principal: t.Principal, CreatedAtMs: t.Created.UnixMilli(), Revoked: t.Revoked}
	if !t.Expires.IsZero() {
		ti.ExpiresAtMs = t.Expires.UnixMilli()
	}
	return ti
}

// ScramFromProto converts a mechanism; UNSPECIFIED is auth.ScramUnknown.
func ScramFromProto(m floev1.ScramMechanism) (auth.ScramMechanism, error) {
	return enumFromProto[floev1.ScramMechanism, auth.ScramMechanism](m, floev1.ScramMechanism_SCRAM_SHA_512, "SCRAM mechanism")
}

// ScramToProto converts a mechanism.
func ScramToProto(m auth.ScramMechanism) floev1.ScramMechanism { return floev1.ScramMechanism(m) }

// enumFromProto converts one enumeration, refusing a number past last.
func enumFromProto[P ~int32, A ~int8](p P, last P, what string) (A, error) {
	if p < 0 || p > last {
		return 0, fmt.Errorf("%w: unknown %s %d", auth.ErrInvalid, what, p)
	}
	return A(p), nil
}

// ACLFromProto converts an ACL (not validated: see auth.ACL.Validate).
func ACLFromProto(p *floev1.Acl) (auth.ACL, error) {
	f, err := FilterFromProto(&floev1.AclFilter{Principal: p.GetPrincipal(), ResourceType: p.GetResourceType(),
		PatternType: p.GetPatternType(), Name: p.GetName(), Operation: p.GetOperation(), Permission: p.GetPermission()})
	if err != nil {
		return auth.ACL{}, err
	}
	return auth.ACL{Principal: f.Principal, Host: p.GetHost(), Resource: f.Resource, Pattern: f.Pattern, Name: f.Name,
		Operation: f.Operation, Permission: f.Permission}, nil
}

// FilterFromProto converts a filter; a nil one selects everything.
func FilterFromProto(p *floev1.AclFilter) (auth.ACLFilter, error) {
	rt, err1 := enumFromProto[floev1.AclResourceType, auth.ResourceType](p.GetResourceType(), floev1.AclResourceType_ACL_RESOURCE_TYPE_TRANSACTIONAL_ID, "resource_type")
	pt, err2 := enumFromProto[floev1.AclPatternType, auth.PatternType](p.GetPatternType(), floev1.AclPatternType_ACL_PATTERN_TYPE_PREFIXED, "pattern_type")
	op, err3 := enumFromProto[floev1.AclOperation, auth.Operation](p.GetOperation(), floev1.AclOperation_ACL_OPERATION_ALTER_CONFIGS, "operation")
	perm, err4 := enumFromProto[floev1.AclPermission, auth.Permission](p.GetPermission(), floev1.AclPermission_ACL_PERMISSION_DENY, "permission")
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return auth.ACLFilter{}, err
		}
	}
	return auth.ACLFilter{Principal: p.GetPrincipal(), Resource: rt, Pattern: pt, Name: p.GetName(), Operation: op, Permission: perm}, nil
}

// FilterToProto converts a filter.
func FilterToProto(f auth.ACLFilter) *floev1.AclFilter {
	return &floev1.AclFilter{Principal: f.Principal, ResourceType: floev1.AclResourceType(f.Resource),
		PatternType: floev1.AclPatternType(f.Pattern), Name: f.Name, Operation: floev1.AclOperation(f.Operation),
		Permission: floev1.AclPermission(f.Permission)}
}

// ACLToProto converts an ACL.
func ACLToProto(a auth.ACL) *floev1.Acl {
	return &floev1.Acl{Principal: a.Principal, Host: a.Host, ResourceType: floev1.AclResourceType(a.Resource),
		PatternType: floev1.AclPatternType(a.Pattern), Name: a.Name, Operation: floev1.AclOperation(a.Operation),
		Permission: floev1.AclPermission(a.Permission)}
}

// ACLsToProto converts ACLs.
func ACLsToProto(acls []auth.ACL) []*floev1.Acl {
	out := make([]*floev1.Acl, len(acls))
	for i, a := range acls {
		out[i] = ACLToProto(a)
	}
	return out
}
