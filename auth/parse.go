package auth

import (
	"fmt"
	"strings"
)

// MaxResourceNameLen bounds an ACL's resource name (Kafka's topic limit is
// 249; group names are free-form, so the bound is looser).
const MaxResourceNameLen = 255

// Validate checks an ACL before it is stored: a principal User:NAME or
// User:*, host "*" (or empty, read as "*"), a known resource type, pattern,
// operation and permission, and a name: a cluster ACL names ClusterName,
// a prefixed one is not empty and not "*".
func (a ACL) Validate() error {
	if a.Principal != PrincipalPrefix+"*" {
		if _, err := ParsePrincipal(a.Principal); err != nil {
			return fmt.Errorf("%w: acl principal %q must be User:NAME or User:*", ErrInvalid, a.Principal)
		}
	}
	switch {
	case a.Host != "" && a.Host != "*":
		return fmt.Errorf("%w: acl host %q: only \"*\" is supported", ErrInvalid, a.Host)
	case a.Resource < ResourceTopic || a.Resource > ResourceTransactionalID:
		return fmt.Errorf("%w: acl resource type %d", ErrInvalid, a.Resource)
	case a.Pattern != PatternLiteral && a.Pattern != PatternPrefixed:
		return fmt.Errorf("%w: acl pattern type %d (want literal or prefixed)", ErrInvalid, a.Pattern)
	case a.Operation < OpAll || a.Operation > OpAlterConfigs:
		return fmt.Errorf("%w: acl operation %d", ErrInvalid, a.Operation)
	case a.Permission != Allow && a.Permission != Deny:
		return fmt.Errorf("%w: acl permission %d (want allow or deny)", ErrInvalid, a.Permission)
	case a.Name == "" || len(a.Name) > MaxResourceNameLen:
		return fmt.Errorf("%w: acl resource name %q must be 1 to %d bytes", ErrInvalid, a.Name, MaxResourceNameLen)
	case a.Resource == ResourceCluster && a.Name != ClusterName:
		return fmt.Errorf("%w: acl on the cluster must name %q, not %q", ErrInvalid, ClusterName, a.Name)
	case a.Pattern == PatternPrefixed && a.Name == "*":
		return fmt.Errorf("%w: acl resource name \"*\" is for literal patterns only", ErrInvalid)
	}
	return nil
}

// Normalize returns a with the defaults the store keeps: host "*".
func (a ACL) Normalize() ACL {
	if a.Host == "" {
		a.Host = "*"
	}
	return a
}

// Matches reports whether f selects a: zero fields of f match anything.
func (f ACLFilter) Matches(a ACL) bool {
	return (f.Principal == "" || f.Principal == a.Principal) &&
		(f.Resource == ResourceUnknown || f.Resource == a.Resource) &&
		(f.Pattern == PatternUnknown || f.Pattern == a.Pattern) &&
		(f.Name == "" || f.Name == a.Name) &&
		(f.Operation == OpUnknown || f.Operation == a.Operation) &&
		(f.Permission == PermissionUnknown || f.Permission == a.Permission)
}

// ParseOperation accepts an operation's name in any case, with "-" or "_"
// ("read", "DESCRIBE_CONFIGS", "describe-configs", "all").
func ParseOperation(s string) (Operation, error) {
	n := normalName(s)
	for o := OpAll; o <= OpAlterConfigs; o++ {
		if o.String() == n {
			return o, nil
		}
	}
	return OpUnknown, fmt.Errorf("%w: operation %q (want all, read, write, create, delete, alter, describe, describe_configs or alter_configs)", ErrInvalid, s)
}

// ParseResourceType accepts "topic", "group", "cluster" or
// "transactional_id", in any case.
func ParseResourceType(s string) (ResourceType, error) {
	n := normalName(s)
	for t := ResourceTopic; t <= ResourceTransactionalID; t++ {
		if t.String() == n {
			return t, nil
		}
	}
	return ResourceUnknown, fmt.Errorf("%w: resource type %q (want topic, group, cluster or transactional_id)", ErrInvalid, s)
}

// ParsePatternType accepts "literal" or "prefixed", in any case.
func ParsePatternType(s string) (PatternType, error) {
	switch strings.ToLower(s) {
	case "literal":
		return PatternLiteral, nil
	case "prefixed":
		return PatternPrefixed, nil
	}
	return PatternUnknown, fmt.Errorf("%w: pattern type %q (want literal or prefixed)", ErrInvalid, s)
}

// ParsePermission accepts "allow" or "deny", in any case.
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(s) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	}
	return PermissionUnknown, fmt.Errorf("%w: permission %q (want allow or deny)", ErrInvalid, s)
}

func normalName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

// Validate checks a token before it is stored.
func (t Token) Validate() error {
	if !ValidTokenID(t.ID) {
		return fmt.Errorf("%w: token id %q must be 16 lowercase hex digits", ErrInvalid, t.ID)
	}
	if _, err := ParsePrincipal(t.Principal); err != nil {
		return err
	}
	if len(t.Hash) != 32 {
		return fmt.Errorf("%w: token %s: hash of %d bytes, want a SHA-256", ErrInvalid, t.ID, len(t.Hash))
	}
	return nil
}

// MaxUserNameLen bounds a SCRAM user name (as a principal's name).
const MaxUserNameLen = 255

// Validate checks a SCRAM credential before it is stored: a user name, a
// known mechanism, Kafka's iteration floor, and keys of the hash's size.
func (c ScramCredential) Validate() error {
	h := c.Mechanism.New()
	switch {
	case c.User == "" || len(c.User) > MaxUserNameLen:
		return fmt.Errorf("%w: SCRAM user %q must be 1 to %d bytes", ErrInvalid, c.User, MaxUserNameLen)
	case h == nil:
		return fmt.Errorf("%w: SCRAM mechanism %d", ErrInvalid, c.Mechanism)
	case c.Iterations < MinScramIterations:
		return fmt.Errorf("%w: SCRAM iterations %d below %d", ErrInvalid, c.Iterations, MinScramIterations)
	case len(c.Salt) == 0:
		return fmt.Errorf("%w: SCRAM salt is empty", ErrInvalid)
	case len(c.StoredKey) != h().Size() || len(c.ServerKey) != h().Size():
		return fmt.Errorf("%w: SCRAM keys of %d and %d bytes, want %d for %s", ErrInvalid, len(c.StoredKey), len(c.ServerKey), h().Size(), c.Mechanism)
	}
	return nil
}
