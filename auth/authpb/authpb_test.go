package authpb

import (
	"errors"
	"strings"
	"testing"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// TestEnumsMatch: every proto value names the auth value of its number.
func TestEnumsMatch(t *testing.T) {
	norm := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	check := func(what string, names map[int32]string, prefix string, authName func(int32) string) {
		for n, name := range names {
			if n == 0 {
				continue
			}
			if got := prefix + norm(authName(n)); got != name {
				t.Errorf("%s %d: proto %s, auth %s", what, n, name, got)
			}
		}
		if got := authName(int32(len(names))); !strings.Contains(strings.ToUpper(got), "UNKNOWN") {
			t.Errorf("%s: auth has a value %d (%s) the proto lacks", what, len(names), got)
		}
	}
	check("resource type", floev1.AclResourceType_name, "ACL_RESOURCE_TYPE_", func(n int32) string { return auth.ResourceType(n).String() })
	check("pattern type", floev1.AclPatternType_name, "ACL_PATTERN_TYPE_", func(n int32) string { return auth.PatternType(n).String() })
	check("operation", floev1.AclOperation_name, "ACL_OPERATION_", func(n int32) string { return auth.Operation(n).String() })
	check("permission", floev1.AclPermission_name, "ACL_PERMISSION_", func(n int32) string { return auth.Permission(n).String() })
	check("mechanism", floev1.ScramMechanism_name, "", func(n int32) string { return auth.ScramMechanism(n).String() })
}

func TestRoundTrip(t *testing.T) {
	a := auth.ACL{Principal: "User:a", Host: "*", Resource: auth.ResourceGroup, Pattern: auth.PatternPrefixed, Name: "g",
		Operation: auth.OpDescribeConfigs, Permission: auth.Deny}
	got, err := ACLFromProto(ACLToProto(a))
	if err != nil || got != a {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	f := auth.ACLFilter{Principal: "User:*", Resource: auth.ResourceCluster, Operation: auth.OpAlter}
	if got, err := FilterFromProto(FilterToProto(f)); err != nil || got != f {
		t.Fatalf("filter round trip: %+v, %v", got, err)
	}
	if got, err := FilterFromProto(nil); err != nil || got != (auth.ACLFilter{}) {
		t.Fatalf("nil filter: %+v, %v", got, err)
	}
	for _, bad := range []*floev1.Acl{{ResourceType: 99}, {PatternType: -1}, {Operation: 10}, {Permission: 3}} {
		if _, err := ACLFromProto(bad); !errors.Is(err, auth.ErrInvalid) {
			t.Errorf("%v: %v, want auth.ErrInvalid", bad, err)
		}
	}
	if _, err := ScramFromProto(3); !errors.Is(err, auth.ErrInvalid) {
		t.Errorf("mechanism 3: %v", err)
	}
}
