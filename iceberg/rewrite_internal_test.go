package iceberg

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestPlanRewrite(t *testing.T) {
	f := func(day int32, bytes int64, name string) rewriteFile {
		return rewriteFile{path: name, bytes: bytes, day: day}
	}
	names := func(groups [][]rewriteFile) string {
		var out []string
		for _, g := range groups {
			var ns []string
			for _, x := range g {
				ns = append(ns, x.path)
			}
			out = append(out, fmt.Sprint(ns))
		}
		return fmt.Sprint(out)
	}
	files := []rewriteFile{
		f(2, 10, "a"), f(1, 10, "b"), f(2, 10, "c"), f(1, 100, "big"), f(1, 10, "d"), f(2, 10, "e"), f(3, 10, "lone"),
	}
	for _, tc := range []struct {
		name     string
		minFiles int
		small    int64
		maxBytes int64
		want     string
	}{
		{"both days due, days in order", 1, 50, 1000, "[[b d] [a c e]]"},
		{"only day 2 has more than 2", 2, 50, 1000, "[[a c e]]"},
		{"big files count once small", 2, 200, 1000, "[[b big d] [a c e]]"},
		{"budget: the first day whole", 1, 50, 25, "[[b d]]"},
		{"budget: the second day cut", 1, 50, 40, "[[b d] [a c]]"},
		{"budget: a group of one is not worth it", 1, 50, 30, "[[b d]]"},
		{"budget cuts the first day", 1, 200, 110, "[[b big]]"},
		{"budget below the first file: two still move", 1, 50, 5, "[[b d]]"},
		{"nothing due", 5, 50, 1000, "[]"},
	} {
		if got := names(planRewrite(files, tc.minFiles, tc.small, tc.maxBytes)); got != tc.want {
			t.Errorf("%s: planRewrite = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDayExpired(t *testing.T) {
	day := func(y int, m time.Month, d int) int32 {
		return int32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	}
	for _, tc := range []struct {
		day    int32
		cutoff time.Time
		want   bool
	}{
		{day(2026, 3, 1), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), true},     // ends exactly at the cutoff
		{day(2026, 3, 1), time.Date(2026, 3, 1, 23, 59, 59, 0, time.UTC), false}, // its last second is not older
		{day(2026, 3, 1), time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), true},
		{day(1969, 12, 31), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), true}, // negative days
		{day(1969, 12, 31), time.Date(1969, 12, 31, 12, 0, 0, 0, time.UTC), false},
		{day(2026, 3, 2), time.Date(2026, 3, 2, 0, 0, 0, 0, time.FixedZone("x", 3600)), false}, // the zone does not matter
	} {
		if got := DayExpired(tc.day, tc.cutoff); got != tc.want {
			t.Errorf("DayExpired(%d, %v) = %v, want %v", tc.day, tc.cutoff, got, tc.want)
		}
	}
}

// sortedRuns orders rows of several batches by partition and offset in
// as few runs as the batches allow, and refuses an offset twice.
func TestSortedRuns(t *testing.T) {
	mk := func(parts []int32, offs []int64) arrow.RecordBatch {
		pb := array.NewInt32Builder(memory.DefaultAllocator)
		ob := array.NewInt64Builder(memory.DefaultAllocator)
		pb.AppendValues(parts, nil)
		ob.AppendValues(offs, nil)
		pa, oa := pb.NewArray(), ob.NewArray()
		sc := arrow.NewSchema([]arrow.Field{{Name: ColPartition, Type: arrow.PrimitiveTypes.Int32}, {Name: ColOffset, Type: arrow.PrimitiveTypes.Int64}}, nil)
		return array.NewRecordBatch(sc, []arrow.Array{pa, oa}, int64(len(parts)))
	}
	a := mk([]int32{0, 0, 1, 1}, []int64{0, 1, 0, 1})
	b := mk([]int32{0, 0, 1}, []int64{2, 3, 2})
	got, err := sortedRuns([]arrow.RecordBatch{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []run{{0, 0, 2}, {1, 0, 2}, {0, 2, 4}, {1, 2, 3}}
	if !slices.Equal(got, want) {
		t.Errorf("sortedRuns = %v, want %v", got, want)
	}
	if _, err := sortedRuns([]arrow.RecordBatch{a, a}); err == nil {
		t.Error("sortedRuns accepted an offset twice")
	}
}
