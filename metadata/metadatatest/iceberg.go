package metadatatest

import (
	"testing"

	"github.com/floe-broker/floe/metadata"
)

// icebergTests cover what the Iceberg output needs of a store.
var icebergTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"RetentionHold", testRetentionHold},
	{"IcebergConfig", testIcebergConfig},
}

// testRetentionHold: ApplyRetention never moves a log start past
// Retention.Hold (0 for a partition it does not list), by time or size.
func testRetentionHold(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "rh", 3)
	for p := range int32(3) {
		for range 5 {
			commitOne(t, s, plain(tp.ID, p, 1)) // offsets 0..4
		}
	}
	hold := map[int32]int64{0: 2, 1: 9}
	for _, r := range []metadata.Retention{{Ms: -1, Bytes: 0, Hold: hold}, {Ms: 0, Bytes: -1, Hold: hold}} {
		if _, err := metadata.ApplyRetention(c, s, tp.ID, r); err != nil {
			t.Fatal(err)
		}
	}
	states, err := s.PartitionStates(c, tp.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if want := []int64{2, 5, 0}[st.Partition]; st.LogStartOffset != want {
			t.Errorf("partition %d: log start %d, want %d (held at %v)", st.Partition, st.LogStartOffset, want, hold)
		}
	}
	// An empty hold holds everything; none trims.
	if moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: -1, Bytes: 0, Hold: map[int32]int64{}}); err != nil || len(moved) != 0 {
		t.Errorf("ApplyRetention with an empty hold = %+v, %v; want nothing moved", moved, err)
	}
	if moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: -1, Bytes: 0}); err != nil || len(moved) != 2 {
		t.Errorf("ApplyRetention without a hold = %+v, %v; want partitions 0 and 2 emptied", moved, err)
	}
}

// testIcebergConfig: iceberg.enabled and iceberg.lag are validated at
// creation and by AlterTopicConfig.
func testIcebergConfig(t *testing.T, s metadata.Store) {
	c := ctx(t)
	if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "ib", Partitions: 1, Config: map[string]string{"iceberg.lag": "soon"}}); err == nil {
		t.Error("CreateTopic accepted iceberg.lag=soon")
	}
	createTopic(t, s, "ib", 1)
	got, err := s.AlterTopicConfig(c, "ib", map[string]string{"iceberg.enabled": "false", "iceberg.lag": "30s"}, nil)
	if err != nil || got.Config["iceberg.enabled"] != "false" || got.Config["iceberg.lag"] != "30s" {
		t.Errorf("AlterTopicConfig = %v, %v", got.Config, err)
	}
	if _, err := s.AlterTopicConfig(c, "ib", map[string]string{"iceberg.enabled": "maybe"}, nil); err == nil {
		t.Error("AlterTopicConfig accepted iceberg.enabled=maybe")
	}
}
