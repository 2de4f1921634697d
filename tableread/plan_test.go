package tableread_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/tableread"
)

// TestSnapshotPlannedOnce: a reader plans each snapshot's data files once
// (plan.go) and picks every scan's files from that plan; its reads serve
// the same records, from no more files, as a reader that lets iceberg-go
// plan each scan with its filter. The table's files span three days each
// (three files an append), the first append holds partition 2 only (its
// files' partition bounds prune the other partitions' scans of the same
// offsets), and a new append makes a new snapshot, planned once more. With and without read-ahead
// (without: one partition a scan, pruned by partition).
func TestSnapshotPlannedOnce(t *testing.T) {
	for _, ahead := range []int64{0, tableread.DefaultConfig().ReadaheadBytes} {
		w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
		ctx := ctxT(t)
		const parts = 4
		// appendRows appends offsets [from, to) of each partition of span
		// in one snapshot.
		appendRows := func(span map[int32][2]int64) {
			t.Helper()
			var rows []iceberg.Row
			wm := iceberg.Watermark{}
			for p := range int32(parts) {
				r, ok := span[p]
				if !ok {
					continue
				}
				rs, _ := rowsOf(parts, r[0], r[1], func(q int32, _ int64) bool { return q != p })
				rows = append(rows, rs...)
				wm[p] = r[1]
			}
			if _, err := w.Append(ctx, "t", rows, wm); err != nil {
				t.Fatal(err)
			}
		}
		// Partition 2 first alone: its files' offsets overlap the others'
		// next ones, their partition bounds do not.
		appendRows(map[int32][2]int64{2: {0, 300}})
		appendRows(map[int32][2]int64{0: {0, 300}, 1: {0, 300}, 2: {300, 600}, 3: {0, 300}})
		appendRows(map[int32][2]int64{0: {300, 600}, 1: {300, 600}, 2: {600, 900}, 3: {300, 600}})
		ends := map[int32]int64{0: 600, 1: 600, 2: 900, 3: 600}
		cfg := tableread.DefaultConfig()
		cfg.ReadaheadBytes, cfg.WindowBytes, cfg.TableTTL = ahead, 4<<10, time.Millisecond
		readers := map[bool]*tableread.Reader{}
		for _, planned := range []bool{true, false} {
			r, err := tableread.New(w, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !planned {
				tableread.DropPlans(r)
			}
			readers[planned] = r
		}
		check := func(round string) {
			t.Helper()
			for p := range int32(parts) {
				got := readAll(t, readers[true], "t", p, 0, ends[p], 2<<10)
				want := readAll(t, readers[false], "t", p, 0, ends[p], 2<<10)
				if len(got) != len(want) || int64(len(got)) == 0 {
					t.Fatalf("%s, read-ahead %d, partition %d: %d records from the plan, %d planned per scan", round, ahead, p, len(got), len(want))
				}
				for i := range got {
					if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Value, want[i].Value) || !bytes.Equal(got[i].Key, want[i].Key) {
						t.Fatalf("%s, partition %d, record %d: offset %d, per scan %d", round, p, i, got[i].Offset, want[i].Offset)
					}
				}
			}
			if a, b := tableread.Decoded(readers[true]), tableread.Decoded(readers[false]); a > b {
				t.Fatalf("%s, read-ahead %d: %d data files read from the plan, %d planned per scan", round, ahead, a, b)
			}
		}
		check("first snapshot")
		if n := tableread.Planned(readers[true]); n != 1 {
			t.Fatalf("read-ahead %d: %d snapshots planned over %d scans, want 1", ahead, n, tableread.Scans(readers[true]))
		}
		// A new snapshot.
		appendRows(map[int32][2]int64{0: {600, 700}, 2: {900, 1000}})
		time.Sleep(5 * time.Millisecond) // past TableTTL: the readers load the new snapshot
		ends[0], ends[2] = 700, 1000
		check("second snapshot")
		if n := tableread.Planned(readers[true]); n != 2 {
			t.Fatalf("read-ahead %d: %d snapshots planned, want 2", ahead, n)
		}
	}
}
