package agent

import (
	"context"
	"math"
	"testing"
	"time"

	"golang.org/x/time/rate"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// TestReplayWaitChargesExactly: a read of a group reader at least
// ReplayMinLagRecords behind the head is charged exactly its records'
// bytes (keys, values, header keys and values) to the group's bucket, in
// pieces of at most the burst; a reader nearer the head, or without a
// budget, is charged nothing. The bucket here all but never refills
// (a token in 30 years), so what is left of it is exactly the burst less
// what was charged; a read it cannot pay fails at once on the context's
// deadline rather than hanging.
func TestReplayWaitChargesExactly(t *testing.T) {
	a := &Agent{cfg: Config{ReplayMinLagRecords: 100}}
	recs := []*floev1.Record{
		{Key: []byte("k1"), Value: make([]byte, 1000), Headers: []*floev1.Header{{Key: "h", Value: []byte("vv")}}},
		{Value: make([]byte, 500)},
		{Key: []byte{}, Value: nil},
	}
	const size = 2 + 1000 + 1 + 2 + 500
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		lag      int64
		burst    int
		wantLeft int
		wantErr  bool
	}{
		{"near the head", 99, 10_000, 10_000, false},
		{"at the threshold", 100, 10_000, 10_000 - size, false},
		{"far behind", 1 << 40, size, 0, false},
		{"the bucket short of the read", 1000, size - 1, size - 1, true},
	} {
		lim := rate.NewLimiter(rate.Every(1<<60), tc.burst)
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := a.replayWait(cctx, lim, tc.lag, recs)
		cancel()
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: replayWait = %v, want error %v", tc.name, err, tc.wantErr)
		}
		if got := int(math.Round(lim.Tokens())); !tc.wantErr && got != tc.wantLeft {
			t.Errorf("%s: %d of the bucket's %d left, want %d (a read of %d bytes)", tc.name, got, tc.burst, tc.wantLeft, size)
		}
	}
	if err := a.replayWait(ctx, nil, 1<<40, recs); err != nil {
		t.Errorf("no budget: %v", err)
	}
}
