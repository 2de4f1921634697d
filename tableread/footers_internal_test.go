package tableread

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// TestFootersKept: a file read twice has its footer parsed once, and
// decodes the same; another file put at the same path (another size) is
// parsed afresh and decodes to its own rows, not to the kept footer's.
func TestFootersKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	rows := seedRows()
	_, first := appendFiles(t, ctx, w, rows[:15], iceberg.Watermark{0: 15})
	_, all := appendFiles(t, ctx, w, rows[15:], iceberg.Watermark{0: int64(len(rows))})
	var second string
	for _, task := range all {
		if task.File.FilePath() != first[0].File.FilePath() {
			second = strings.TrimPrefix(task.File.FilePath(), "file://")
		}
	}
	path := filepath.Join(t.TempDir(), "data.parquet")
	put := func(from string) int64 {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return int64(len(data))
	}
	ft := newFooters()
	decode := func() []row {
		t.Helper()
		var got []row
		var a arena
		if err := decodeFile(ctx, iceio.LocalFS{}, path, memory.NewGoAllocator(), ft, decodeRange{all: true}, &a, func(r row) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(got []row, want []iceberg.Row) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].rec.Offset != want[i].Offset {
				t.Fatalf("row %d at offset %d, want %d", i, got[i].rec.Offset, want[i].Offset)
			}
		}
	}
	size1 := put(strings.TrimPrefix(first[0].File.FilePath(), "file://"))
	check(decode(), rows[:15])
	check(decode(), rows[:15])
	if kept, hits := ft.stats(); kept != 1 || hits != 1 {
		t.Fatalf("after two reads of one file: %d footers kept, %d hits; want 1 and 1", kept, hits)
	}
	if size2 := put(second); size2 == size1 {
		t.Fatalf("both files are %d bytes: the test needs two sizes", size1)
	}
	check(decode(), rows[15:])
	if kept, hits := ft.stats(); kept != 2 || hits != 1 {
		t.Fatalf("after the other file: %d footers kept, %d hits; want 2 and 1", kept, hits)
	}
}
