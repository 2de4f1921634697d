package compactor

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
)

func TestMaintainDue(t *testing.T) {
	const h = int64(time.Hour / time.Millisecond)
	for _, tc := range []struct {
		last, now int64
		interval  time.Duration
		want      bool
	}{
		{0, 5, time.Hour, true},                  // never maintained
		{10 * h, 10*h + h - 1, time.Hour, false}, // not yet
		{10 * h, 11 * h, time.Hour, true},        // exactly due
		{10 * h, 9 * h, time.Hour, true},         // clock went back: do not wait for it
		{10 * h, 20 * h, 0, false},               // maintenance off
	} {
		if got := maintainDue(tc.last, tc.now, tc.interval); got != tc.want {
			t.Errorf("maintainDue(%d, %d, %v) = %v, want %v", tc.last, tc.now, tc.interval, got, tc.want)
		}
	}
}

func TestRetryDue(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		failed, now time.Time
		interval    time.Duration
		want        bool
	}{
		{time.Time{}, at, time.Hour, true},                 // never failed
		{at, at.Add(4 * time.Minute), time.Hour, false},    // too soon
		{at, at.Add(5 * time.Minute), time.Hour, true},     // after the retry wait
		{at, at.Add(30 * time.Second), time.Minute, false}, // a short interval
		{at, at.Add(time.Minute), time.Minute, true},       // ... bounds the wait
		{at, at.Add(-time.Minute), time.Hour, true},        // clock went back
	} {
		if got := retryDue(tc.failed, tc.now, tc.interval); got != tc.want {
			t.Errorf("retryDue(%v, %v, %v) = %v, want %v", tc.failed, tc.now, tc.interval, got, tc.want)
		}
	}
}

func TestExpireBefore(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if got := expireBefore(-1, now); !got.IsZero() {
		t.Errorf("for ever: %v, want zero", got)
	}
	if got := expireBefore(48*time.Hour, now); !got.Equal(now.Add(-48 * time.Hour)) {
		t.Errorf("48h: %v", got)
	}
	if got := expireBefore(0, now); !got.Equal(now) {
		t.Errorf("0: %v", got)
	}
}

func TestDropTable(t *testing.T) {
	ref := func(name, topic string) iceberg.TableRef {
		return iceberg.TableRef{Identifier: table.Identifier{"floe", name}, Topic: topic}
	}
	// Live: orders (id 20), user-events (21). Deleted: orders (12), gone (13).
	live := newLiveTopics([]metadata.Topic{{ID: 20, Name: "orders"}, {ID: 21, Name: "user-events"}})
	for _, tc := range []struct {
		t      iceberg.TableRef
		cursor int64
		want   bool
	}{
		{ref("orders", "orders"), 20, false},             // the live topic's
		{ref("orders", "orders"), 0, false},              // no cursor yet: the live name's
		{ref("orders", "orders"), 12, true},              // the deleted orders', not renamed yet
		{ref("gone", "gone"), 13, true},                  // deleted topic
		{ref("gone", "gone"), 0, true},                   // deleted topic, no cursor
		{ref("gone_rejected", "gone"), 13, true},         // its rejected table
		{ref("orders_rejected", "orders"), 20, false},    // the live topic's rejected table
		{ref("orders_rejected", "orders"), 12, true},     // the deleted orders' rejected table
		{ref("orders_x12", "orders"), 20, true},          // renamed: the old orders
		{ref("orders_rejected_x12", "orders"), 20, true}, // the old orders' rejected table
		{ref("orders_x20", "orders"), 20, false},         // a retired name of a live id
		{ref("foreign", ""), 0, false},                   // not floe's
		{ref("user_hevents", "user-events"), 21, false},  // live, mapped name
		{ref("orders_xyz", "orders"), 12, false},         // not a retired name: not floe's name for it
		{ref("orders_rejected_x", "orders"), 12, false},  // nor this
		{ref("orders_x-1", "orders"), 12, false},         // nor this
		{ref("renamed_by_hand", "gone"), 13, false},      // floe.topic alone never drops
		{iceberg.TableRef{Topic: "gone"}, 13, false},     // no identifier
	} {
		if got := dropTable(tc.t, tc.cursor, live); got != tc.want {
			t.Errorf("dropTable(%v, cursor %d) = %v, want %v", tc.t, tc.cursor, got, tc.want)
		}
	}
}
