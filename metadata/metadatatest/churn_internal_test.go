package metadatatest

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// stalled is a store whose stallAt-th heartbeat stalls for stall before
// it is handled: a loaded machine's pause (a descheduled test process, a
// slow disk), which leaves every other member unheard as long.
type stalled struct {
	metadata.Store
	calls   atomic.Int32
	stallAt int32
	stall   time.Duration
}

func (s *stalled) Heartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	if s.calls.Add(1) == s.stallAt {
		time.Sleep(s.stall)
	}
	return s.Store.Heartbeat(ctx, req)
}

// TestGroupChurnStalled: GroupChurn on a machine that stalls once for
// longer than its first session timeout (1.5 s) still passes: the run in
// which live members went unheard that long proves nothing (the store
// may rightly have expired them) and is run again with a longer session,
// instead of failing on the expiry (as it did under load on CI).
func TestGroupChurnStalled(t *testing.T) {
	inner, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	s := &stalled{Store: inner, stallAt: 60, stall: 2 * time.Second}
	testGroupChurn(t, s)
	if s.calls.Load() < s.stallAt {
		t.Fatalf("%d heartbeats: the stall at the %dth never came", s.calls.Load(), s.stallAt)
	}
}
