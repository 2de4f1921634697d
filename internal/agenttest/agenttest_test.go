package agenttest_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartLocal: the agent answers its client (a topic created, a record
// produced is fetched back at offset 0), and everything it started is
// stopped when the test ends (goleak in TestMain).
func TestStartLocal(t *testing.T) {
	a := agenttest.StartLocal(t, agenttest.Default())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Client.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := a.Client.Produce(ctx, "t", 0, client.Value(nil, []byte("v")))
	if err != nil {
		t.Fatal(err)
	}
	if offs := resp.GetOffsets(); len(offs) != 1 || offs[0] != 0 {
		t.Fatalf("first produce at offsets %v, want [0]", offs)
	}
	got, err := a.Client.Fetch(ctx, "t", 0, 0, 1<<20, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetRecords()) != 1 || string(got.GetRecords()[0].GetValue()) != "v" {
		t.Fatalf("fetch: %v, want the record produced", got)
	}
}
