package kafka

import (
	"context"
	"crypto/hmac"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// AlterUserScramCredentials: v0. ALTER on the cluster (authz.go).
//
// Deletions remove a user's credential of one mechanism; upsertions store
// one from the client's salted password (SaltedPassword = Hi(password,
// salt, iterations), as kafka-configs and kadm send it): floe keeps only
// StoredKey and ServerKey. One result per user; a user both deleted and
// upserted, or named twice, is DUPLICATE_RESOURCE; fewer than 4096
// iterations UNACCEPTABLE_CREDENTIAL; an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM; deleting what does not exist
// RESOURCE_NOT_FOUND; without a store, SECURITY_DISABLED.

func init() { register(kmsg.AlterUserSCRAMCredentials, 0, 0, async(alterUserSCRAM)) }

func alterUserSCRAM(ctx context.Context, s *Server, _ *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]int{}
	for _, d := range req.Deletions {
		seen[d.Name]++
	}
	for _, u := range req.Upsertions {
		seen[u.Name]++
	}
	// One result per user, in the order users first appear.
	index := map[string]int{}
	for _, name := range append(deletionNames(req), upsertionNames(req)...) {
		if _, ok := index[name]; !ok {
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User = name
			index[name] = len(resp.Results)
			resp.Results = append(resp.Results, r)
		}
	}
	fail := func(user string, code int16, msg string) {
		r := &resp.Results[index[user]]
		r.ErrorCode, r.ErrorMessage = code, kmsg.StringPtr(msg)
	}
	for _, d := range req.Deletions {
		mech := auth.ScramMechanism(d.Mechanism)
		switch {
		case s.opts.ACLs == nil:
			fail(d.Name, kerr.SecurityDisabled.Code, "floe has no credential store here")
		case seen[d.Name] > 1:
			fail(d.Name, kerr.DuplicateResource.Code, "user named more than once")
		case mech.New() == nil:
			fail(d.Name, kerr.UnsupportedSaslMechanism.Code, "mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512")
		default:
			if err := s.opts.ACLs.DeleteScramCredential(ctx, d.Name, mech); err != nil {
				fail(d.Name, scramError(err), err.Error())
			}
		}
	}
	for _, u := range req.Upsertions {
		mech := auth.ScramMechanism(u.Mechanism)
		switch {
		case s.opts.ACLs == nil:
			fail(u.Name, kerr.SecurityDisabled.Code, "floe has no credential store here")
		case seen[u.Name] > 1:
			fail(u.Name, kerr.DuplicateResource.Code, "user named more than once")
		case mech.New() == nil:
			fail(u.Name, kerr.UnsupportedSaslMechanism.Code, "mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512")
		case u.Iterations < auth.MinScramIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "iterations must be at least 4096")
		case u.Name == "" || len(u.Name) > 255 || len(u.Salt) == 0 || len(u.SaltedPassword) != mech.New()().Size():
			fail(u.Name, kerr.UnacceptableCredential.Code, "user, salt and a salted password of the mechanism's size are required")
		default:
			if err := s.opts.ACLs.PutScramCredential(ctx, credentialFromSalted(u, mech)); err != nil {
				fail(u.Name, scramError(err), err.Error())
			}
		}
	}
	return resp
}

// credentialFromSalted is RFC 5802's StoredKey = H(HMAC(salted, "Client
// Key")) and ServerKey = HMAC(salted, "Server Key").
func credentialFromSalted(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion, mech auth.ScramMechanism) auth.ScramCredential {
	h := mech.New()
	ck := hmac.New(h, u.SaltedPassword)
	ck.Write([]byte("Client Key"))
	sum := h()
	sum.Write(ck.Sum(nil))
	sk := hmac.New(h, u.SaltedPassword)
	sk.Write([]byte("Server Key"))
	return auth.ScramCredential{User: u.Name, Mechanism: mech, Salt: u.Salt, Iterations: int(u.Iterations),
		StoredKey: sum.Sum(nil), ServerKey: sk.Sum(nil)}
}

func deletionNames(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var out []string
	for _, d := range req.Deletions {
		out = append(out, d.Name)
	}
	return out
}

func upsertionNames(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var out []string
	for _, u := range req.Upsertions {
		out = append(out, u.Name)
	}
	return out
}
