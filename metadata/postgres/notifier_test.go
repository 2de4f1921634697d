package postgres

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestNotifierMerges: the notifier keeps each partition's highest high
// watermark, cuts payloads under NOTIFY's limit, and past its bound
// announces "*" instead of growing.
func TestNotifierMerges(t *testing.T) {
	n := newNotifier(nil, "c", slog.New(slog.DiscardHandler))
	n.add("1:0:5,1:1:3")
	n.add("1:0:9,2:4:1")
	n.add("1:0:7")
	_, got := n.take()
	if len(got) != 1 {
		t.Fatalf("take = %q, want one payload", got)
	}
	items := map[string]bool{}
	for _, it := range strings.Split(got[0], ",") {
		items[it] = true
	}
	if len(items) != 3 || !items["1:0:9"] || !items["1:1:3"] || !items["2:4:1"] {
		t.Fatalf("take = %q, want 1:0:9, 1:1:3 and 2:4:1", got)
	}
	if _, again := n.take(); len(again) != 0 {
		t.Fatalf("second take = %q, want nothing", again)
	}

	var b strings.Builder
	for p := range 3000 {
		fmt.Fprintf(&b, "%d:%d:%d,", 1234567, p, 1000000+p)
	}
	n.add(strings.TrimSuffix(b.String(), ","))
	seen := 0
	_, payloads := n.take()
	for _, p := range payloads {
		if len(p) > maxNoticePayload {
			t.Fatalf("payload of %d bytes, limit %d", len(p), maxNoticePayload)
		}
		notice := ParsePayload(p)
		if notice.All {
			t.Fatalf("payload %.40q... does not parse", p)
		}
		seen += len(notice.Partitions)
	}
	if seen != 3000 || len(payloads) < 2 {
		t.Fatalf("%d partitions in %d payloads, want 3000 in several", seen, len(payloads))
	}

	for i := range maxPendingNotices/1000 + 1 {
		b.Reset()
		for p := range 1000 {
			fmt.Fprintf(&b, "%d:%d:1,", i, p)
		}
		n.add(strings.TrimSuffix(b.String(), ","))
	}
	if _, got := n.take(); len(got) != 1 || got[0] != "*" {
		t.Fatalf("past the bound take = %d payloads, want just \"*\"", len(got))
	}
	if n.add("1:1:1"); len(second(n.take())) != 1 {
		t.Fatal("after \"*\" the notifier does not start over")
	}
}

func second[A, B any](_ A, b B) B { return b }
