package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// Conversions between Kafka's ACL enums (kmsg) and package auth's, shared
// by CreateAcls, DescribeAcls and DeleteAcls. Kafka's ANY (in filters)
// is auth's zero value (matches anything).

var (
	aclResources = map[kmsg.ACLResourceType]auth.ResourceType{
		kmsg.ACLResourceTypeAny: auth.ResourceUnknown, kmsg.ACLResourceTypeTopic: auth.ResourceTopic,
		kmsg.ACLResourceTypeGroup: auth.ResourceGroup, kmsg.ACLResourceTypeCluster: auth.ResourceCluster,
		kmsg.ACLResourceTypeTransactionalId: auth.ResourceTransactionalID,
	}
	aclPatterns = map[kmsg.ACLResourcePatternType]auth.PatternType{
		kmsg.ACLResourcePatternTypeAny: auth.PatternUnknown, kmsg.ACLResourcePatternTypeLiteral: auth.PatternLiteral,
		kmsg.ACLResourcePatternTypePrefixed: auth.PatternPrefixed,
	}
	aclOperations = map[kmsg.ACLOperation]auth.Operation{
		kmsg.ACLOperationAny: auth.OpUnknown, kmsg.ACLOperationAll: auth.OpAll, kmsg.ACLOperationRead: auth.OpRead,
		kmsg.ACLOperationWrite: auth.OpWrite, kmsg.ACLOperationCreate: auth.OpCreate, kmsg.ACLOperationDelete: auth.OpDelete,
		kmsg.ACLOperationAlter: auth.OpAlter, kmsg.ACLOperationDescribe: auth.OpDescribe,
		kmsg.ACLOperationDescribeConfigs: auth.OpDescribeConfigs, kmsg.ACLOperationAlterConfigs: auth.OpAlterConfigs,
	}
	aclPermissions = map[kmsg.ACLPermissionType]auth.Permission{
		kmsg.ACLPermissionTypeAny: auth.PermissionUnknown, kmsg.ACLPermissionTypeAllow: auth.Allow, kmsg.ACLPermissionTypeDeny: auth.Deny,
	}
)

// reverse maps auth's values back to Kafka's.
func reverse[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

var (
	kafkaResources   = reverse(aclResources)
	kafkaPatterns    = reverse(aclPatterns)
	kafkaOperations  = reverse(aclOperations)
	kafkaPermissions = reverse(aclPermissions)
)

// aclOf is a creation as an ACL, or why it cannot be one: every field
// named (no ANY), the host "*", the principal User:NAME or User:*.
func aclOf(c kmsg.CreateACLsRequestCreation) (auth.ACL, error) {
	res, ok1 := aclResources[c.ResourceType]
	pat, ok2 := aclPatterns[c.ResourcePatternType]
	op, ok3 := aclOperations[c.Operation]
	perm, ok4 := aclPermissions[c.PermissionType]
	switch {
	case !ok1 || res == auth.ResourceUnknown:
		return auth.ACL{}, fmt.Errorf("resource type %v is not one floe keeps ACLs for", c.ResourceType)
	case !ok2 || pat == auth.PatternUnknown:
		return auth.ACL{}, fmt.Errorf("pattern type %v: want LITERAL or PREFIXED", c.ResourcePatternType)
	case !ok3 || op == auth.OpUnknown:
		return auth.ACL{}, fmt.Errorf("operation %v is not one floe checks", c.Operation)
	case !ok4 || perm == auth.PermissionUnknown:
		return auth.ACL{}, fmt.Errorf("permission %v: want ALLOW or DENY", c.PermissionType)
	case c.Host != "*":
		return auth.ACL{}, fmt.Errorf("host %q: floe does not filter by host, use *", c.Host)
	case c.ResourceName == "":
		return auth.ACL{}, fmt.Errorf("resource name must not be empty")
	case res == auth.ResourceCluster && c.ResourceName != auth.ClusterName:
		return auth.ACL{}, fmt.Errorf("cluster resource must be named %s", auth.ClusterName)
	}
	if _, err := auth.ParsePrincipal(c.Principal); err != nil {
		return auth.ACL{}, err
	}
	return auth.ACL{Principal: c.Principal, Host: "*", Resource: res, Pattern: pat, Name: c.ResourceName, Operation: op, Permission: perm}, nil
}

// aclFilterOf is a DescribeAcls or DeleteAcls filter as auth's, and
// match, set for Kafka's MATCH pattern type: the ACLs that apply to the
// named resource (literal, the literal "*", prefixes of it).
func aclFilterOf(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (f auth.ACLFilter, match string, err error) {
	var ok bool
	if f.Resource, ok = aclResources[rt]; !ok {
		return f, "", fmt.Errorf("resource type %v", rt)
	}
	if f.Operation, ok = aclOperations[op]; !ok {
		return f, "", fmt.Errorf("operation %v", op)
	}
	if f.Permission, ok = aclPermissions[perm]; !ok {
		return f, "", fmt.Errorf("permission %v", perm)
	}
	if host != nil && *host != "*" {
		return f, "", fmt.Errorf("host %q: floe keeps ACLs for host * only", *host)
	}
	if principal != nil {
		f.Principal = *principal
	}
	if pt == kmsg.ACLResourcePatternTypeMatch {
		if name == nil {
			return f, "", fmt.Errorf("pattern type MATCH needs a resource name")
		}
		return f, *name, nil
	}
	if f.Pattern, ok = aclPatterns[pt]; !ok {
		return f, "", fmt.Errorf("pattern type %v", pt)
	}
	if name != nil {
		f.Name = *name
	}
	return f, "", nil
}

// matchesName: Kafka's MATCH, whether a applies to a resource named name.
func matchesName(a auth.ACL, name string) bool {
	switch a.Pattern {
	case auth.PatternLiteral:
		return a.Name == name || a.Name == "*"
	case auth.PatternPrefixed:
		return len(name) >= len(a.Name) && name[:len(a.Name)] == a.Name
	}
	return false
}
