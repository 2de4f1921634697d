package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// TestGroupFollowerCommitsWhenIdle: `floe consume T -group G -follow`
// prints 3,000 records and then waits; within a few commit intervals the
// group's committed position is 3,000 (it stayed behind: a restart
// replayed what was printed).
func TestGroupFollowerCommitsWhenIdle(t *testing.T) {
	dev, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "idle", "-partitions", "1"); code != 0 {
		t.Fatal(errs)
	}
	const n = 3000
	if _, errs, code := floe(strings.Repeat("v\n", n), "produce", "idle"); code != 0 {
		t.Fatal(errs)
	}
	f := startFollower(t, "idle", "-group", "g", "-follow", "-from", "earliest", "-commit-interval", "200ms", "-addr", dev.addr)
	c := dialT(t, dev.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var printed int
	var committed int64
	for ctx.Err() == nil {
		f.mu.Lock()
		printed = len(f.lines)
		f.mu.Unlock()
		if printed == n {
			o, err := c.Groups().FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.GetOffsets()) == 1 {
				if committed = o.GetOffsets()[0].GetOffset(); committed == n {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("printed %d of %d; committed %d, want %d", printed, n, committed, n)
}
