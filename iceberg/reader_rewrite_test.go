package iceberg_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path"
	"strconv"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/kbatch"
)

// readIcebird reads topic's table with icebird (see TestIndependentReader).
func readIcebird(t *testing.T, ctx context.Context, dir string, w *iceberg.Writer, topic string) []iceberg.Row {
	t.Helper()
	tbl, err := w.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTable(t, ctx, w, topic)
	cmd := exec.CommandContext(ctx, "node", "--import", "./register.mjs", "read.mjs",
		tbl.Location(), path.Base(tbl.MetadataLocation()), srv.URL)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("icebird: %v\n%s", err, stderr.String())
	}
	var got []iceberg.Row
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r readerRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("icebird output %q: %v", sc.Text(), err)
		}
		off, err := strconv.ParseInt(r.Offset, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		row := iceberg.Row{Partition: r.Partition, Offset: off,
			Timestamp: time.UnixMilli(r.TimestampMS), AppendTime: time.UnixMilli(r.AppendTimeMS),
			Key: unb64(t, r.Key), Value: unb64(t, r.Value)}
		for _, h := range r.Headers {
			row.Headers = append(row.Headers, kbatch.Header{Key: h.Key, Value: unb64(t, h.Value)})
		}
		got = append(got, row)
	}
	return got
}

// TestIndependentReaderAfterRewrite: after small files are rewritten
// (a replace snapshot whose manifests list the old files as deleted),
// icebird still reads every row exactly once.
func TestIndependentReaderAfterRewrite(t *testing.T) {
	dir := installReader(t)
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "rewritten"
		day := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
		var written []iceberg.Row
		from := iceberg.Watermark{}
		for round := range 4 {
			rows, wm := dayRows(uint64(100+round), 2, 8, from, day, day.AddDate(0, 0, 1))
			for i := range rows { // the reader has milliseconds
				rows[i].AppendTime = rows[i].AppendTime.Truncate(time.Millisecond)
			}
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
			written, from = append(written, rows...), wm
		}
		res, err := w.RewriteSmallFiles(ctx, topic, iceberg.RewriteOptions{MinFiles: 2})
		if err != nil || res.FilesRemoved != 8 || res.FilesAdded != 2 {
			t.Fatalf("rewrite = %+v, %v; want 8 files into 2", res, err)
		}
		got, want := normal(readIcebird(t, ctx, dir, w, topic)), normal(written)
		if len(got) != len(want) {
			t.Fatalf("icebird read %d rows, want %d", len(got), len(want))
		}
		for i := range want {
			if !rowEqual(got[i], want[i]) {
				t.Fatalf("icebird row %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
	})
}
