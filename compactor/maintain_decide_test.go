package compactor

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/iceberg"
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

func TestTablesToDrop(t *testing.T) {
	ref := func(name, topic string) iceberg.TableRef {
		return iceberg.TableRef{Identifier: table.Identifier{"floe", name}, Topic: topic}
	}
	tables := []iceberg.TableRef{
		ref("orders", "orders"),              // live
		ref("gone", "gone"),                  // deleted topic
		ref("orders_x12", "orders"),          // renamed: the old orders
		ref("foreign", ""),                   // not floe's
		ref("user_hevents", "user-events"),   // live, mapped name
		ref("orders_rejected", "orders"),     // another table of a live topic
		ref("orders_xyz", "orders"),          // not a retired name
		ref("gone_rejected", "gone"),         // another table of a deleted topic
		ref("orders_rejected_x12", "orders"), // the old orders' rejected table
		ref("orders_rejected_x", "orders"),   // not a retired name
		ref("orders_x-1", "orders"),          // nor this
	}
	live := map[string]bool{"orders": true, "user-events": true}
	got := fmt.Sprint(tablesToDrop(tables, live))
	want := fmt.Sprint([]iceberg.TableRef{ref("gone", "gone"), ref("orders_x12", "orders"), ref("gone_rejected", "gone"),
		ref("orders_rejected_x12", "orders")})
	if got != want {
		t.Errorf("tablesToDrop = %s, want %s", got, want)
	}
}
