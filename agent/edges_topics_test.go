package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// A topic config is bounded per entry and in total (unknown keys are
// refused, so value.schema, padded, is the long entry), on create and alter,
// with InvalidArgument naming the limit. Before, a 3 MB config was stored,
// and five of them made ListTopics fail for everyone.
func TestTopicConfigSizeLimits(t *testing.T) {
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxTopicConfigEntryBytes, a.MaxTopicConfigBytes = 1000, 1030
	}})
	ctx := context.Background()
	_, err := s.topics.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "big", Partitions: 1, Config: map[string]string{"value.schema": schemaOfSize(3 << 20)}})
	wantStatus(t, "a 3 MB config value", err, codes.InvalidArgument, agent.ReasonLimit, "topic_config_entry_bytes")
	if errorInfo(err).GetMetadata()["limit"] != "topic_config_entry_bytes" {
		t.Fatalf("metadata %v", errorInfo(err).GetMetadata())
	}
	// 12 + 988 bytes: at the entry limit; then 19 more, 1019 of 1030 in total.
	ok := map[string]string{"value.schema": schemaOfSize(988), "retention.ms": "3600000"}
	if _, err := s.topics.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "t", Partitions: 1, Config: ok}); err != nil {
		t.Fatalf("an entry at the limit: %v", err)
	}
	_, err = s.topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "t", Set: map[string]string{"cleanup.policy": "compact"}})
	wantStatus(t, "a third entry past the total", err, codes.InvalidArgument, agent.ReasonLimit, "topic_config_bytes")
	_, err = s.topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "t", Set: map[string]string{"value.schema": schemaOfSize(989)}})
	wantStatus(t, "an entry one byte over", err, codes.InvalidArgument, agent.ReasonLimit, "topic_config_entry_bytes")
	if _, err := s.topics.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "t", Remove: []string{"retention.ms"},
		Set: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatalf("replace an entry within the total: %v", err)
	}
}

// schemaOfSize is a valid value schema of exactly n bytes (padded with
// JSON whitespace): the one topic config key that takes long values.
func schemaOfSize(n int) string {
	const s = `{"type":"object"}`
	return s + strings.Repeat(" ", n-len(s))
}

// ListTopics answers pages in name order, each within its page size and
// the fetch limit, and a client following next_page_token sees every
// topic once. Before, one answer held every topic.
func TestListTopicsPages(t *testing.T) {
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxFetchBytes = 64 << 10
		a.SubscribeBufferBytes = 64 << 10
	}})
	ctx := context.Background()
	const n = 25
	for i := range n {
		cfg := map[string]string{"retention.ms": fmt.Sprint(1000 + i)}
		if i%5 == 0 {
			cfg["value.schema"] = schemaOfSize(30 << 10) // 30 KB: two per 64 KiB answer at most
		}
		if _, err := s.topics.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: fmt.Sprintf("t%02d", i), Partitions: 1, Config: cfg}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	token, pages := "", 0
	for {
		resp, err := s.topics.ListTopics(ctx, &floev1.ListTopicsRequest{PageToken: token, PageSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(resp.GetTopics()) == 0 || len(resp.GetTopics()) > 4 {
			t.Fatalf("page %d of %d topics", pages, len(resp.GetTopics()))
		}
		for _, tp := range resp.GetTopics() {
			names = append(names, tp.GetName())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	for i, name := range names {
		if want := fmt.Sprintf("t%02d", i); name != want {
			t.Fatalf("topic %d is %s, want %s (%v)", i, name, want, names)
		}
	}
	if len(names) != n || pages < n/4 {
		t.Fatalf("%d topics in %d pages", len(names), pages)
	}
	// The default page size: all 25 topics fit its count, not the 64 KiB.
	resp, err := s.topics.ListTopics(ctx, &floev1.ListTopicsRequest{})
	if err != nil || len(resp.GetTopics()) >= n || resp.GetNextPageToken() == "" {
		t.Fatalf("first default page: %d topics, next %q, %v", len(resp.GetTopics()), resp.GetNextPageToken(), err)
	}
}
