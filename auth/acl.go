package auth

import "fmt"

// Authorize is the one ACL rule. Superusers may do anything. Otherwise a
// deny entry that matches wins over any allow; an allow that matches
// grants; nothing matching denies. As in Kafka, READ, WRITE, DELETE and
// ALTER on a resource imply DESCRIBE, and ALTER_CONFIGS implies
// DESCRIBE_CONFIGS; ALL in an entry matches every operation.
func Authorize(acls []ACL, superusers []string, p Principal, op Operation, res Resource) Decision {
	ps := p.String()
	for _, s := range superusers {
		if s == ps {
			return Decision{Allowed: true, Reason: "superuser"}
		}
	}
	var allow *ACL
	for i := range acls {
		a := &acls[i]
		if !principalMatches(a.Principal, ps) || !resourceMatches(a, res) {
			continue
		}
		switch a.Permission {
		case Deny:
			if a.Operation == op || a.Operation == OpAll {
				return Decision{Reason: "denied by " + a.String()}
			}
		case Allow:
			if allow == nil && grants(a.Operation, op) {
				allow = a
			}
		}
	}
	if allow != nil {
		return Decision{Allowed: true, Reason: "allowed by " + allow.String()}
	}
	return Decision{Reason: "no ACL allows it"}
}

func principalMatches(acl, p string) bool { return acl == p || acl == PrincipalPrefix+"*" }

func resourceMatches(a *ACL, r Resource) bool {
	if a.Resource != r.Type {
		return false
	}
	switch a.Pattern {
	case PatternLiteral:
		return a.Name == r.Name || a.Name == "*"
	case PatternPrefixed:
		return len(r.Name) >= len(a.Name) && r.Name[:len(a.Name)] == a.Name
	}
	return false
}

// grants reports whether an allow entry for have permits want.
func grants(have, want Operation) bool {
	switch {
	case have == want, have == OpAll:
		return true
	case want == OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case want == OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// String is a one-line form for logs: "allow User:alice TOPIC literal orders READ".
func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s %s %q %s", a.Permission, a.Principal, a.Resource, a.Pattern, a.Name, a.Operation)
}

func (p Permission) String() string {
	switch p {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "unknown"
}

func (t ResourceType) String() string {
	switch t {
	case ResourceTopic:
		return "TOPIC"
	case ResourceGroup:
		return "GROUP"
	case ResourceCluster:
		return "CLUSTER"
	case ResourceTransactionalID:
		return "TRANSACTIONAL_ID"
	}
	return "UNKNOWN"
}

func (t PatternType) String() string {
	switch t {
	case PatternLiteral:
		return "literal"
	case PatternPrefixed:
		return "prefixed"
	}
	return "unknown"
}

func (o Operation) String() string {
	switch o {
	case OpAll:
		return "ALL"
	case OpRead:
		return "READ"
	case OpWrite:
		return "WRITE"
	case OpCreate:
		return "CREATE"
	case OpDelete:
		return "DELETE"
	case OpAlter:
		return "ALTER"
	case OpDescribe:
		return "DESCRIBE"
	case OpDescribeConfigs:
		return "DESCRIBE_CONFIGS"
	case OpAlterConfigs:
		return "ALTER_CONFIGS"
	}
	return "UNKNOWN"
}
