package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// DeleteAcls: v0 to v3. ALTER on the cluster (authz.go).
//
// Each filter removes the store's ACLs it matches (as DescribeAcls
// selects them) and answers them. A filter floe cannot read is
// INVALID_REQUEST; without a store, SECURITY_DISABLED.

func init() { register(kmsg.DeleteACLs, 0, 3, async(deleteACLs)) }

func deleteACLs(ctx context.Context, s *Server, _ *conn, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for _, fl := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		resp.Results = append(resp.Results, deleteACLFilter(ctx, s, fl, res))
	}
	return resp
}

func deleteACLFilter(ctx context.Context, s *Server, fl kmsg.DeleteACLsRequestFilter, res kmsg.DeleteACLsResponseResult) kmsg.DeleteACLsResponseResult {
	if s.opts.ACLs == nil {
		res.ErrorCode = kerr.SecurityDisabled.Code
		return res
	}
	f, match, err := aclFilterOf(fl.ResourceType, fl.ResourceName, fl.ResourcePatternType, fl.Principal, fl.Host, fl.Operation, fl.PermissionType)
	if err != nil {
		res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return res
	}
	acls, err := deleteMatching(ctx, s.opts.ACLs, f, match)
	if err != nil {
		res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return res
	}
	for _, a := range acls {
		m := kmsg.NewDeleteACLsResponseResultMatchingACL()
		m.ResourceType, m.ResourceName, m.ResourcePatternType = kafkaResources[a.Resource], a.Name, kafkaPatterns[a.Pattern]
		m.Principal, m.Host = a.Principal, a.Host
		m.Operation, m.PermissionType = kafkaOperations[a.Operation], kafkaPermissions[a.Permission]
		res.MatchingACLs = append(res.MatchingACLs, m)
	}
	return res
}

// deleteMatching deletes the ACLs f selects (and, with match, that apply
// to the resource named match: each deleted by its exact filter).
func deleteMatching(ctx context.Context, st auth.Store, f auth.ACLFilter, match string) ([]auth.ACL, error) {
	if match == "" {
		return st.DeleteACLs(ctx, f)
	}
	acls, err := st.ListACLs(ctx, f)
	if err != nil {
		return nil, err
	}
	var gone []auth.ACL
	for _, a := range acls {
		if !matchesName(a, match) {
			continue
		}
		d, err := st.DeleteACLs(ctx, auth.ACLFilter{Principal: a.Principal, Resource: a.Resource, Pattern: a.Pattern,
			Name: a.Name, Operation: a.Operation, Permission: a.Permission})
		if err != nil {
			return gone, err
		}
		gone = append(gone, d...)
	}
	return gone, nil
}
