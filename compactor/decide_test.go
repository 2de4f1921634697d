package compactor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

func TestOrphanCursor(t *testing.T) {
	for _, tc := range []struct {
		saved string
		want  orphanCursor
	}{
		{"", orphanCursor{}},
		{"00", orphanCursor{}},
		{"3f", orphanCursor{shard: 0x3f}},
		{"3f/01ABC", orphanCursor{shard: 0x3f, after: "01ABC"}},
		{"ff/a/b", orphanCursor{shard: 0xff, after: "a/b"}},
		{"zz/x", orphanCursor{}},
		{"100", orphanCursor{}},
		{"f", orphanCursor{}},
		{"-1", orphanCursor{}},
	} {
		got := parseOrphanCursor(tc.saved)
		if got != tc.want {
			t.Errorf("parseOrphanCursor(%q) = %+v, want %+v", tc.saved, got, tc.want)
		}
		if tc.want != (orphanCursor{}) && parseOrphanCursor(got.String()) != got {
			t.Errorf("cursor %+v does not survive String (%q)", got, got.String())
		}
	}
	c := orphanCursor{shard: 0x10, after: "k1"}
	if got := c.prefix("v1/files/"); got != "v1/files/10/" {
		t.Errorf("prefix = %q", got)
	}
	if got := c.next(true, "k9"); got != (orphanCursor{shard: 0x10, after: "k9"}) {
		t.Errorf("next(cut) = %+v", got)
	}
	if got := c.next(false, "k9"); got != (orphanCursor{shard: 0x11}) {
		t.Errorf("next(done) = %+v", got)
	}
	if got := (orphanCursor{shard: 0xff, after: "x"}).next(false, ""); got != (orphanCursor{}) {
		t.Errorf("next after the last shard = %+v, want shard 00", got)
	}
}

func TestOrphanDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	age := 25 * time.Minute
	for _, tc := range []struct {
		modified time.Time
		want     bool
	}{
		{now.Add(-26 * time.Minute), true},
		{now.Add(-25*time.Minute - time.Millisecond), true},
		{now.Add(-25 * time.Minute), false}, // not more than minAge yet
		{now.Add(-time.Minute), false},
		{now.Add(time.Hour), false}, // clock skew: never
		{time.Time{}, false},        // unknown age: never
	} {
		if got := orphanDue(tc.modified, now, age); got != tc.want {
			t.Errorf("orphanDue(%v) = %v, want %v", tc.modified, got, tc.want)
		}
	}
}

func TestDeleteConfirmed(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{objectstore.ErrNotFound, true},
		{fmt.Errorf("delete: %w", objectstore.ErrNotFound), true},
		{errors.New("503 slow down"), false},
		{&objectstore.PermanentError{Err: errors.New("access denied")}, false},
	} {
		if got := deleteConfirmed(tc.err); got != tc.want {
			t.Errorf("deleteConfirmed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCollectMore(t *testing.T) {
	for _, tc := range []struct {
		last, limit, step, maxSteps int
		want                        bool
	}{
		{1000, 1000, 1, 100, true},
		{999, 1000, 1, 100, false},
		{0, 1000, 1, 100, false},
		{1000, 1000, 100, 100, false},
	} {
		if got := collectMore(tc.last, tc.limit, tc.step, tc.maxSteps); got != tc.want {
			t.Errorf("collectMore(%+v) = %v", tc, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Owner = "x"
	if err := ok.validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"no owner":        func(c *Config) { c.Owner = "" },
		"zero interval":   func(c *Config) { c.Interval = 0 },
		"negative grace":  func(c *Config) { c.Grace = -1 },
		"orphan < grace":  func(c *Config) { c.OrphanAge = c.Grace - 1 },
		"zero batch":      func(c *Config) { c.BatchLimit = 0 },
		"zero shards":     func(c *Config) { c.OrphanShards = 0 },
		"zero concurrent": func(c *Config) { c.DeleteConcurrency = 0 },
		"merge deadline":  func(c *Config) { c.OrphanAge = c.Grace + time.Second },
		"compact min age": func(c *Config) { c.CompactMinAge = -1 },
	} {
		c := ok
		mut(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPlanMerge(t *testing.T) {
	mb := func(file int64, topic int64, part int32, base, length int64) metadata.MergeBatch {
		return metadata.MergeBatch{FileID: file, TopicID: topic, Partition: part, BaseOffset: base, ByteLength: length}
	}
	cands := []metadata.MergeBatch{
		mb(1, 1, 1, 10, 100), mb(1, 1, 0, 5, 100),
		mb(2, 1, 0, 6, 300),
		mb(3, 2, 0, 0, 50), mb(3, 1, 1, 11, 50),
		mb(4, 1, 0, 7, 10),
	}
	key := func(bs []metadata.MergeBatch) string {
		var s []string
		for _, b := range bs {
			s = append(s, fmt.Sprintf("%d:%d/%d@%d", b.FileID, b.TopicID, b.Partition, b.BaseOffset))
		}
		return fmt.Sprint(s)
	}
	for _, tc := range []struct {
		cands  []metadata.MergeBatch
		target int64
		want   string
	}{
		{nil, 1000, "[]"},
		{cands[:2], 1000, "[]"}, // one file: nothing to merge
		// Everything fits: ordered by topic, partition, offset.
		{cands, 1000, "[1:1/0@5 2:1/0@6 4:1/0@7 1:1/1@10 3:1/1@11 3:2/0@0]"},
		// Two files at least, then files while under the target.
		{cands, 100, "[1:1/0@5 2:1/0@6 1:1/1@10]"},
		{cands, 600, "[1:1/0@5 2:1/0@6 1:1/1@10 3:1/1@11 3:2/0@0]"},
	} {
		if got := key(planMerge(tc.cands, tc.target)); got != tc.want {
			t.Errorf("planMerge(%d candidates, target %d) = %s, want %s", len(tc.cands), tc.target, got, tc.want)
		}
	}
}

func TestMergeDeadline(t *testing.T) {
	for _, tc := range []struct{ age, grace, want time.Duration }{
		{25 * time.Minute, 5 * time.Minute, 10 * time.Minute},
		{2 * time.Second, 0, time.Second},
		{time.Minute, time.Minute, 0},
		{time.Second, time.Minute, 0},
	} {
		if got := mergeDeadline(tc.age, tc.grace); got != tc.want {
			t.Errorf("mergeDeadline(%v, %v) = %v, want %v", tc.age, tc.grace, got, tc.want)
		}
	}
}
