package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/floe-broker/floe/iceberg"
)

const tableUsage = `usage: floe table describe|scan TOPIC [flags]

Look at a topic's Iceberg table without a query engine, through the
catalog floe compactor writes (the same settings and flags: -postgres-url,
-s3-*, -iceberg-*), or floe dev's with -data DIR.

  describe TOPIC          the table's identifier, location, snapshots, rows,
                          data files, bytes and watermark per partition, and
                          its rejected table's identifier, rows and files
  scan TOPIC [-limit N]   the table's first rows

Run 'floe table describe -h' for the flags.
`

// runTable is `floe table describe|scan TOPIC`.
func runTable(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("table: a subcommand is required: describe or scan (see 'floe table -h')")
	}
	sub := args[0]
	var about string
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, tableUsage)
		return nil
	case "describe":
		about = "Print the topic's Iceberg table: identifier, location, snapshots, rows, data files, bytes, watermark per partition, and its rejected table's identifier, rows and files."
	case "scan":
		about = "Print the first rows of the topic's Iceberg table (key, value and header values quoted when UTF-8, else hex)."
	default:
		return fmt.Errorf("table: unknown subcommand %q: describe or scan (see 'floe table -h')", sub)
	}
	cmd := newCommand("floe table "+sub, "TOPIC", about+`

The catalog is floe compactor's (PostgreSQL and the S3 warehouse, with its
settings), or floe dev's with -data DIR.`, 1, 1)
	cf := registerConfig(cmd.fs, "compactor")
	data := cmd.fs.String("data", "", "read the tables of `floe dev -data DIR` (its SQLite catalog and warehouse folder) instead of PostgreSQL and S3")
	output := new(string)
	if sub == "describe" {
		output = outputFlag(cmd.fs)
	}
	var limit *int64
	if sub == "scan" {
		limit = cmd.fs.Int64("limit", 20, "rows to print at most")
	}
	pos, err := cmd.parse(args[1:], stdout)
	if err != nil {
		return err
	}
	if *output != "" {
		if err := checkOutput(*output); err != nil {
			return err
		}
	}
	if limit != nil && *limit < 1 {
		return fmt.Errorf("table scan: -limit %d must be at least 1", *limit)
	}
	load := cf.load
	if *data != "" {
		load = cf.read // floe dev's tables: PostgreSQL and S3 are not needed
	}
	conf, err := load(cmd.fs, os.Getenv)
	if err != nil {
		given := os.Getenv("FLOE_POSTGRES_URL") != "" || os.Getenv("FLOE_CONFIG") != ""
		cmd.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "postgres-url" || f.Name == "config" })
		if *data == "" && !given {
			// Most likely floe dev's tables, asked without -data.
			return fmt.Errorf("table %s: no catalog given: for floe dev's tables pass -data DIR (its data folder, ./data by default); "+
				"for floe compactor's, -postgres-url and the -s3-* flags (or -config FILE)", sub)
		}
		return err
	}
	icfg, err := tableCatalog(conf, *data)
	if err != nil {
		return fmt.Errorf("table %s: %w", sub, err)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := iceberg.Open(octx, icfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("table %s: %w", sub, err)
	}
	defer w.Close()
	topic := pos[0]
	if sub == "describe" {
		if *output == "json" {
			return describeTableJSON(ctx, w, topic, stdout)
		}
		return describeTable(ctx, w, topic, stdout)
	}
	return scanTable(ctx, w, topic, *limit, stdout)
}

// tableCatalog is the catalog of floe compactor's settings, or of floe
// dev's data folder.
func tableCatalog(conf Config, data string) (iceberg.Config, error) {
	if data != "" {
		if _, err := os.Stat(filepath.Join(data, "iceberg.db")); err != nil {
			return iceberg.Config{}, fmt.Errorf("no floe dev catalog in %s (iceberg.db): %w", data, err)
		}
		return conf.Iceberg.sqliteConfig(data)
	}
	// The configuration's checks made sure of postgres.url and s3.bucket.
	return conf.tablesConfig(), nil
}

// tableJSON is `floe table describe -o json`.
type tableJSON struct {
	Topic         string          `json:"topic"`
	Table         string          `json:"table"`
	Exists        bool            `json:"exists"`
	Location      string          `json:"location,omitempty"`
	SnapshotID    int64           `json:"snapshot_id,omitempty"`
	SnapshotTime  string          `json:"snapshot_time,omitempty"`
	Rows          int64           `json:"rows"`
	DataFiles     int64           `json:"data_files"`
	DataBytes     int64           `json:"data_bytes"`
	Watermark     map[int32]int64 `json:"watermark"`
	RejectedTable string          `json:"rejected_table,omitempty"`
	RejectedRows  int64           `json:"rejected_rows"`
	RejectedFiles int64           `json:"rejected_files"`
	RejectedBytes int64           `json:"rejected_bytes"`
}

// describeTableJSON prints topic's table's state as one JSON object.
func describeTableJSON(ctx context.Context, w *iceberg.Writer, topic string, out io.Writer) error {
	st, err := w.Describe(ctx, topic)
	if err != nil {
		return fmt.Errorf("table describe: %w", err)
	}
	id := w.Identifier(topic)
	j := tableJSON{Topic: topic, Table: id[0] + "." + id[1], Exists: st.Exists, Location: st.Location, SnapshotID: st.SnapshotID,
		Rows: st.Rows, DataFiles: int64(st.DataFiles), DataBytes: st.Bytes, Watermark: st.Watermark}
	if st.SnapshotID != 0 {
		j.SnapshotTime = st.SnapshotTime.UTC().Format(time.RFC3339)
	}
	if j.Watermark == nil {
		j.Watermark = map[int32]int64{}
	}
	if st.Exists {
		rj, err := w.DescribeRejected(ctx, topic)
		if err != nil {
			return fmt.Errorf("table describe: %w", err)
		}
		if rj.Exists {
			j.RejectedTable, j.RejectedRows, j.RejectedFiles, j.RejectedBytes = rj.Name, rj.Rows, int64(rj.DataFiles), rj.Bytes
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// describeTable prints topic's table's state.
func describeTable(ctx context.Context, w *iceberg.Writer, topic string, out io.Writer) error {
	st, err := w.Describe(ctx, topic)
	if err != nil {
		return fmt.Errorf("table describe: %w", err)
	}
	id := w.Identifier(topic)
	if !st.Exists {
		return fmt.Errorf("table describe: topic %q has no table %s.%s yet (the compactor creates it with the first append)", topic, id[0], id[1])
	}
	tbl, err := w.Load(ctx, topic)
	if err != nil {
		return fmt.Errorf("table describe: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "table\t%s\n", st.Name)
	fmt.Fprintf(tw, "topic\t%s\n", topic)
	fmt.Fprintf(tw, "location\t%s\n", st.Location)
	snaps := tbl.Metadata().Snapshots()
	if st.SnapshotID != 0 {
		fmt.Fprintf(tw, "last snapshot\t%d at %s\n", st.SnapshotID, st.SnapshotTime.Format(time.RFC3339))
	} else {
		fmt.Fprintf(tw, "last snapshot\tnone\n")
	}
	fmt.Fprintf(tw, "snapshots\t%d\n", len(snaps))
	fmt.Fprintf(tw, "rows\t%d\n", st.Rows)
	fmt.Fprintf(tw, "data files\t%d\n", st.DataFiles)
	fmt.Fprintf(tw, "data bytes\t%d (%s)\n", st.Bytes, humanBytes(st.Bytes))
	if err := tw.Flush(); err != nil {
		return err
	}
	// The rejected table (values the value schema could not convert),
	// in a block of its own.
	rj, err := w.DescribeRejected(ctx, topic)
	if err != nil {
		return fmt.Errorf("table describe: %w", err)
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if rj.Exists {
		fmt.Fprintf(tw, "rejected table\t%s\n", rj.Name)
		fmt.Fprintf(tw, "rejected rows\t%d\n", rj.Rows)
		fmt.Fprintf(tw, "rejected files\t%d, %d bytes (%s)\n", rj.DataFiles, rj.Bytes, humanBytes(rj.Bytes))
	} else {
		fmt.Fprintf(tw, "rejected rows\t0 (no rejected table)\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	parts := slices.Sorted(func(yield func(int32) bool) {
		for p := range st.Watermark {
			if !yield(p) {
				return
			}
		}
	})
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tWATERMARK")
	for _, p := range parts {
		fmt.Fprintf(tw, "%d\t%d\n", p, st.Watermark[p])
	}
	if len(parts) == 0 {
		fmt.Fprintln(tw, "(none)\t0")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(snaps) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SNAPSHOT\tTIME\tOPERATION\tADDED ROWS\tTOTAL ROWS\tWATERMARK")
		from := max(0, len(snaps)-10)
		for _, s := range snaps[from:] {
			op, added, total, wm := "", "", "", ""
			if s.Summary != nil {
				op = string(s.Summary.Operation)
				added, total = s.Summary.Properties["added-records"], s.Summary.Properties["total-records"]
				wm = s.Summary.Properties[iceberg.PropWatermark]
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.SnapshotID, time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339),
				op, cmp.Or(added, "0"), total, wm)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if from > 0 {
			fmt.Fprintf(out, "(the last 10 of %d snapshots)\n", len(snaps))
		}
	}
	return nil
}

// scanTable prints the first limit rows of topic's table.
func scanTable(ctx context.Context, w *iceberg.Writer, topic string, limit int64, out io.Writer) error {
	rows, err := w.Scan(ctx, topic, limit)
	if err != nil {
		return fmt.Errorf("table scan: %w", err)
	}
	slices.SortFunc(rows, func(a, b iceberg.Row) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	if int64(len(rows)) > limit {
		rows = rows[:limit]
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tOFFSET\tTIMESTAMP\tAPPEND_TIME\tKEY\tVALUE\tHEADERS")
	for _, r := range rows {
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, strconv.Quote(h.Key)+"="+showBytes(h.Value))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Partition, r.Offset, r.Timestamp.UTC().Format(time.RFC3339Nano),
			r.AppendTime.UTC().Format(time.RFC3339Nano), showBytes(r.Key), showBytes(r.Value), strings.Join(hs, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "(%d rows)\n", len(rows))
	return nil
}

// showBytes prints a key, value or header value: null, a quoted string
// when UTF-8, else 0x and hex; cut past 60 bytes.
func showBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	const max = 60
	cut := ""
	if len(b) > max {
		b, cut = b[:max], "…"
	}
	if utf8.Valid(b) {
		return strconv.Quote(string(b)) + cut
	}
	return fmt.Sprintf("0x%x%s", b, cut)
}
