package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/kbatch"
)

// batchError maps each kind of kbatch.Validate failure to the status and
// ErrorInfo reason a client acts on, naming the batch and its partition.
func TestBatchErrorTable(t *testing.T) {
	cfg := DefaultConfig()
	passed := status.Error(codes.InvalidArgument, "value does not match the schema")
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		md     map[string]string
	}{
		{"corrupt", fmt.Errorf("batch 0 at byte 0: %w: CRC 1, computed 2", kbatch.ErrCorrupt), codes.InvalidArgument, ReasonInvalidBatch,
			map[string]string{"batch": "3", "partition": "5"}},
		{"refused", fmt.Errorf("batch 0 at byte 0: %w: transactional batch", kbatch.ErrRefused), codes.InvalidArgument, ReasonInvalidBatch,
			map[string]string{"batch": "3", "partition": "5"}},
		{"record too large", fmt.Errorf("batch 0 at byte 0: %w: record 2 is 9 bytes", kbatch.ErrRecordTooLarge), codes.InvalidArgument, ReasonRecordTooLarge,
			map[string]string{"max_record_bytes": fmt.Sprint(cfg.MaxRecordBytes)}},
		{"too large", fmt.Errorf("batch 0 at byte 0: %w: over 9 bytes decompressed", kbatch.ErrTooLarge), codes.InvalidArgument, ReasonRequestTooLarge,
			map[string]string{"max_request_bytes": fmt.Sprint(cfg.MaxRequestBytes)}},
		{"status passes", passed, codes.InvalidArgument, "", nil},
	}
	for _, c := range cases {
		err := batchError(c.err, 3, 5, cfg)
		st := status.Convert(err)
		if st.Code() != c.code {
			t.Fatalf("%s: code %v", c.name, st.Code())
		}
		if c.reason == "" {
			if !errors.Is(err, passed) && err != passed {
				t.Fatalf("%s: %v, want the status as is", c.name, err)
			}
			continue
		}
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if ei, ok := d.(*errdetails.ErrorInfo); ok {
				info = ei
			}
		}
		if info == nil || info.GetReason() != c.reason || info.GetDomain() != errorDomain || fmt.Sprint(info.GetMetadata()) != fmt.Sprint(c.md) {
			t.Fatalf("%s: ErrorInfo %v, want %s %v", c.name, info, c.reason, c.md)
		}
		if !strings.Contains(st.Message(), "batch 3 (partition 5)") {
			t.Fatalf("%s: message %q does not name the batch", c.name, st.Message())
		}
	}
}
