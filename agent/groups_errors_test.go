package agent

import (
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/metadata"
)

// The group sentinels map to statuses a group client can act on, the
// fencing ones with a specific ErrorInfo reason.
func TestToStatusGroups(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("metadata: commit offsets: %w", err) }
	for _, tc := range []struct {
		err    error
		code   codes.Code
		reason string
	}{
		{wrap(metadata.ErrStaleMemberEpoch), codes.FailedPrecondition, ReasonStaleMemberEpoch},
		{wrap(metadata.ErrUnknownMember), codes.FailedPrecondition, ReasonUnknownMember},
		{wrap(metadata.ErrNotPartitionOwner), codes.FailedPrecondition, ReasonNotPartitionOwner},
		{wrap(metadata.ErrGroupNotEmpty), codes.FailedPrecondition, ReasonGroupNotEmpty},
		{wrap(metadata.ErrGroupNotFound), codes.NotFound, ""},
		{wrap(metadata.ErrInvalidGroup), codes.InvalidArgument, ""},
	} {
		st := status.Convert(toStatus(tc.err))
		var reason string
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == "floe" {
				reason = ei.GetReason()
			}
		}
		if st.Code() != tc.code || reason != tc.reason {
			t.Errorf("%v: %v %q, want %v %q", tc.err, st.Code(), reason, tc.code, tc.reason)
		}
	}
}
