package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeAcls: v0 to v3. DESCRIBE on the cluster (authz.go).
//
// The store's ACLs matching the filter (ANY fields match anything;
// MATCH, the ACLs applying to the named resource), grouped by resource as
// Kafka answers. A filter floe cannot read is INVALID_REQUEST; without a
// store, SECURITY_DISABLED.

func init() { register(kmsg.DescribeACLs, 0, 3, async(describeACLs)) }

func describeACLs(ctx context.Context, s *Server, _ *conn, req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.opts.ACLs == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return resp
	}
	f, match, err := aclFilterOf(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	acls, err := s.opts.ACLs.ListACLs(ctx, f)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	type key struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	index := map[key]int{}
	for _, a := range acls {
		if match != "" && !matchesName(a, match) {
			continue
		}
		k := key{kafkaResources[a.Resource], a.Name, kafkaPatterns[a.Pattern]}
		i, ok := index[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = k.rt, k.name, k.pt
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			index[k] = i
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kafkaOperations[a.Operation], kafkaPermissions[a.Permission]
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return resp
}
