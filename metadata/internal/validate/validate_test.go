package validate

import (
	"errors"
	"math"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func TestSequences(t *testing.T) {
	for _, tc := range []struct{ base, count, last int32 }{
		{0, 1, 0}, {0, 5, 4}, {math.MaxInt32, 1, math.MaxInt32}, {math.MaxInt32, 2, 0}, {math.MaxInt32 - 1, 4, 1},
	} {
		if got := LastSequence(tc.base, tc.count); got != tc.last {
			t.Errorf("LastSequence(%d, %d) = %d, want %d", tc.base, tc.count, got, tc.last)
		}
	}
	if NextSequence(math.MaxInt32) != 0 || NextSequence(7) != 8 {
		t.Error("NextSequence does not wrap at MaxInt32")
	}
}

func TestCommit(t *testing.T) {
	ok := metadata.BatchCommit{ByteOffset: 10, ByteLength: 90, RecordCount: 1, ProducerID: -1, BaseSequence: metadata.NoSequence}
	if err := Commit(metadata.FileCommit{Key: "k", Size: 100, Batches: []metadata.BatchCommit{ok}}); err != nil {
		t.Errorf("valid commit: %v", err)
	}
	bad := func(mut func(*metadata.BatchCommit)) metadata.FileCommit {
		b := ok
		mut(&b)
		return metadata.FileCommit{Key: "k", Size: 100, Batches: []metadata.BatchCommit{b}}
	}
	for name, f := range map[string]metadata.FileCommit{
		"past end":       bad(func(b *metadata.BatchCommit) { b.ByteOffset = 11 }),
		"no records":     bad(func(b *metadata.BatchCommit) { b.RecordCount = 0 }),
		"negative part":  bad(func(b *metadata.BatchCommit) { b.Partition = -1 }),
		"negative epoch": bad(func(b *metadata.BatchCommit) { b.ProducerID, b.BaseSequence, b.ProducerEpoch = 1, 0, -1 }),
		"no key":         {Size: 100, Batches: []metadata.BatchCommit{ok}},
	} {
		if err := Commit(f); !errors.Is(err, metadata.ErrInvalidCommit) {
			t.Errorf("%s: %v, want ErrInvalidCommit", name, err)
		}
	}
	if err := TopicSpec(metadata.TopicSpec{Name: "a", Partitions: metadata.MaxPartitions}); err != nil {
		t.Errorf("max partitions: %v", err)
	}
}
