package agenttest_test

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
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

// countingCommitter counts the batcher's commits through it.
type countingCommitter struct {
	batcher.Committer
	n atomic.Int32
}

func (c *countingCommitter) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	c.n.Add(int32(len(files)))
	return c.Committer.CommitFiles(ctx, files)
}

// TestKillDialOnCommit: the batcher commits through Options.Committer and
// OnCommit sees the file; a second connection from DialContext reaches
// the same agent; after Kill the agent answers no one.
func TestKillDialOnCommit(t *testing.T) {
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	o := agenttest.Default()
	cc := &countingCommitter{Committer: meta}
	var seen atomic.Int32
	o.Committer, o.OnCommit = cc, func(batcher.CommittedFile) { seen.Add(1) }
	a := agenttest.Start(t, meta, objectstore.NewMemory(), o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Client.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Client.Produce(ctx, "t", 0, client.Value(nil, []byte("v"))); err != nil {
		t.Fatal(err)
	}
	if cc.n.Load() != 1 || seen.Load() != 1 {
		t.Fatalf("one produce: %d commits through the Committer, %d seen by OnCommit, want 1 and 1", cc.n.Load(), seen.Load())
	}
	other, err := client.Dial("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return a.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, err := other.Fetch(ctx, "t", 0, 0, 1<<20, 1000); err != nil || len(got.GetRecords()) != 1 {
		t.Fatalf("fetch over a second connection: %v, %v", got, err)
	}
	a.Kill()
	a.Kill() // idempotent
	kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
	defer kcancel()
	if _, err := a.Client.Produce(kctx, "t", 0, client.Value(nil, []byte("w"))); err == nil {
		t.Fatal("a produce to a killed agent was answered")
	}
}
