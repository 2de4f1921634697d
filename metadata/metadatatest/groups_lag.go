package metadatatest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testGroupTopLag: TopGroupLag ranks groups by records behind and gives
// each the inputs GroupLag gives (bytes aside); BatchBytes over a
// position's whole range is GroupLag's BytesBehind.
func testGroupTopLag(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "top", 2)
	for i := range 5 {
		b := plain(tpc.ID, 0, int32(i+2))
		b.MaxTimestamp = int64(100 + i)
		commitOne(t, s, b)
	}
	commitOne(t, s, plain(tpc.ID, 1, 3)) // partition 0: 20 records, 1: 3
	at := func(grp string, p0, p1 int64) {
		t.Helper()
		if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: grp, Offsets: []metadata.OffsetCommit{
			{TopicID: tpc.ID, Partition: 0, Offset: p0}, {TopicID: tpc.ID, Partition: 1, Offset: p1}}}); err != nil {
			t.Fatal(err)
		}
	}
	at("a-caught-up", 20, 3)
	at("b-far", 1, 0)   // 19 + 3
	at("c-some", 10, 3) // 10
	at("d-some", 13, 0) // 7 + 3 = 10: ties with c, by name
	top, err := s.TopGroupLag(ctx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range top {
		names = append(names, g.Group)
	}
	if !slices.Equal(names, []string{"b-far", "c-some", "d-some"}) || top[0].RecordsBehind != 22 || top[1].RecordsBehind != 10 {
		t.Fatalf("top 3: %v (%+v)", names, top)
	}
	for _, g := range top {
		want, err := s.GroupLag(ctx(t), g.Group)
		if err != nil {
			t.Fatal(err)
		}
		ranges := make([]metadata.BatchRange, len(want))
		for i, l := range want {
			from := max(l.Committed, l.LogStartOffset)
			ranges[i] = metadata.BatchRange{TopicID: l.TopicID, Partition: l.Partition, LastFrom: from, LastTo: math.MaxInt64,
				BaseFrom: 0, BaseTo: l.HighWatermark}
		}
		bytes, err := s.BatchBytes(ctx(t), ranges)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if bytes[i] != want[i].BytesBehind {
				t.Errorf("%s partition %d: BatchBytes %d, GroupLag's bytes behind %d", g.Group, want[i].Partition, bytes[i], want[i].BytesBehind)
			}
			want[i].BytesBehind = 0
		}
		if !slices.Equal(g.Partitions, want) {
			t.Errorf("%s: %+v, GroupLag %+v", g.Group, g.Partitions, want)
		}
	}
	if top[0].Partitions[0].FirstUnconsumedMaxTimestamp != 100 {
		t.Errorf("b-far's first unconsumed batch: %+v", top[0].Partitions[0])
	}
	// Ranges by base offset and by last offset, and an empty one.
	refs := allBatches(t, s, tpc.ID, 0)
	got, err := s.BatchBytes(ctx(t), []metadata.BatchRange{
		{TopicID: tpc.ID, Partition: 0, LastFrom: 0, LastTo: math.MaxInt64, BaseFrom: refs[1].BaseOffset, BaseTo: refs[3].BaseOffset},
		{TopicID: tpc.ID, Partition: 0, LastFrom: refs[0].LastOffset, LastTo: refs[2].LastOffset, BaseFrom: 0, BaseTo: math.MaxInt64},
		{TopicID: tpc.ID, Partition: 0, LastFrom: 5, LastTo: 5, BaseFrom: 0, BaseTo: math.MaxInt64},
	})
	if err != nil {
		t.Fatal(err)
	}
	if w := refs[1].ByteLength + refs[2].ByteLength; got[0] != w || got[1] != refs[0].ByteLength+refs[1].ByteLength || got[2] != 0 {
		t.Errorf("ranges: %v, want [%d %d 0]", got, w, refs[0].ByteLength+refs[1].ByteLength)
	}
	if none, err := s.BatchBytes(ctx(t), nil); err != nil || len(none) != 0 {
		t.Errorf("no ranges: %v, %v", none, err)
	}
}

// testGroupExpire: a group without live members whose last commit is
// older than the retention is deleted, positions included; one with a
// live member or a recent commit is kept.
func testGroupExpire(t *testing.T, s metadata.Store) {
	tpc := createTopic(t, s, "exp", 1)
	commitAt := func(grp string) {
		t.Helper()
		if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: grp,
			Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0}}}); err != nil {
			t.Fatal(err)
		}
	}
	commitAt("old")
	live := joinStable(t, s, "live", "m", "exp")
	if err := s.CommitOffsets(ctx(t), metadata.CommitOffsetsRequest{Group: "live", MemberID: "m", MemberEpoch: live.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: tpc.ID, Partition: 0, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ExpireGroups(ctx(t), time.Hour); err != nil || len(got) != 0 {
		t.Fatalf("expire after an hour: %v, %v", got, err)
	}
	time.Sleep(300 * time.Millisecond)
	commitAt("recent")
	got, err := s.ExpireGroups(ctx(t), 200*time.Millisecond)
	if err != nil || !slices.Equal(got, []string{"old"}) {
		t.Fatalf("expire after 200 ms: %v, %v, want [old]", got, err)
	}
	if offs, err := s.FetchOffsets(ctx(t), "old", nil); err != nil || len(offs) != 0 {
		t.Errorf("positions of an expired group: %v, %v", offs, err)
	}
	l, err := s.ListGroups(ctx(t))
	if err != nil || len(l) != 2 || l[0].Group != "live" || l[1].Group != "recent" {
		t.Errorf("groups after expiry: %+v, %v", l, err)
	}
	if got, err := s.ExpireGroups(ctx(t), 0); err != nil || len(got) != 0 {
		t.Errorf("retention 0 (forever): %v, %v", got, err)
	}
}
