package agent_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// TestDescribeIcebergFigures: DescribeTopic returns the table's figures
// the compactor recorded in its lease cursor (identifier, last snapshot,
// rows, data files and bytes, last maintenance) and how far the table
// trails the log: offsets, bytes of the batches above the watermark, and
// the age of the oldest.
func TestDescribeIcebergFigures(t *testing.T) {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	c := startOn(t, meta, objectstore.NewMemory())
	if _, err := c.CreateTopic(ctx, "tabled", 2, nil); err != nil {
		t.Fatal(err)
	}
	for p, n := range map[int32]int{0: 10, 1: 5} {
		for i := range n {
			if _, err := c.Produce(ctx, "tabled", p, client.Value(nil, []byte{byte(i)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	tp, err := meta.DescribeTopic(ctx, "tabled")
	if err != nil {
		t.Fatal(err)
	}
	// What the answer must show: the batches above the watermark.
	wm := map[int32]int64{0: 4}
	var wantBytes, oldest int64
	for p := range int32(2) {
		refs, _, err := meta.FindBatches(ctx, tp.ID, p, wm[p], 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range refs {
			wantBytes += b.ByteLength
			if oldest == 0 || b.LogAppendTime < oldest {
				oldest = b.LogAppendTime
			}
		}
	}
	lease := metadata.IcebergLease("tabled")
	if ok, err := meta.AcquireLease(ctx, lease, "compactor", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	cur := metadata.IcebergCursor{TopicID: tp.ID, Watermark: wm, HasTotals: true, Rows: 4, DataFiles: 2, DataBytes: 3000,
		MaintainedMs: 1700000100000, Table: "floe.tabled", SnapshotID: 77, SnapshotMs: 1700000000000}
	if _, err := meta.SetJobCursor(ctx, lease, "compactor", cur.String()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the oldest batch has an age
	d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "tabled"})
	if err != nil {
		t.Fatal(err)
	}
	ic := d.GetIceberg()
	if !ic.GetKnown() || ic.GetTable() != "floe.tabled" || ic.GetSnapshotId() != 77 || ic.GetSnapshotTimeMs() != 1700000000000 ||
		ic.GetRows() != 4 || ic.GetDataFiles() != 2 || ic.GetDataBytes() != 3000 || ic.GetMaintainedMs() != 1700000100000 {
		t.Errorf("iceberg figures: %v", ic)
	}
	if ic.GetTrailingOffsets() != 11 || ic.GetTrailingBytes() != wantBytes || wantBytes == 0 {
		t.Errorf("trailing %d offsets, %d bytes; want 11, %d", ic.GetTrailingOffsets(), ic.GetTrailingBytes(), wantBytes)
	}
	now, _ := meta.Now(ctx)
	if ms := ic.GetTrailingMs(); ms <= 0 || ms > now.UnixMilli()-oldest+1000 {
		t.Errorf("trailing %d ms, want the oldest batch's age, about %d", ms, now.UnixMilli()-oldest)
	}
}

// With more trailing partitions than one describe looks up, the bytes of
// the others are extrapolated: equal batches give the exact sum.
func TestDescribeIcebergLagManyPartitions(t *testing.T) {
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	c := startOn(t, meta, objectstore.NewMemory())
	const parts = 40
	if _, err := c.CreateTopic(ctx, "wide", parts, nil); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		if _, err := c.Produce(ctx, "wide", p, client.Value([]byte("k"), []byte("same size"))); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := meta.DescribeTopic(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for p := range int32(parts) {
		refs, _, err := meta.FindBatches(ctx, tp.ID, p, 0, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range refs {
			want += b.ByteLength
		}
	}
	lease := metadata.IcebergLease("wide")
	if ok, err := meta.AcquireLease(ctx, lease, "compactor", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := meta.SetJobCursor(ctx, lease, "compactor", metadata.IcebergCursor{TopicID: tp.ID}.String()); err != nil {
		t.Fatal(err)
	}
	d, err := c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "wide"})
	if err != nil {
		t.Fatal(err)
	}
	if ic := d.GetIceberg(); ic.GetTrailingOffsets() != parts || ic.GetTrailingBytes() != want {
		t.Errorf("trailing %d offsets, %d bytes; want %d, %d", ic.GetTrailingOffsets(), ic.GetTrailingBytes(), parts, want)
	}
}
