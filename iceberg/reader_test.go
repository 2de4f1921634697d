package iceberg_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/kbatch"
)

// installReader copies the reader (iceberg/testdata/reader) to a
// temporary folder and installs its locked npm packages there. Without
// node and npm, or the registry, the test is skipped, except under
// CI=true, where it fails.
func installReader(t *testing.T) string {
	t.Helper()
	cannot := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (fails under CI=true)", args...)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannot("independent reader: %s not found: %v", tool, err)
		}
	}
	src := filepath.Join(testenv.RepoRoot(), "iceberg", "testdata", "reader")
	dir := filepath.Join(t.TempDir(), "reader")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		cannot("independent reader: npm ci: %v\n%s", err, out)
	}
	return dir
}

// serveTable serves the table files of w's catalog, byte for byte with
// range requests, at /obj?loc=LOCATION.
func serveTable(t *testing.T, ctx context.Context, w *iceberg.Writer, topic string) *httptest.Server {
	tbl, err := w.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		loc := r.URL.Query().Get("loc")
		f, err := fs.Open(loc)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusNotFound)
			return
		}
		defer f.Close()
		http.ServeContent(rw, r, path.Base(loc), time.Time{}, f)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readerRow is a row as read.mjs prints it.
type readerRow struct {
	Partition    int32  `json:"partition"`
	Offset       string `json:"offset"`
	TimestampMS  int64  `json:"timestamp_ms"`
	AppendTimeMS int64  `json:"append_time_ms"`
	Key          *string
	Value        *string
	Headers      []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

func unb64(t *testing.T, s *string) []byte {
	if s == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIndependentReader: icebird, a JavaScript Iceberg reader written by
// others, reads the table floe wrote (its metadata, Avro manifest list
// and manifests, Parquet files) and finds every row and column written,
// to its millisecond timestamps.
func TestIndependentReader(t *testing.T) {
	dir := installReader(t)
	forBackends(t, func(t *testing.T, cfg iceberg.Config) {
		ctx := testCtx(t)
		w, _ := icetest.Open(t, cfg, iceberg.Options{})
		const topic = "reader.test"
		var written []iceberg.Row
		from := iceberg.Watermark{}
		for round := range 2 { // two snapshots: two manifests to read
			rows, wm := genRows(uint64(20+round), 3, 25, from)
			for i := range rows { // the reader has milliseconds
				rows[i].Timestamp = rows[i].Timestamp.Truncate(time.Millisecond)
				rows[i].AppendTime = rows[i].AppendTime.Truncate(time.Millisecond)
			}
			if _, err := w.Append(ctx, topic, rows, wm); err != nil {
				t.Fatal(err)
			}
			written, from = append(written, rows...), wm
		}
		tbl, err := w.Load(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var got []iceberg.Row
		for _, line := range icebird(t, ctx, dir, w, topic) {
			var r readerRow
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("icebird output %q: %v", line, err)
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
		got, want := normal(got), normal(written)
		if len(got) != len(want) {
			t.Fatalf("icebird read %d rows, want %d", len(got), len(want))
		}
		for i := range want {
			if !rowEqual(got[i], want[i]) {
				t.Fatalf("icebird row %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
		t.Logf("icebird read %d rows from %s", len(got), tbl.MetadataLocation())
		icebirdTyped(t, ctx, dir, w)
	})
}

// icebird runs read.mjs on topic's table and returns its output lines.
func icebird(t *testing.T, ctx context.Context, dir string, w *iceberg.Writer, topic string) [][]byte {
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
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	return lines
}

// icebirdTyped: icebird reads a table with typed columns added by an
// evolution: rows of the first snapshot (written before the column) read
// value_fields as null, the others as written.
func icebirdTyped(t *testing.T, ctx context.Context, dir string, w *iceberg.Writer) {
	const topic = "reader.typed"
	before, wm := typedRows([]typedCase{{value: `{"id":1}`}, {value: `raw`}}, 0, 0)
	if _, err := w.Append(ctx, topic, before, wm); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ value, want string }{
		{`{"id":2,"name":"b","score":2.5,"ok":true,"at":"2024-03-01T10:00:00.123Z","user":{"name":"u","tags":["x"]},"nums":[1,null]}`,
			`{"at":"2024-03-01T10:00:00.123Z","id":"2","name":"b","nums":["1",null],"ok":true,"score":2.5,"user":{"name":"u","tags":["x"]}}`},
		{`{"id":3}`, `{"at":null,"id":"3","name":null,"nums":null,"ok":null,"score":null,"user":null}`},
		{`{"id":"bad"}`, `null`},
		{"", `null`},
	}
	var tc []typedCase
	for _, c := range cases {
		tc = append(tc, typedCase{value: c.value})
	}
	after, wm2 := typedRows(tc, 0, wm[0])
	appendTyped(t, w, topic, parseSchema(t, typedV1), after, wm2)
	got := map[string]string{}
	for _, line := range icebird(t, ctx, dir, w, topic) {
		var r struct {
			Offset      string          `json:"offset"`
			ValueFields json.RawMessage `json:"value_fields"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("icebird output %q: %v", line, err)
		}
		got[r.Offset] = normalJSON(t, r.ValueFields)
	}
	want := map[string]string{"0": "null", "1": "null"}
	for i, c := range cases {
		want[strconv.Itoa(len(before)+i)] = normalJSON(t, []byte(c.want))
	}
	if len(got) != len(want) {
		t.Errorf("icebird read %d typed rows, want %d: %v", len(got), len(want), got)
	}
	for off, w := range want {
		if got[off] != w {
			t.Errorf("icebird offset %s value_fields:\n got %s\nwant %s", off, got[off], w)
		}
	}
}

// normalJSON re-encodes a JSON value with sorted keys and without the
// null fields of objects: icebird leaves a null struct or list field
// out of its struct, where Go's reader has it null.
func normalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("JSON %q: %v", b, err)
	}
	var drop func(v any) any
	drop = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if e == nil {
					delete(v, k)
				} else {
					v[k] = drop(e)
				}
			}
		case []any:
			for i, e := range v {
				v[i] = drop(e)
			}
		}
		return v
	}
	out, _ := json.Marshal(drop(v))
	return string(out)
}
