package icetest

import (
	"context"
	"io"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floe-broker/floe/iceberg"
)

// CorruptDataFiles overwrites every data file of topic's table, through
// the table's own file IO, with its bytes scrambled (magic and footer
// length kept): a reader must see them fail to decode.
func CorruptDataFiles(ctx context.Context, t testing.TB, w *iceberg.Writer, topic string) {
	t.Helper()
	tbl, err := w.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil || len(tasks) == 0 {
		t.Fatalf("icetest: data files: %d, %v", len(tasks), err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		t.Fatalf("icetest: the table's IO %T cannot write", fsys)
	}
	for _, task := range tasks {
		f, err := fsys.Open(task.File.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i := 4; i < len(b)-8; i++ {
			b[i] ^= 0x5a
		}
		if err := wfs.WriteFile(task.File.FilePath(), b); err != nil {
			t.Fatal(err)
		}
	}
}
