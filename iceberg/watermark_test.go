package iceberg

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/kbatch"
)

func row(p int32, off int64) Row {
	return Row{Partition: p, Offset: off, Timestamp: time.UnixMilli(off), AppendTime: time.UnixMilli(off)}
}

func offsets(rows []Row) [][2]int64 {
	var out [][2]int64
	for _, r := range rows {
		out = append(out, [2]int64{int64(r.Partition), r.Offset})
	}
	return out
}

func TestRowsToWrite(t *testing.T) {
	rows := []Row{row(0, 5), row(0, 6), row(0, 9), row(1, 0), row(1, 1), row(3, 7)}
	want := Watermark{0: 10, 1: 2, 3: 8}
	for _, tc := range []struct {
		name    string
		rows    []Row
		have    Watermark
		want    Watermark
		out     [][2]int64
		wantErr error
	}{
		{name: "empty table", rows: rows, have: nil, want: want,
			out: [][2]int64{{0, 5}, {0, 6}, {0, 9}, {1, 0}, {1, 1}, {3, 7}}},
		{name: "part written", rows: rows, have: Watermark{0: 7, 1: 1}, want: want,
			out: [][2]int64{{0, 9}, {1, 1}, {3, 7}}},
		{name: "gap below the watermark", rows: rows, have: Watermark{0: 9}, want: want,
			out: [][2]int64{{0, 9}, {1, 0}, {1, 1}, {3, 7}}},
		{name: "all written", rows: rows, have: Watermark{0: 10, 1: 2, 3: 8}, want: want, out: nil},
		{name: "table ahead", rows: rows, have: Watermark{0: 50, 1: 50, 3: 50}, want: want, out: nil},
		{name: "other partitions ahead", rows: rows, have: Watermark{2: 99}, want: want,
			out: [][2]int64{{0, 5}, {0, 6}, {0, 9}, {1, 0}, {1, 1}, {3, 7}}},
		{name: "no rows", rows: nil, have: Watermark{0: 3}, want: Watermark{0: 4}, out: nil},
		{name: "offsets out of order", rows: []Row{row(0, 2), row(0, 1)}, want: Watermark{0: 3}, wantErr: ErrInvalidRows},
		{name: "offset twice", rows: []Row{row(0, 1), row(0, 1)}, want: Watermark{0: 3}, wantErr: ErrInvalidRows},
		{name: "partitions out of order", rows: []Row{row(1, 0), row(0, 1)}, want: Watermark{0: 3, 1: 3}, wantErr: ErrInvalidRows},
		{name: "row at the append's watermark", rows: []Row{row(0, 3)}, want: Watermark{0: 3}, wantErr: ErrInvalidRows},
		{name: "partition missing from the append's watermark", rows: []Row{row(2, 0)}, want: Watermark{0: 3}, wantErr: ErrInvalidRows},
		{name: "negative offset", rows: []Row{row(0, -1)}, want: Watermark{0: 3}, wantErr: ErrInvalidRows},
		{name: "negative watermark", rows: nil, want: Watermark{0: -3}, wantErr: ErrInvalidWatermark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.rows)
			got, err := RowsToWrite(tc.rows, tc.have, tc.want)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if got != nil {
					t.Errorf("rows %v with an error", offsets(got))
				}
				return
			}
			if !slices.Equal(offsets(got), tc.out) {
				t.Errorf("rows = %v, want %v", offsets(got), tc.out)
			}
			if !slices.EqualFunc(in, tc.rows, func(a, b Row) bool { return a.Offset == b.Offset && a.Partition == b.Partition }) {
				t.Errorf("input changed")
			}
		})
	}
}

func TestWatermarkFormatParse(t *testing.T) {
	for _, tc := range []struct {
		w Watermark
		s string
	}{
		{Watermark{}, ""},
		{Watermark{0: 120, 1: 98, 10: 1}, "0:120,1:98,10:1"},
		{Watermark{2: 0, 3: 9223372036854775807}, "3:9223372036854775807"},
	} {
		if got := FormatWatermark(tc.w); got != tc.s {
			t.Errorf("FormatWatermark(%v) = %q, want %q", tc.w, got, tc.s)
		}
		back, err := ParseWatermark(tc.s)
		if err != nil || !back.Equal(tc.w) {
			t.Errorf("ParseWatermark(%q) = %v, %v, want %v", tc.s, back, err, tc.w)
		}
	}
	for _, bad := range []string{"0", "0:", ":1", "a:1", "0:b", "-1:3", "0:-3", "0:1,0:2", "0:1,", "2147483648:1"} {
		if w, err := ParseWatermark(bad); !errors.Is(err, ErrInvalidWatermark) {
			t.Errorf("ParseWatermark(%q) = %v, %v, want ErrInvalidWatermark", bad, w, err)
		}
	}
}

func TestWatermarkCoversMerge(t *testing.T) {
	have := Watermark{0: 10, 1: 5}
	for _, tc := range []struct {
		want   Watermark
		covers bool
		merged Watermark
	}{
		{Watermark{}, true, have},
		{Watermark{0: 10}, true, have},
		{Watermark{0: 9, 1: 5}, true, have},
		{Watermark{0: 11}, false, Watermark{0: 11, 1: 5}},
		{Watermark{2: 1}, false, Watermark{0: 10, 1: 5, 2: 1}},
		{Watermark{0: 3, 1: 6}, false, Watermark{0: 10, 1: 6}},
	} {
		if got := have.Covers(tc.want); got != tc.covers {
			t.Errorf("%v.Covers(%v) = %v", have, tc.want, got)
		}
		if got := have.Merge(tc.want); !got.Equal(tc.merged) {
			t.Errorf("%v.Merge(%v) = %v, want %v", have, tc.want, got, tc.merged)
		}
	}
	if !(Watermark{0: 0}).Equal(Watermark{}) || (Watermark{0: 1}).Equal(Watermark{}) {
		t.Errorf("Equal: a partition at 0 is a missing one, at 1 is not")
	}
}

func TestSortForFiles(t *testing.T) {
	d := func(days int, off int64) time.Time { return time.Unix(int64(days)*86400+off, 0).UTC() }
	rows := []Row{
		{Partition: 0, Offset: 0, Timestamp: d(2, 1)},
		{Partition: 0, Offset: 1, Timestamp: d(-1, 5)}, // 1969-12-31
		{Partition: 0, Offset: 2, Timestamp: d(2, 0)},
		{Partition: 1, Offset: 0, Timestamp: d(-1, 0)},
		{Partition: 1, Offset: 1, Timestamp: d(0, 0)},
		{Partition: 1, Offset: 2, Timestamp: d(2, 9)},
	}
	sortForFiles(rows)
	want := [][2]int64{{0, 1}, {1, 0}, {1, 1}, {0, 0}, {0, 2}, {1, 2}}
	if got := offsets(rows); !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v (by day, then partition and offset)", got, want)
	}
	if got := day(time.Unix(-1, 0)); got != -1 {
		t.Errorf("day(1969-12-31T23:59:59) = %d, want -1", got)
	}
}

func TestWatermarkLag(t *testing.T) {
	per, total := Watermark{0: 10, 1: 5, 3: 9}.Lag(Watermark{0: 12, 1: 5, 2: 7, 3: 8})
	want := map[int32]int64{0: 2, 1: 0, 2: 7, 3: 0}
	if total != 9 || len(per) != len(want) {
		t.Fatalf("Lag = %v, %d; want %v, 9", per, total, want)
	}
	for p, d := range want {
		if per[p] != d {
			t.Errorf("Lag[%d] = %d, want %d", p, per[p], d)
		}
	}
}

func TestAppendRecords(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 123_456_000, time.UTC)
	recs := []kbatch.Record{
		{Offset: 7, Timestamp: 1700000000123, Key: []byte("k"), Headers: []kbatch.Header{{Key: "h"}}},
		{Offset: 8, Timestamp: -1, Value: []byte{}},
	}
	rows := AppendRecords([]Row{row(0, 1)}, 3, at, recs)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	a, b := rows[1], rows[2]
	if a.Partition != 3 || a.Offset != 7 || !a.Timestamp.Equal(time.UnixMilli(1700000000123)) || !a.AppendTime.Equal(at) ||
		string(a.Key) != "k" || a.Value != nil || len(a.Headers) != 1 {
		t.Errorf("row = %+v", a)
	}
	if b.Offset != 8 || !b.Timestamp.Equal(at) || b.Key != nil || b.Value == nil {
		t.Errorf("record without a timestamp: %+v, want the append time", b)
	}
}
