package agent_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/objectstore"
)

// TestReadCacheIsBounded: the agent's read cache holds at most CacheBytes:
// after more files than fit were committed (each enters the cache), the
// oldest ones are read from the object store again (with the store's GETs
// failing, fetching them fails), while the newest are still served from
// the cache.
func TestReadCacheIsBounded(t *testing.T) {
	const files, valueSize = 12, 16 << 10
	h := start(t, func(a *agent.Config, _ *batcher.Config) {
		a.CacheBytes = 3 * (valueSize + 4<<10) // three files and their overhead
	})
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		v := bytes.Repeat([]byte{byte('a' + i)}, valueSize)
		if _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, v)); err != nil { // one file each
			t.Fatal(err)
		}
	}
	h.store.Set(objectstore.FaultConfig{ErrorRate: 1, Operations: []string{objectstore.OpGet}})
	resp, err := h.c.Fetch(ctx, "t", 0, files-1, 0, 0)
	if err != nil || len(resp.GetRecords()) == 0 || resp.GetRecords()[0].GetValue()[0] != byte('a'+files-1) {
		t.Fatalf("the newest file was not served from the cache: %v, %v", resp, err)
	}
	if resp, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0); err == nil {
		t.Fatalf("the oldest of %d files (%d bytes, cache %d bytes) was still cached: %d records", files, files*valueSize, 3*(valueSize+4<<10), len(resp.GetRecords()))
	}
}
