// Package authrow converts the auth package's values to and from the rows
// both metadata stores keep (enumerations by name), and the ACL filter to
// the arguments of their shared WHERE clause (FilterWhere), so that the two
// stores select alike and as auth.ACLFilter.Matches does.
package authrow

import (
	"fmt"

	"github.com/floe-broker/floe/auth"
)

// FilterWhere is the WHERE clause of an ACL filter over the acls table,
// with numbered parameters $1..$6 (PostgreSQL; SQLite reads them as ?NNN
// once "$" is replaced) bound to FilterArgs: an empty argument matches
// anything.
const FilterWhere = `($1 = '' OR principal = $1) AND ($2 = '' OR resource_type = $2) AND
	($3 = '' OR pattern_type = $3) AND ($4 = '' OR name = $4) AND
	($5 = '' OR operation = $5) AND ($6 = '' OR permission = $6)`

// ACLColumns are the acls table's columns in the order of Values and Scan.
const ACLColumns = "principal, host, resource_type, pattern_type, name, operation, permission"

// FilterArgs returns f's arguments for FilterWhere.
func FilterArgs(f auth.ACLFilter) []any {
	return []any{f.Principal, resourceName(f.Resource), patternName(f.Pattern), f.Name, operationName(f.Operation), permissionName(f.Permission)}
}

// Values returns a's column values, in ACLColumns' order.
func Values(a auth.ACL) []any {
	a = a.Normalize()
	return []any{a.Principal, a.Host, a.Resource.String(), a.Pattern.String(), a.Name, a.Operation.String(), a.Permission.String()}
}

// Row is an acls row as read.
type Row struct {
	Principal, Host, Resource, Pattern, Name, Operation, Permission string
}

// Dest returns the scan destinations of r, in ACLColumns' order.
func (r *Row) Dest() []any {
	return []any{&r.Principal, &r.Host, &r.Resource, &r.Pattern, &r.Name, &r.Operation, &r.Permission}
}

// ACL converts the row back; a name no release wrote is an error.
func (r *Row) ACL() (auth.ACL, error) {
	rt, err1 := auth.ParseResourceType(r.Resource)
	pt, err2 := auth.ParsePatternType(r.Pattern)
	op, err3 := auth.ParseOperation(r.Operation)
	perm, err4 := auth.ParsePermission(r.Permission)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return auth.ACL{}, fmt.Errorf("metadata: acls row: %w", err)
		}
	}
	return auth.ACL{Principal: r.Principal, Host: r.Host, Resource: rt, Pattern: pt, Name: r.Name, Operation: op, Permission: perm}, nil
}

// Mechanism parses a stored SCRAM mechanism.
func Mechanism(s string) (auth.ScramMechanism, error) {
	m, err := auth.ParseScramMechanism(s)
	if err != nil {
		return 0, fmt.Errorf("metadata: scram_credentials row: %w", err)
	}
	return m, nil
}

// ValidateACLs checks and normalises ACLs to create.
func ValidateACLs(acls []auth.ACL) ([]auth.ACL, error) {
	out := make([]auth.ACL, len(acls))
	for i, a := range acls {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		out[i] = a.Normalize()
	}
	return out, nil
}

func resourceName(t auth.ResourceType) string {
	if t == auth.ResourceUnknown {
		return ""
	}
	return t.String()
}

func patternName(t auth.PatternType) string {
	if t == auth.PatternUnknown {
		return ""
	}
	return t.String()
}

func operationName(o auth.Operation) string {
	if o == auth.OpUnknown {
		return ""
	}
	return o.String()
}

func permissionName(p auth.Permission) string {
	if p == auth.PermissionUnknown {
		return ""
	}
	return p.String()
}
