package agent_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/objectstore"
)

// TestProduceAnsweredWhenPostgresHangs: with the real PostgreSQL paused
// (SIGSTOP: connections open, no answers), a producer is answered within
// the batcher's deadlines (Linger + UploadTimeout + CommitTimeout; the
// client waits longer than that, so an answer that does not come is its
// own deadline, a failure here) with a status it can act on: the commit's
// outcome unknown (Unknown, OUTCOME_UNKNOWN: the commit was sent and not
// answered), or, were it never sent, not committed (Unavailable,
// NOT_COMMITTED), in which case nothing of it is in the log once the
// server is back.
func TestProduceAnsweredWhenPostgresHangs(t *testing.T) {
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	bcfg.UploadTimeout, bcfg.CommitTimeout = 2*time.Second, 2*time.Second
	n := startNode(t, openPostgres(t, testenv.Postgres(t)), objectstore.NewMemory(), acfg, bcfg)
	ctx := context.Background()
	if _, err := n.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.Produce(ctx, "t", 0, client.Value(nil, []byte("before"))); err != nil {
		t.Fatal(err)
	}
	resume := testenv.PausePostgres(t)
	bound := bcfg.Linger + bcfg.UploadTimeout + bcfg.CommitTimeout
	pctx, cancel := context.WithTimeout(ctx, bound+5*time.Second)
	defer cancel()
	_, err := n.c.Produce(pctx, "t", 0, client.Value(nil, []byte("during")))
	if pctx.Err() != nil {
		t.Fatalf("no answer within the batcher's deadlines (%v) and the client's margin: %v", bound, err)
	}
	st := status.Convert(err)
	ei := errorInfo(err)
	switch {
	case st.Code() == codes.Unknown && ei != nil && ei.GetReason() == agent.ReasonOutcomeUnknown:
	case st.Code() == codes.Unavailable && ei != nil && ei.GetReason() == agent.ReasonNotCommitted:
	default:
		t.Fatalf("produce to a hung PostgreSQL: %v (%v), want Unknown/OUTCOME_UNKNOWN or Unavailable/NOT_COMMITTED", err, ei)
	}
	resume()
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	resp, err := n.c.Log.ListOffsets(rctx, &floev1.ListOffsetsRequest{Topic: "t", Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST})
	if err != nil {
		t.Fatalf("after the resume: %v", err)
	}
	hw := resp.GetOffsets()[0].GetOffset()
	if st.Code() == codes.Unavailable && hw != 1 {
		t.Fatalf("told not committed, yet the high watermark is %d after the resume, want 1", hw)
	}
	if hw != 1 && hw != 2 {
		t.Fatalf("high watermark %d after the resume, want 1 or 2", hw)
	}
	t.Logf("answered %v (%s); high watermark %d after the resume", st.Code(), ei.GetReason(), hw)
}
