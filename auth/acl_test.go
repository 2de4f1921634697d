package auth

import (
	"strings"
	"testing"
)

func acl(perm Permission, principal string, rt ResourceType, pt PatternType, name string, op Operation) ACL {
	return ACL{Principal: principal, Host: "*", Resource: rt, Pattern: pt, Name: name, Operation: op, Permission: perm}
}

func TestAuthorize(t *testing.T) {
	alice, bob := Principal{Name: "alice"}, Principal{Name: "bob"}
	supers := []string{"User:admin"}
	tests := []struct {
		name   string
		acls   []ACL
		p      Principal
		op     Operation
		res    Resource
		allow  bool
		reason string // a substring of the decision's reason
	}{
		{"nothing matching denies", nil, alice, OpRead, Topic("t"), false, "no ACL"},
		{"literal allow", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t"), true, "allow User:alice"},
		{"literal is exact", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t2"), false, "no ACL"},
		{"other principal", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, bob, OpRead, Topic("t"), false, "no ACL"},
		{"other operation", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpWrite, Topic("t"), false, "no ACL"},
		{"other resource type, same name", []ACL{acl(Allow, "User:alice", ResourceGroup, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t"), false, "no ACL"},
		{"literal * matches every name", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "*", OpRead)}, alice, OpRead, Topic("anything"), true, "allow"},
		{"prefixed matches the prefix", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternPrefixed, "orders.", OpRead)}, alice, OpRead, Topic("orders.eu"), true, "prefixed"},
		{"prefixed matches the name itself", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternPrefixed, "orders", OpRead)}, alice, OpRead, Topic("orders"), true, "prefixed"},
		{"prefixed does not match a shorter name", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternPrefixed, "orders.", OpRead)}, alice, OpRead, Topic("orders"), false, "no ACL"},
		{"prefixed * is a literal prefix", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternPrefixed, "*", OpRead)}, alice, OpRead, Topic("t"), false, "no ACL"},
		{"User:* matches everyone", []ACL{acl(Allow, "User:*", ResourceTopic, PatternLiteral, "t", OpRead)}, bob, OpRead, Topic("t"), true, "User:*"},
		{"deny wins over allow", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead),
			acl(Deny, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t"), false, "deny"},
		{"deny wins whatever the order", []ACL{
			acl(Deny, "User:alice", ResourceTopic, PatternPrefixed, "t", OpRead),
			acl(Allow, "User:*", ResourceTopic, PatternLiteral, "*", OpAll)}, alice, OpRead, Topic("t1"), false, "deny"},
		{"deny User:* covers a named allow", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpWrite),
			acl(Deny, "User:*", ResourceTopic, PatternLiteral, "t", OpWrite)}, alice, OpWrite, Topic("t"), false, "deny User:*"},
		{"deny ALL denies every operation", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpDescribe),
			acl(Deny, "User:alice", ResourceTopic, PatternLiteral, "t", OpAll)}, alice, OpDescribe, Topic("t"), false, "deny"},
		{"deny of another operation leaves the allow", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead),
			acl(Deny, "User:alice", ResourceTopic, PatternLiteral, "t", OpWrite)}, alice, OpRead, Topic("t"), true, "allow"},
		{"deny READ does not deny the DESCRIBE it implies", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpDescribe),
			acl(Deny, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpDescribe, Topic("t"), true, "allow"},
		{"deny DESCRIBE denies it despite an allow READ", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead),
			acl(Deny, "User:alice", ResourceTopic, PatternLiteral, "t", OpDescribe)}, alice, OpDescribe, Topic("t"), false, "deny"},
		{"deny of another principal leaves the allow", []ACL{
			acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead),
			acl(Deny, "User:bob", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t"), true, "allow"},
		{"ALL grants anything", []ACL{acl(Allow, "User:alice", ResourceGroup, PatternLiteral, "g", OpAll)}, alice, OpDelete, Group("g"), true, "ALL"},
		{"READ implies DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpDescribe, Topic("t"), true, "READ"},
		{"WRITE implies DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpWrite)}, alice, OpDescribe, Topic("t"), true, "WRITE"},
		{"DELETE implies DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpDelete)}, alice, OpDescribe, Topic("t"), true, "DELETE"},
		{"ALTER implies DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpAlter)}, alice, OpDescribe, Topic("t"), true, "ALTER"},
		{"CREATE does not imply DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpCreate)}, alice, OpDescribe, Topic("t"), false, "no ACL"},
		{"DESCRIBE does not imply READ", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpDescribe)}, alice, OpRead, Topic("t"), false, "no ACL"},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpAlterConfigs)}, alice, OpDescribeConfigs, Topic("t"), true, "ALTER_CONFIGS"},
		{"ALTER does not imply ALTER_CONFIGS", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpAlter)}, alice, OpAlterConfigs, Topic("t"), false, "no ACL"},
		{"DESCRIBE_CONFIGS does not imply DESCRIBE", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpDescribeConfigs)}, alice, OpDescribe, Topic("t"), false, "no ACL"},
		{"cluster ALTER", []ACL{acl(Allow, "User:alice", ResourceCluster, PatternLiteral, ClusterName, OpAlter)}, alice, OpAlter, Cluster(), true, "CLUSTER"},
		{"a topic ACL says nothing of the cluster", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "*", OpAll)}, alice, OpAlter, Cluster(), false, "no ACL"},
		{"superuser without any ACL", nil, Principal{Name: "admin"}, OpDelete, Topic("t"), true, "superuser"},
		{"superuser despite a deny", []ACL{acl(Deny, "User:admin", ResourceTopic, PatternLiteral, "t", OpAll)}, Principal{Name: "admin"}, OpDelete, Topic("t"), true, "superuser"},
		{"superuser names are exact", nil, Principal{Name: "admin2"}, OpRead, Topic("t"), false, "no ACL"},
		{"anonymous matches User:*", []ACL{acl(Allow, "User:*", ResourceTopic, PatternLiteral, "t", OpRead)}, Anonymous, OpRead, Topic("t"), true, "User:*"},
		{"unknown permission is ignored", []ACL{acl(PermissionUnknown, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)}, alice, OpRead, Topic("t"), false, "no ACL"},
		{"unknown pattern matches nothing", []ACL{acl(Allow, "User:alice", ResourceTopic, PatternUnknown, "t", OpRead)}, alice, OpRead, Topic("t"), false, "no ACL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Authorize(tc.acls, supers, tc.p, tc.op, tc.res)
			if d.Allowed != tc.allow || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("Authorize(%s %s %s %q) = %+v, want allowed=%v with a reason containing %q",
					tc.p, tc.op, tc.res.Type, tc.res.Name, d, tc.allow, tc.reason)
			}
		})
	}
}

func TestACLValidate(t *testing.T) {
	good := acl(Allow, "User:alice", ResourceTopic, PatternLiteral, "t", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(a *ACL){
		"principal without User:": func(a *ACL) { a.Principal = "alice" },
		"empty principal name":    func(a *ACL) { a.Principal = "User:" },
		"host":                    func(a *ACL) { a.Host = "10.0.0.1" },
		"resource type":           func(a *ACL) { a.Resource = ResourceUnknown },
		"pattern":                 func(a *ACL) { a.Pattern = PatternUnknown },
		"operation":               func(a *ACL) { a.Operation = OpUnknown },
		"permission":              func(a *ACL) { a.Permission = PermissionUnknown },
		"empty name":              func(a *ACL) { a.Name = "" },
		"long name":               func(a *ACL) { a.Name = strings.Repeat("x", MaxResourceNameLen+1) },
		"cluster name":            func(a *ACL) { a.Resource, a.Name = ResourceCluster, "c" },
		"prefixed *":              func(a *ACL) { a.Pattern, a.Name = PatternPrefixed, "*" },
	}
	for name, mutate := range bad {
		a := good
		mutate(&a)
		if err := a.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, a)
		}
	}
	ok := good
	ok.Principal, ok.Host = "User:*", ""
	if err := ok.Validate(); err != nil {
		t.Errorf("User:* with no host: %v", err)
	}
}

func TestParseNames(t *testing.T) {
	for o := OpAll; o <= OpAlterConfigs; o++ {
		for _, s := range []string{o.String(), strings.ToLower(o.String()), strings.ReplaceAll(strings.ToLower(o.String()), "_", "-")} {
			if got, err := ParseOperation(s); err != nil || got != o {
				t.Errorf("ParseOperation(%q) = %v, %v", s, got, err)
			}
		}
	}
	for r := ResourceTopic; r <= ResourceTransactionalID; r++ {
		if got, err := ParseResourceType(strings.ToLower(r.String())); err != nil || got != r {
			t.Errorf("ParseResourceType(%q) = %v, %v", r, got, err)
		}
	}
	for _, bad := range []string{"", "UNKNOWN", "reed"} {
		if _, err := ParseOperation(bad); err == nil {
			t.Errorf("ParseOperation(%q) accepted", bad)
		}
		if _, err := ParseResourceType(bad); err == nil {
			t.Errorf("ParseResourceType(%q) accepted", bad)
		}
	}
	if p, err := ParsePatternType("PREFIXED"); err != nil || p != PatternPrefixed {
		t.Errorf("ParsePatternType: %v %v", p, err)
	}
	if p, err := ParsePermission("Deny"); err != nil || p != Deny {
		t.Errorf("ParsePermission: %v %v", p, err)
	}
}

func TestACLFilterMatches(t *testing.T) {
	a := acl(Deny, "User:alice", ResourceGroup, PatternPrefixed, "g", OpRead)
	yes := []ACLFilter{{}, {Principal: "User:alice"}, {Resource: ResourceGroup, Name: "g"}, {Pattern: PatternPrefixed, Operation: OpRead, Permission: Deny}}
	no := []ACLFilter{{Principal: "User:bob"}, {Resource: ResourceTopic}, {Pattern: PatternLiteral}, {Name: "g2"}, {Operation: OpAll}, {Permission: Allow}}
	for _, f := range yes {
		if !f.Matches(a) {
			t.Errorf("%+v does not match %s", f, a)
		}
	}
	for _, f := range no {
		if f.Matches(a) {
			t.Errorf("%+v matches %s", f, a)
		}
	}
}
