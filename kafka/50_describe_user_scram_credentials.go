package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// DescribeUserScramCredentials: v0. DESCRIBE on the cluster (authz.go).
//
// The mechanisms and iterations of each named user's stored credentials
// (no users named: every user's); never salts or keys. A user without any
// is RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE; without a
// store, SECURITY_DISABLED.

func init() { register(kmsg.DescribeUserSCRAMCredentials, 0, 0, async(describeUserSCRAM)) }

func describeUserSCRAM(ctx context.Context, s *Server, _ *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if s.opts.ACLs == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		return resp
	}
	creds, err := s.opts.ACLs.ListScramCredentials(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, kmsg.StringPtr(err.Error())
		return resp
	}
	byUser := map[string][]auth.ScramCredential{}
	var users []string
	for _, c := range creds {
		if byUser[c.User] == nil {
			users = append(users, c.User)
		}
		byUser[c.User] = append(byUser[c.User], c)
	}
	count := map[string]int{}
	if req.Users != nil {
		users = users[:0]
		for _, u := range req.Users {
			if count[u.Name]++; count[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case count[u] > 1:
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr("user named more than once")
		case len(byUser[u]) == 0:
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("no SCRAM credential for "+u)
		default:
			for _, c := range byUser[u] {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = int8(c.Mechanism), int32(c.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// scramError is the Kafka code of a credential store error.
func scramError(err error) int16 {
	switch {
	case errors.Is(err, auth.ErrNotFound):
		return kerr.ResourceNotFound.Code
	case errors.Is(err, auth.ErrInvalid):
		return kerr.UnacceptableCredential.Code
	}
	return kerr.UnknownServerError.Code
}
