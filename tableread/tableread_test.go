package tableread_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/tableread"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

// rowsOf builds rows of partitions 0..parts-1, offsets [from, to) but
// those gap leaves out, over three days of timestamps (so that each
// append writes several files whose offsets interleave).
func rowsOf(parts int32, from, to int64, gap func(p int32, off int64) bool) ([]iceberg.Row, iceberg.Watermark) {
	var rows []iceberg.Row
	wm := iceberg.Watermark{}
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for p := range parts {
		for off := from; off < to; off++ {
			if gap != nil && gap(p, off) {
				continue
			}
			r := iceberg.Row{Partition: p, Offset: off, Timestamp: day.Add(time.Duration(off%3) * 24 * time.Hour).Add(time.Duration(off) * time.Millisecond),
				AppendTime: day, Value: []byte(fmt.Sprintf(`{"p":%d,"o":%d,"pad":"%s"}`, p, off, strings.Repeat("x", int(off%50))))}
			if off%4 != 0 {
				r.Key = []byte(fmt.Sprintf("k%d", off%7))
			}
			if off%5 == 0 {
				r.Headers = []kbatch.Header{{Key: "h", Value: []byte("v")}, {Key: "null"}}
			}
			if off%11 == 0 {
				r.Value = nil
			}
			rows = append(rows, r)
		}
		wm[p] = to
	}
	return rows, wm
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// appendSequential appends parts partitions of per records each to
// topic, offsets from 0, in appends of chunk records per partition;
// record off has timestamp day + off ms and the key and value kv gives.
func appendSequential(tb testing.TB, ctx context.Context, w *iceberg.Writer, topic string, parts int32, per, chunk int64,
	day time.Time, kv func(p int32, off int64) (key, value []byte)) {
	tb.Helper()
	for from := int64(0); from < per; from += chunk {
		var rows []iceberg.Row
		wm := iceberg.Watermark{}
		for p := range parts {
			for off := from; off < from+chunk; off++ {
				k, v := kv(p, off)
				rows = append(rows, iceberg.Row{Partition: p, Offset: off, Timestamp: day.Add(time.Duration(off) * time.Millisecond), AppendTime: day,
					Key: k, Value: v})
			}
			wm[p] = from + chunk
		}
		if _, err := w.Append(ctx, topic, rows, wm); err != nil {
			tb.Fatal(err)
		}
	}
}

// parquetFiles lists the data files under a warehouse directory.
func parquetFiles(warehouse string) map[string]bool {
	got := map[string]bool{}
	_ = filepath.Walk(warehouse, func(path string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			got[path] = true
		}
		return nil
	})
	return got
}

// readAll reads partition p from offset from below end in reads of
// budget bytes and returns the records in the order served. Each read's
// batches are handed back to the reader once decoded (ReadOwned), and
// the records it returns are copies.
func readAll(t *testing.T, r *tableread.Reader, topic string, p int32, from, end int64, budget int) []kbatch.Record {
	t.Helper()
	var out []kbatch.Record
	for next := from; next < end; {
		bs, free, err := r.ReadOwned(ctxT(t), topic, p, next, end, budget)
		if err != nil {
			t.Fatalf("Read(%d, %d): %v", p, next, err)
		}
		if len(bs) == 0 {
			free()
			break
		}
		for _, b := range bs {
			info, recs, err := kbatch.DecodeStored(b.Data, 1<<24)
			if err != nil {
				t.Fatalf("a rebuilt batch does not decode: %v", err)
			}
			if info.BaseOffset != b.BaseOffset || int32(len(recs)) != b.Records || recs[len(recs)-1].Offset != b.LastOffset {
				t.Fatalf("batch %+v does not match its header %+v", b, info)
			}
			for _, rec := range recs {
				out = append(out, cloneRecord(rec))
			}
			next = b.LastOffset + 1
		}
		free()
	}
	return out
}

// cloneRecord is rec with bytes of its own.
func cloneRecord(rec kbatch.Record) kbatch.Record {
	rec.Key, rec.Value = bytes.Clone(rec.Key), bytes.Clone(rec.Value)
	if rec.Headers == nil {
		return rec
	}
	hs := make([]kbatch.Header, len(rec.Headers))
	for i, h := range rec.Headers {
		hs[i] = kbatch.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
	}
	rec.Headers = hs
	return rec
}

func TestReadRebuildsRecords(t *testing.T) {
	for _, be := range icetest.Backends {
		t.Run(be.Name, func(t *testing.T) {
			w, _ := icetest.Open(t, be.Config(t), iceberg.Options{})
			ctx := ctxT(t)
			const topic = "orders"
			gap := func(p int32, off int64) bool { return off >= 40 && off < 47 } // a compacted gap
			rows, wm := rowsOf(2, 0, 120, gap)
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
			more, wm2 := rowsOf(2, 120, 200, nil)
			if _, err := w.Append(ctx, topic, more, wm2); err != nil {
				t.Fatal(err)
			}
			cfg := tableread.DefaultConfig()
			cfg.MaxBatchBytes = 700
			r, err := tableread.New(w, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]iceberg.Row{}
			for _, row := range append(rows, more...) {
				if row.Partition == 1 {
					want[row.Offset] = row
				}
			}
			for _, budget := range []int{1, 900, 1 << 20} {
				got := readAll(t, r, topic, 1, 3, 180, budget)
				var n int
				for off := int64(3); off < 180; off++ {
					if _, ok := want[off]; ok {
						n++
					}
				}
				if len(got) != n {
					t.Fatalf("budget %d: %d records, want %d", budget, len(got), n)
				}
				for i, rec := range got {
					row, ok := want[rec.Offset]
					if !ok || i > 0 && rec.Offset <= got[i-1].Offset {
						t.Fatalf("budget %d: record %d at offset %d: not in the table or out of order", budget, i, rec.Offset)
					}
					if rec.Timestamp != row.Timestamp.UnixMilli() || !bytes.Equal(rec.Key, row.Key) || (rec.Key == nil) != (row.Key == nil) ||
						!bytes.Equal(rec.Value, row.Value) || (rec.Value == nil) != (row.Value == nil) || len(rec.Headers) != len(row.Headers) {
						t.Fatalf("budget %d: offset %d: %+v, want %+v", budget, rec.Offset, rec, row)
					}
					for j, h := range rec.Headers {
						if h.Key != row.Headers[j].Key || !bytes.Equal(h.Value, row.Headers[j].Value) || (h.Value == nil) != (row.Headers[j].Value == nil) {
							t.Fatalf("offset %d header %d: %+v, want %+v", rec.Offset, j, h, row.Headers[j])
						}
					}
				}
			}
			// A budget bounds a read (one batch at least).
			bs, err := r.Read(ctx, topic, 1, 0, 200, 2000)
			if err != nil || len(bs) == 0 {
				t.Fatalf("Read: %v, %v", bs, err)
			}
			var size int
			for _, b := range bs {
				size += len(b.Data)
			}
			if size > 2000+cfg.MaxBatchBytes {
				t.Errorf("a read of budget 2000 returned %d bytes", size)
			}
			// Inside the gap, the read starts after it; at the end, nothing.
			if bs, err := r.Read(ctx, topic, 1, 41, 200, 100); err != nil || len(bs) == 0 || bs[0].BaseOffset != 47 {
				t.Errorf("Read in the gap: %+v, %v; want the batch at 47", bs, err)
			}
			// A gap that runs up to the raw log start: nothing, the caller
			// reads the raw log from there.
			if bs, err := r.Read(ctx, topic, 1, 41, 47, 100); err != nil || len(bs) != 0 {
				t.Errorf("Read of a gap up to the raw log start: %+v, %v", bs, err)
			}
			// Past the table's watermark, below the raw log start the
			// caller names: offsets in neither, DataLoss.
			if bs, err := r.Read(ctx, topic, 1, 200, 500, 100); !errors.Is(err, tableread.ErrDataLoss) || len(bs) != 0 {
				t.Errorf("Read past the table: %+v, %v; want ErrDataLoss", bs, err)
			}
			if first, ok, err := r.Earliest(ctx, topic, 0, 1000); err != nil || !ok || first != 0 {
				t.Errorf("Earliest = %d, %v, %v; want 0", first, ok, err)
			}
			if _, ok, err := r.Earliest(ctx, topic, 7, 1000); err != nil || ok {
				t.Errorf("Earliest of a partition the table lacks = %v, %v", ok, err)
			}
		})
	}
}

// TestReadCorruptFile: a data file overwritten with garbage is DataLoss,
// never a wrong record.
func TestReadCorruptFile(t *testing.T) {
	cfg := icetest.SQLiteConfig(t)
	w, _ := icetest.Open(t, cfg, iceberg.Options{})
	ctx := ctxT(t)
	rows, wm := rowsOf(1, 0, 50, nil)
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	files := parquetFiles(cfg.Warehouse)
	if len(files) == 0 {
		t.Fatal("no data file")
	}
	for f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i := 4; i < len(data)-8; i++ {
			data[i] ^= 0x5a
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := tableread.New(w, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	bs, err := r.Read(ctx, "t", 0, 0, 50, 1<<20)
	if !errors.Is(err, tableread.ErrDataLoss) || len(bs) != 0 {
		t.Fatalf("Read of a corrupt file: %d batches, %v; want ErrDataLoss", len(bs), err)
	}
}

// TestReadahead: a scan keeps the rows past its answer, of its partition
// and the others it decoded, within ReadaheadBytes; the kept rows serve
// the next reads exactly as the table does.
func TestReadahead(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx := ctxT(t)
	rows, wm := rowsOf(3, 0, 300, nil)
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{0, 4000, 64 << 20} {
		cfg := tableread.DefaultConfig()
		cfg.ReadaheadBytes = limit
		r, err := tableread.New(w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			got := readAll(t, r, "t", p, 0, 300, 1000)
			if len(got) != 300 || got[0].Offset != 0 || got[299].Offset != 299 {
				t.Fatalf("limit %d partition %d: %d records", limit, p, len(got))
			}
			if held := tableread.Held(r); held > limit || limit >= 64<<20 && held == 0 {
				t.Fatalf("limit %d: %d bytes kept", limit, held)
			}
		}
	}
}

// TestNoTable: a topic without a table holds nothing: no batch, no
// earliest offset, no error.
func TestNoTable(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	r, err := tableread.New(w, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if bs, err := r.Read(ctxT(t), "none", 0, 0, 100, 1000); err != nil || len(bs) != 0 {
		t.Errorf("Read = %v, %v", bs, err)
	}
	if _, ok, err := r.Earliest(ctxT(t), "none", 0, 100); err != nil || ok {
		t.Errorf("Earliest = %v, %v", ok, err)
	}
}

// TestReadStaleSnapshot: a read below a raw log start that a newer
// snapshot of the table let retention move (the reader's snapshot, and
// the rows it kept ahead, older than that) serves every offset once, in
// order: the reader loads the table afresh rather than take the stale
// snapshot's silence for a gap. A fresh table that still does not hold
// offsets below the raw log start is DataLoss, never a skip.
func TestReadStaleSnapshot(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx := ctxT(t)
	rows, wm := rowsOf(2, 0, 100, nil)
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	cfg := tableread.DefaultConfig()
	cfg.TableTTL = time.Hour // the snapshot stays cached: only the reader's rule reloads it
	r, err := tableread.New(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The raw log start is already 200 (retention saw a newer snapshot);
	// the reader's snapshot holds [0, 100).
	bs, err := r.Read(ctx, "t", 0, 0, 200, 1<<20)
	if err != nil || len(bs) == 0 || bs[0].BaseOffset != 0 {
		t.Fatalf("first Read: %+v, %v", bs, err)
	}
	next := bs[len(bs)-1].LastOffset + 1
	more, wm2 := rowsOf(2, 100, 200, nil)
	if _, err := w.Append(ctx, "t", more, wm2); err != nil {
		t.Fatal(err)
	}
	for p, from := range map[int32]int64{0: next, 1: 0} {
		got := readAll(t, r, "t", p, from, 200, 1000)
		if int64(len(got)) != 200-from {
			t.Fatalf("partition %d from %d: %d records, want %d", p, from, len(got), 200-from)
		}
		for i, rec := range got {
			if rec.Offset != from+int64(i) {
				t.Fatalf("partition %d: record %d at offset %d, want %d", p, i, rec.Offset, from+int64(i))
			}
		}
	}
	// [200, 300) is in neither the table nor (the caller says) the raw log.
	if bs, err := r.Read(ctx, "t", 0, 200, 300, 1000); !errors.Is(err, tableread.ErrDataLoss) || len(bs) != 0 {
		t.Fatalf("Read of offsets the fresh table lacks: %d batches, %v; want ErrDataLoss", len(bs), err)
	}
}

// TestReadaheadShared: partitions catching up together, read in turn,
// share every scan of the table: the rows a scan for one partition
// decoded of the others extend what they kept, so four partitions take
// about the scans one alone does (each scanned the table for itself
// past its first window before).
// readNext reads partition p of topic "t" once from next[p] below end
// (budget bytes), checks that the records follow on from next[p] one by
// one, advances next[p] past them and hands each to each.
func readNext(t *testing.T, r *tableread.Reader, p int32, next map[int32]int64, end int64, budget int, each func(kbatch.Record)) {
	t.Helper()
	bs, err := r.Read(ctxT(t), "t", p, next[p], end, budget)
	if err != nil || len(bs) == 0 {
		t.Fatalf("partition %d at %d: %d batches, %v", p, next[p], len(bs), err)
	}
	for _, b := range bs {
		_, recs, err := kbatch.DecodeStored(b.Data, 1<<24)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Offset != next[p] {
				t.Fatalf("partition %d: offset %d, want %d", p, rec.Offset, next[p])
			}
			each(rec)
			next[p]++
		}
	}
}

func TestReadaheadShared(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx := ctxT(t)
	// Six appends of 500 offsets each (as compactor passes write them):
	// a scan reads on past its window to the first file it does not
	// decode, so a partition takes several scans.
	for from := int64(0); from < 3000; from += 500 {
		rows, wm := rowsOf(4, from, from+500, nil)
		if _, err := w.Append(ctx, "t", rows, wm); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tableread.DefaultConfig()
	cfg.WindowBytes = 60 << 10 // several windows a partition
	reader := func() *tableread.Reader {
		r, err := tableread.New(w, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	alone := reader()
	if got := readAll(t, alone, "t", 0, 0, 3000, 4000); len(got) != 3000 {
		t.Fatalf("one partition alone: %d records", len(got))
	}
	r := reader()
	next := map[int32]int64{}
	for done := false; !done; {
		done = true
		for p := range int32(4) {
			if next[p] >= 3000 {
				continue
			}
			done = false
			bs, err := r.Read(ctx, "t", p, next[p], 3000, 4000)
			if err != nil || len(bs) == 0 {
				t.Fatalf("partition %d at %d: %d batches, %v", p, next[p], len(bs), err)
			}
			for _, b := range bs {
				if b.BaseOffset != next[p] {
					t.Fatalf("partition %d: a batch at %d, want %d", p, b.BaseOffset, next[p])
				}
				next[p] = b.LastOffset + 1
			}
		}
	}
	if one, four := tableread.Scans(alone), tableread.Scans(r); one < 3 || four > one+1 {
		t.Fatalf("one partition alone took %d scans, four in turn %d: want several, and at most one more", one, four)
	}
}

// TestPartitionsDecodedOnce: partitions catching up together at
// different speeds (partition 0 reads three times as often as the
// others) each get every record once, in order, and the scans decode
// little more than they serve: the rows a scan for one partition would
// decode of another that its read-ahead already holds, or would not
// take, are not decoded (they were, and thrown away: 1.31 times the
// bytes served here, 1.16 without them; the rest is files decoded whole
// for the decoded-file cache, of rows the read-ahead holds).
func TestPartitionsDecodedOnce(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{RowGroupRows: 128})
	ctx := ctxT(t)
	const per = 3000
	for from := int64(0); from < per; from += 500 {
		rows, wm := rowsOf(4, from, from+500, nil)
		if _, err := w.Append(ctx, "t", rows, wm); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tableread.DefaultConfig()
	cfg.WindowBytes = 64 << 10
	cfg.ReadaheadBytes = 384 << 10 // less than the table's rows, more than four partitions' windows
	r, err := tableread.New(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	var served int64
	read := func(p int32) {
		readNext(t, r, p, next, per, 4000, func(rec kbatch.Record) {
			served += int64(len(kbatch.AppendTail(nil, rec.Key, rec.Value, len(rec.Headers), func(j int) (string, []byte) {
				return rec.Headers[j].Key, rec.Headers[j].Value
			})))
		})
	}
	for done := false; !done; {
		done = true
		for p := range int32(4) {
			for range 1 + 2*int(1-min(p, 1)) {
				if next[p] < per {
					done = false
					read(p)
				}
			}
		}
	}
	decoded := tableread.TailsDecoded(r)
	if decoded < served || float64(decoded) > 1.2*float64(served) {
		t.Fatalf("the scans decoded %d bytes of tails to serve %d (%.2f×): want at most 1.2×", decoded, served, float64(decoded)/float64(served))
	}
	t.Logf("decoded %d bytes of tails to serve %d (%.3f×) in %d scans", decoded, served, float64(decoded)/float64(served), tableread.Scans(r))
}

// TestFileDecodedOnce: partitions catching up in small reads from a data
// file of one row group, far larger than a read's window, decode it once:
// the scan keeps the rows of the whole file it decoded (within
// ReadaheadBytes), not only its window's, so the next windows need no
// scan that decodes the same file again.
func TestFileDecodedOnce(t *testing.T) {
	cfg := icetest.SQLiteConfig(t)
	w, _ := icetest.Open(t, cfg, iceberg.Options{})
	ctx := ctxT(t)
	const parts, per = 4, 2000
	var rows []iceberg.Row
	wm := iceberg.Watermark{}
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for p := range int32(parts) {
		for off := int64(0); off < per; off++ {
			rows = append(rows, iceberg.Row{Partition: p, Offset: off, Timestamp: day.Add(time.Duration(off) * time.Millisecond), AppendTime: day,
				Key: []byte(fmt.Sprintf("k%d", off%7)), Value: []byte(fmt.Sprintf(`{"p":%d,"o":%d,"pad":"%s"}`, p, off, strings.Repeat("x", 40)))})
		}
		wm[p] = per
	}
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	files := 0
	_ = filepath.Walk(cfg.Warehouse, func(path string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			files++
		}
		return nil
	})
	if files != 1 {
		t.Fatalf("%d data files, want 1", files)
	}
	rcfg := tableread.DefaultConfig()
	rcfg.WindowBytes = 8 << 10 // a window of ~100 rows; the file holds 8,000
	r, err := tableread.New(w, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	for done := false; !done; {
		done = true
		for p := range int32(parts) {
			if next[p] >= per {
				continue
			}
			done = false
			readNext(t, r, p, next, per, 2<<10, func(rec kbatch.Record) {
				if !bytes.Equal(rec.Value, rows[int(p)*per+int(rec.Offset)].Value) {
					t.Fatalf("partition %d: offset %d: its value differs", p, rec.Offset)
				}
			})
		}
	}
	if scans, decoded := tableread.Scans(r), tableread.Decoded(r); scans != 1 || decoded != 1 {
		t.Fatalf("%d scans decoded %d data files; want the one file decoded once", scans, decoded)
	}
	if n := tableread.ViaArrow(r); n != 0 {
		t.Fatalf("%d data files of floe's layout read through the Arrow scan, not decoded from their column chunks", n)
	}
}

// TestFilesDecodedOnceAcrossScans: the compactor's files span several
// partitions whose offsets differ, so their offset bounds overlap: a
// scan stops short of a file it does not read (the next file's first
// offset), and the next scan needs again a file the last one decoded.
// It takes that file's rows kept decoded instead: each data file is
// decoded once over the scans.
func TestFilesDecodedOnceAcrossScans(t *testing.T) {
	cfg := icetest.SQLiteConfig(t)
	w, _ := icetest.Open(t, cfg, iceberg.Options{})
	ctx := ctxT(t)
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	want := map[int32][]iceberg.Row{}
	// File A: partition 0 [0, 1000), partition 1 [0, 100); file B:
	// partition 0 [1000, 1100), partition 1 [100, 1100).
	for _, pass := range [][4]int64{{0, 1000, 0, 100}, {1000, 1100, 100, 1100}} {
		var rows []iceberg.Row
		for p := range int32(2) {
			for off := pass[2*p]; off < pass[2*p+1]; off++ {
				r := iceberg.Row{Partition: p, Offset: off, Timestamp: day.Add(time.Duration(off) * time.Millisecond), AppendTime: day,
					Key: []byte(fmt.Sprintf("k%d", off%7)), Value: []byte(fmt.Sprintf(`{"p":%d,"o":%d}`, p, off))}
				rows = append(rows, r)
				want[p] = append(want[p], r)
			}
		}
		if _, err := w.Append(ctx, "t", rows, iceberg.Watermark{0: pass[1], 1: pass[3]}); err != nil {
			t.Fatal(err)
		}
	}
	rcfg := tableread.DefaultConfig()
	rcfg.WindowBytes = 1 << 10
	for _, cache := range []bool{false, true} {
		r, err := tableread.New(w, rcfg)
		if err != nil {
			t.Fatal(err)
		}
		if !cache {
			tableread.DropFiles(r)
		}
		for p := range int32(2) {
			got := readAll(t, r, "t", p, 0, 1100, 1<<10)
			if len(got) != len(want[p]) {
				t.Fatalf("partition %d: %d records, want %d", p, len(got), len(want[p]))
			}
			for i, rec := range got {
				if wr := want[p][i]; rec.Offset != wr.Offset || !bytes.Equal(rec.Key, wr.Key) || !bytes.Equal(rec.Value, wr.Value) {
					t.Fatalf("partition %d record %d: offset %d, want %d (or its key or value differs)", p, i, rec.Offset, wr.Offset)
				}
			}
		}
		scans, decoded := tableread.Scans(r), tableread.Decoded(r)
		if cache && tableread.FilesHeld(r) > rcfg.ReadaheadBytes {
			t.Fatalf("%d bytes of decoded files kept, over ReadaheadBytes %d", tableread.FilesHeld(r), rcfg.ReadaheadBytes)
		}
		switch {
		case cache && (scans < 2 || decoded != 2):
			t.Fatalf("%d scans decoded %d data files; want several scans, each of the 2 files decoded once", scans, decoded)
		case !cache && decoded <= 2:
			t.Fatalf("without the decoded files kept, %d scans decoded %d data files: the test needs a file decoded twice", scans, decoded)
		}
	}
}

// TestConcurrentReadsShareFiles: partitions read at once (as a
// consumer's fetches of them are served) share the decoded files and
// the rows kept ahead and each get every record once, in order (run
// with -race: the kept rows are read while other scans keep theirs).
func TestConcurrentReadsShareFiles(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx := ctxT(t)
	for from := int64(0); from < 1500; from += 500 {
		rows, wm := rowsOf(4, from, from+500, nil)
		if _, err := w.Append(ctx, "t", rows, wm); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tableread.DefaultConfig()
	cfg.WindowBytes = 4 << 10
	cfg.ReadaheadBytes = 128 << 10
	r, err := tableread.New(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for p := range int32(4) {
		go func() {
			next := int64(0)
			for next < 1500 {
				bs, err := r.Read(ctx, "t", p, next, 1500, 2<<10)
				if err != nil || len(bs) == 0 {
					errs <- fmt.Errorf("partition %d at %d: %d batches, %v", p, next, len(bs), err)
					return
				}
				for _, b := range bs {
					_, recs, err := kbatch.DecodeStored(b.Data, 1<<24)
					if err != nil {
						errs <- err
						return
					}
					for _, rec := range recs {
						if rec.Offset != next || !bytes.Contains(rec.Value, []byte(fmt.Sprintf(`"p":%d,"o":%d,`, p, next))) && rec.Value != nil {
							errs <- fmt.Errorf("partition %d: offset %d (value %q), want %d", p, rec.Offset, rec.Value, next)
							return
						}
						next++
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if held := tableread.FilesHeld(r); held > cfg.ReadaheadBytes {
		t.Fatalf("%d bytes of decoded files kept, over %d", held, cfg.ReadaheadBytes)
	}
}

// The Parquet decode's large buffers are reused from batch to batch
// (alloc.go). With every freed buffer poisoned, a record read from a
// buffer after its release would come out as garbage: every record must
// come back exactly as written, and buffers must have been reused.
func TestDecodeBuffersReusedSafely(t *testing.T) {
	w, _ := icetest.Open(t, icetest.SQLiteConfig(t), iceberg.Options{})
	ctx := ctxT(t)
	const topic, parts, per = "reuse", 2, 6000
	day := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	value := func(p int32, off int64) []byte {
		return []byte(fmt.Sprintf("p%d-o%d-%s", p, off, strings.Repeat(string(rune('a'+off%26)), 900+int(off%100))))
	}
	appendSequential(t, ctx, w, topic, parts, per, 2000, day, func(p int32, off int64) ([]byte, []byte) {
		return []byte(fmt.Sprintf("k%d", off)), value(p, off)
	})
	r, err := tableread.New(w, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r.Poison()
	for p := range int32(parts) {
		got := readAll(t, r, topic, p, 0, per, 1<<20)
		if len(got) != per {
			t.Fatalf("partition %d: %d records, want %d", p, len(got), per)
		}
		for i, rec := range got {
			off := int64(i)
			if rec.Offset != off || rec.Timestamp != day.Add(time.Duration(off)*time.Millisecond).UnixMilli() ||
				string(rec.Key) != fmt.Sprintf("k%d", off) || !bytes.Equal(rec.Value, value(p, off)) {
				t.Fatalf("partition %d, record %d: offset %d key %q value %.40q..., not as written", p, i, rec.Offset, rec.Key, rec.Value)
			}
		}
	}
	if _, reused := tableread.DecodeBuffers(r); reused == 0 {
		t.Fatal("no decode buffer was reused: the test shows nothing")
	}
	if _, reused := r.BatchBuffers(); reused == 0 {
		t.Fatal("no rebuilt batch's buffer was reused: the test shows nothing")
	}
}

// A data file read without the offset filter (its manifest's bounds lie
// inside the read) holding a row outside those bounds is corrupt:
// DataLoss, never the row. The file is swapped for a valid Parquet file
// of another topic's table, whose offsets its manifest entry does not
// cover.
func TestReadRowOutsideManifestBounds(t *testing.T) {
	cfg := icetest.SQLiteConfig(t)
	w, _ := icetest.Open(t, cfg, iceberg.Options{})
	ctx := ctxT(t)
	rows, wm := rowsOf(1, 0, 50, nil)
	if _, err := w.Append(ctx, "t", rows, wm); err != nil {
		t.Fatal(err)
	}
	mine := parquetFiles(cfg.Warehouse)
	other := make([]iceberg.Row, len(rows))
	for i, r := range rows {
		r.Offset += 1000
		other[i] = r
	}
	if _, err := w.Append(ctx, "u", other, iceberg.Watermark{0: 1050}); err != nil {
		t.Fatal(err)
	}
	var theirs string
	for f := range parquetFiles(cfg.Warehouse) {
		if !mine[f] {
			theirs = f
			break
		}
	}
	if len(mine) == 0 || theirs == "" {
		t.Fatalf("data files: %d of t, %q of u", len(mine), theirs)
	}
	data, err := os.ReadFile(theirs)
	if err != nil {
		t.Fatal(err)
	}
	for f := range mine {
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := tableread.New(w, tableread.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	bs, err := r.Read(ctx, "t", 0, 0, 50, 1<<20)
	if !errors.Is(err, tableread.ErrDataLoss) || len(bs) != 0 {
		t.Fatalf("Read of a file holding rows outside its bounds: %d batches, %v; want ErrDataLoss", len(bs), err)
	}
	if !strings.Contains(err.Error(), "outside the offsets") {
		t.Fatalf("DataLoss, but not from the bounds check: %v", err)
	}
}
