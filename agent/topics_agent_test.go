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
	"github.com/floe-broker/floe/objectstore"
)

// A topic a reader's index watches is not looked up by name again,
// whatever the TTL; when it is deleted and re-created through another
// agent, the index poll finds the old one gone and fetches by name reach
// the new one.
func TestWatchedTopicRecreatedElsewhereIsFound(t *testing.T) {
	meta := openSQLite(t)
	store := objectstore.NewMemory()
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = time.Millisecond
	w := startNode(t, meta, store, acfg, bcfg)
	acfg.TopicCacheTTL = time.Hour // only the index poll may drop the name
	acfg.IndexPollInterval = 100 * time.Millisecond
	r := startNode(t, meta, store, acfg, bcfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := w.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Produce(ctx, "t", 0, client.Value(nil, []byte("old"))); err != nil {
		t.Fatal(err)
	}
	f, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != 1 || string(f.GetRecords()[0].GetValue()) != "old" {
		t.Fatalf("fetch before the deletion: %v, %v", f, err)
	}
	if _, err := w.c.Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Produce(ctx, "t", 0, client.Value(nil, []byte("new"))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := r.c.Fetch(ctx, "t", 0, 0, 0, 0)
		if err == nil && len(f.GetRecords()) == 1 && string(f.GetRecords()[0].GetValue()) == "new" {
			return
		}
		if err != nil && status.Code(err) != codes.NotFound {
			t.Fatalf("fetch after the re-creation: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the re-created topic is still not read by name: last answer %v, %v", f, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
