// Package auth owns who a caller is and what it may do: principals, the ACL
// rule (Authorize), bearer tokens and SASL/SCRAM credentials. It holds no
// state of its own: the metadata store keeps tokens, credentials and ACLs;
// listeners (gRPC, HTTP, Kafka) turn a connection into a Principal and ask
// an Authorizer before they touch data.
//
// The model is Kafka's: a principal "User:NAME"; resources of a type (topic,
// group, cluster, transactional id) named literally or by prefix;
// operations; allow and deny entries, deny winning; superusers from
// configuration bypass the ACLs.
package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrUnauthenticated: the caller presented no credential, or one that
	// does not verify (unknown, wrong, expired, revoked).
	ErrUnauthenticated = errors.New("auth: unauthenticated")
	// ErrDenied: the principal is known but no ACL allows the operation, or
	// one denies it.
	ErrDenied = errors.New("auth: permission denied")
	// ErrNotFound: no token, credential or ACL of that name.
	ErrNotFound = errors.New("auth: not found")
	// ErrInvalid: a malformed ACL, token, credential or principal.
	ErrInvalid = errors.New("auth: invalid")
)

// PrincipalPrefix is the type every floe principal carries, as in Kafka.
const PrincipalPrefix = "User:"

// Anonymous is the principal of a caller that presented nothing; with
// authentication on it is refused before any ACL is consulted.
var Anonymous = Principal{Name: "ANONYMOUS"}

// Principal is an authenticated identity.
type Principal struct {
	// Name is the user name without the "User:" prefix.
	Name string
}

// String is the Kafka form, "User:NAME".
func (p Principal) String() string { return PrincipalPrefix + p.Name }

// ParsePrincipal accepts "User:NAME" (or "User:*" in an ACL).
func ParsePrincipal(s string) (Principal, error) {
	name, ok := strings.CutPrefix(s, PrincipalPrefix)
	if !ok || name == "" || len(name) > 255 {
		return Principal{}, fmt.Errorf("%w: principal %q must be User:NAME (1 to 255 characters)", ErrInvalid, s)
	}
	return Principal{Name: name}, nil
}

// ResourceType is what an ACL guards.
type ResourceType int8

const (
	ResourceUnknown ResourceType = iota
	ResourceTopic
	ResourceGroup
	ResourceCluster
	ResourceTransactionalID
)

// ClusterName is the one cluster resource's name, as in Kafka.
const ClusterName = "kafka-cluster"

// PatternType says how an ACL's resource name matches.
type PatternType int8

const (
	PatternUnknown PatternType = iota
	// PatternLiteral matches the name exactly; the name "*" matches every
	// resource of the type.
	PatternLiteral
	// PatternPrefixed matches every name that starts with the ACL's name.
	PatternPrefixed
)

// Operation is what a caller wants to do.
type Operation int8

const (
	OpUnknown Operation = iota
	OpAll               // in an ACL only: every operation
	OpRead
	OpWrite
	OpCreate
	OpDelete
	OpAlter
	OpDescribe
	OpDescribeConfigs
	OpAlterConfigs
)

// Permission is an ACL entry's verdict.
type Permission int8

const (
	PermissionUnknown Permission = iota
	Allow
	Deny
)

// Resource names one thing an operation touches.
type Resource struct {
	Type ResourceType
	Name string
}

// Topic, Group and Cluster build resources.
func Topic(name string) Resource { return Resource{Type: ResourceTopic, Name: name} }
func Group(name string) Resource { return Resource{Type: ResourceGroup, Name: name} }
func Cluster() Resource          { return Resource{Type: ResourceCluster, Name: ClusterName} }

// ACL is one entry. Principal is "User:NAME" or "User:*"; Host is "*"
// (floe does not filter by host yet; stored for Kafka's DescribeAcls).
type ACL struct {
	Principal  string
	Host       string
	Resource   ResourceType
	Pattern    PatternType
	Name       string
	Operation  Operation
	Permission Permission
}

// Decision is the ACL rule's answer and why, for the denial log.
type Decision struct {
	Allowed bool
	// Reason names the entry or rule that decided ("superuser", "deny
	// User:bob TOPIC prefixed orders READ", "no matching allow").
	Reason string
}

// Authorizer answers whether a principal may perform op on res. Agents hold
// one backed by a cache of the store's ACLs.
type Authorizer interface {
	Authorize(p Principal, op Operation, res Resource) Decision
}

// Token is a bearer token's stored form: the secret itself is never stored,
// only its hash.
type Token struct {
	ID        string // public part, shown by `floe token list`
	Principal string // "User:NAME"
	Hash      []byte // SHA-256 of the secret part
	Created   time.Time
	Expires   time.Time // zero: never
	Revoked   bool
}

// ScramMechanism names a SCRAM hash.
type ScramMechanism int8

const (
	ScramUnknown ScramMechanism = iota
	ScramSHA256
	ScramSHA512
)

// ScramCredential is what the store keeps for one user and mechanism
// (RFC 5802): never the password.
type ScramCredential struct {
	User       string // without "User:"
	Mechanism  ScramMechanism
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// ACLFilter selects ACLs to list or delete; zero fields match anything.
type ACLFilter struct {
	Principal  string
	Resource   ResourceType
	Pattern    PatternType // PatternUnknown: any
	Name       string
	Operation  Operation
	Permission Permission
}

// Store is the durable state auth needs; the metadata stores implement it.
type Store interface {
	CreateToken(ctx context.Context, t Token) error
	// Token returns the token with that id (ErrNotFound if none).
	Token(ctx context.Context, id string) (Token, error)
	ListTokens(ctx context.Context) ([]Token, error)
	RevokeToken(ctx context.Context, id string) error

	PutScramCredential(ctx context.Context, c ScramCredential) error
	// ScramCredential returns ErrNotFound when the user has none for mech.
	ScramCredential(ctx context.Context, user string, mech ScramMechanism) (ScramCredential, error)
	ListScramCredentials(ctx context.Context) ([]ScramCredential, error)
	DeleteScramCredential(ctx context.Context, user string, mech ScramMechanism) error

	CreateACLs(ctx context.Context, acls []ACL) error
	ListACLs(ctx context.Context, f ACLFilter) ([]ACL, error)
	// DeleteACLs removes every ACL matching f and returns them.
	DeleteACLs(ctx context.Context, f ACLFilter) ([]ACL, error)
}
