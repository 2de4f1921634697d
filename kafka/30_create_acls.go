package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// CreateAcls: v0 to v3. ALTER on the cluster (authz.go).
//
// Each creation becomes one ACL in the store (Options.ACLs): resource
// TOPIC, GROUP, CLUSTER (named kafka-cluster) or TRANSACTIONAL_ID,
// pattern LITERAL or PREFIXED, host "*". A creation floe cannot keep is
// INVALID_REQUEST with a message; without a store, SECURITY_DISABLED.
// Agents see new ACLs once their cache refreshes.

func init() { register(kmsg.CreateACLs, 0, 3, async(createACLs)) }

func createACLs(ctx context.Context, s *Server, _ *conn, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for _, c := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		a, err := aclOf(c)
		switch {
		case s.opts.ACLs == nil:
			res.ErrorCode = kerr.SecurityDisabled.Code
		case err != nil:
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		default:
			if err := s.opts.ACLs.CreateACLs(ctx, []auth.ACL{a}); err != nil {
				res.ErrorCode, res.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
