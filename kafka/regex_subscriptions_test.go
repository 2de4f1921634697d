package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// TestRegexSubscriptions: a member's regex is resolved to the whole names
// it matches and its principal may describe; heartbeats without a change
// of the topic set send nothing (unchanged) and list the topics at most
// once per refresh, whatever the number of heartbeats; a changed set is
// resolved again; a join always sends the names; bad regexes are refused.
func TestRegexSubscriptions(t *testing.T) {
	ctx := context.Background()
	topics := []string{"orders", "orders-eu", "xorders", "pay"}
	lists := 0
	r := newRegexSubs(time.Hour, func(context.Context) ([]metadata.Topic, error) {
		lists++
		out := make([]metadata.Topic, len(topics))
		for i, n := range topics {
			out[i] = metadata.Topic{Name: n}
		}
		return out, nil
	}, 2)
	all := func(string) bool { return true }
	key := memberKey{"g", "m"}
	re := "orders.*"
	sub, m, err := r.subscription(ctx, key, &re, nil, true, func(n string) bool { return n != "orders-eu" })
	if err != nil || !slices.Equal(sub, []string{"orders"}) {
		t.Fatalf("join: %q, %v; want [orders] (whole names, describable)", sub, err)
	}
	r.remember(key, m)
	for range 100 {
		sub, m, err := r.subscription(ctx, key, nil, nil, false, all)
		if err != nil || sub != nil || m == nil {
			t.Fatalf("heartbeat, topics unchanged: %q, %+v, %v; want nil (unchanged)", sub, m, err)
		}
	}
	if sub, _, _ := r.subscription(ctx, key, &re, nil, false, all); sub != nil {
		t.Fatalf("the same regex again: %q, want nil", sub)
	}
	if lists != 1 {
		t.Fatalf("%d listings for 102 heartbeats within one refresh, want 1", lists)
	}
	if sub, _, _ := r.subscription(ctx, key, nil, nil, true, all); !slices.Equal(sub, []string{"orders", "orders-eu"}) {
		t.Fatalf("a rejoin: %q, want the names", sub)
	}

	topics = append(topics, "orders-us")
	r.at = time.Time{} // the refresh interval passed
	sub, m, _ = r.subscription(ctx, key, nil, nil, false, all)
	if !slices.Equal(sub, []string{"orders", "orders-eu", "orders-us"}) || lists != 2 {
		t.Fatalf("after a topic was created: %q (%d listings)", sub, lists)
	}
	r.remember(key, m)
	r.at = time.Time{}
	if sub, _, _ := r.subscription(ctx, key, nil, nil, false, all); sub != nil || lists != 3 {
		t.Fatalf("relisted, same set: %q (%d listings), want nil", sub, lists)
	}

	none := "nope.*"
	if sub, _, _ := r.subscription(ctx, memberKey{"g", "n"}, &none, []string{}, true, all); !slices.Equal(sub, []string{noTopicName}) {
		t.Fatalf("a regex matching nothing: %q", sub)
	}
	if sub, m, err := r.subscription(ctx, memberKey{"g", "unknown"}, nil, []string{"pay"}, false, all); sub != nil || m != nil || err != nil {
		t.Fatalf("a member without a regex here: %q, %+v, %v", sub, m, err)
	}
	if sub, _, _ := r.subscription(ctx, key, nil, []string{"pay"}, false, all); !slices.Equal(sub, []string{"pay", "orders", "orders-eu", "orders-us"}) {
		t.Fatalf("names beside the regex: %q, want both", sub)
	}
	empty := ""
	if sub, m, _ := r.subscription(ctx, key, &empty, []string{"pay"}, false, all); sub != nil || m != nil {
		t.Fatalf("the regex dropped: %q, %+v; want the names left to the caller", sub, m)
	}
	var bad errInvalidRegex
	for _, p := range []string{"orders(", string(make([]byte, maxRegexLen+1))} {
		if _, _, err := r.subscription(ctx, key, &p, nil, false, all); !errors.As(err, &bad) {
			t.Errorf("regex %.20q: %v, want errInvalidRegex", p, err)
		}
	}
	r.remember(memberKey{"g", "x"}, m)
	r.remember(memberKey{"g", "y"}, m)
	if len(r.members) > 2 {
		t.Fatalf("%d members remembered, bound 2", len(r.members))
	}
}
