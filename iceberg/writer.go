package iceberg

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/floe-broker/floe/schema"
)

// Defaults of Options.
const (
	DefaultNamespace      = "floe"
	DefaultTargetFileSize = 128 << 20
	DefaultMaxAttempts    = 5
	DefaultRetryWait      = 100 * time.Millisecond
	// DefaultRowGroupRows caps a Parquet row group's rows. The row
	// groups' size in bytes is counted compressed: records that compress
	// well (JSON of repeated fields: 170 to 1 in floe-bench's) made row
	// groups of whole partitions, tens of MiB of rows that a table read
	// decodes whole for any window of them. Rows sorted by partition and
	// offset, a row group of 4,096 holds a narrow offset range of one or
	// two partitions: its statistics let a read decode about what it
	// serves.
	DefaultRowGroupRows = 4096
)

// Options tune a Writer. The zero value of a field takes its default.
type Options struct {
	// Namespace holds the topics' tables (ValidateNamespace).
	Namespace string
	// TargetFileSize is the size at which a data file is closed and the
	// next one started; one append may write several.
	TargetFileSize int64
	// MaxAttempts bounds the commits one Append tries before it gives up
	// with ErrCommitFailed.
	MaxAttempts int
	// RetryWait is the first wait between two attempts; it doubles.
	RetryWait time.Duration
	// BatchRows is the rows per Arrow batch given to the Parquet writer.
	BatchRows int
	// RowGroupRows caps the rows of one Parquet row group (besides the
	// table's write.parquet.row-group-size-bytes).
	RowGroupRows int
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryWait <= 0 {
		o.RetryWait = DefaultRetryWait
	}
	if o.BatchRows <= 0 {
		o.BatchRows = defaultBatchRows
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	return o
}

// Writer creates topics' tables and appends records to them through an
// Iceberg catalog. It holds no state between calls besides its
// configuration: any number of Writers, in any processes, may append to
// the same table; exactly once holds through the watermark (Append).
type Writer struct {
	cat   catalog.Catalog
	opts  Options
	log   *slog.Logger
	close func() error // releases what Open opened; nil for NewWriter
	aws   *aws.Config  // Open's on an S3 warehouse: its writes are conditional (conditional.go)
}

// NewWriter returns a Writer over cat. Closing it does not close cat.
func NewWriter(cat catalog.Catalog, opts Options, log *slog.Logger) (*Writer, error) {
	opts = opts.withDefaults()
	if err := ValidateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Writer{cat: cat, opts: opts, log: log}, nil
}

// Close releases the catalog's database handle when Open opened it.
func (w *Writer) Close() error {
	if w.close == nil {
		return nil
	}
	return w.close()
}

// Catalog returns the catalog the Writer commits through.
func (w *Writer) Catalog() catalog.Catalog { return w.cat }

// Identifier returns the catalog identifier of topic's table.
func (w *Writer) Identifier(topic string) table.Identifier {
	return table.Identifier{w.opts.Namespace, TableName(topic)}
}

// missing reports whether err says that a table or its namespace does
// not exist.
func missing(err error) bool {
	return errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace)
}

// tableKind tells a topic's table from its rejected table (rejected.go).
type tableKind uint8

const (
	mainTable tableKind = iota
	rejectedTable
)

func (k tableKind) String() string {
	if k == rejectedTable {
		return "rejected table"
	}
	return "table"
}

// identifier returns the catalog identifier of topic's table of kind k.
func (w *Writer) identifier(topic string, k tableKind) table.Identifier {
	if k == rejectedTable {
		return table.Identifier{w.opts.Namespace, RejectedTableName(topic)}
	}
	return w.Identifier(topic)
}

// Load returns topic's table; an error wrapping catalog.ErrNoSuchTable or
// catalog.ErrNoSuchNamespace when it does not exist.
func (w *Writer) Load(ctx context.Context, topic string) (*table.Table, error) {
	return w.load(ctx, topic, mainTable)
}

// load returns topic's table of kind k.
func (w *Writer) load(ctx context.Context, topic string, k tableKind) (*table.Table, error) {
	tbl, err := w.cat.LoadTable(ctx, w.identifier(topic, k))
	if err != nil {
		return nil, fmt.Errorf("iceberg: load %s of topic %q: %w", k, topic, err)
	}
	if got := tbl.Properties()[PropTopic]; got != topic {
		return nil, fmt.Errorf("%w: table %v holds topic %q, not %q", ErrInvalidName, tbl.Identifier(), got, topic)
	}
	return tbl, nil
}

// TableOption is an option of EnsureTable.
type TableOption func(*tableOptions)

type tableOptions struct {
	vs *schema.Schema
}

// WithValueSchema gives EnsureTable the topic's value schema: the table
// gets its typed columns (typed.go), created with the table or added to
// it.
func WithValueSchema(vs *schema.Schema) TableOption {
	return func(o *tableOptions) { o.vs = vs }
}

// EnsureTable returns topic's table, creating it (and the namespace)
// when missing. Concurrent calls, from any process, create it once. With
// WithValueSchema, the table's schema is evolved to hold the schema's
// typed columns: fields missing from the table are added (new field
// ids; existing fields keep theirs). A column whose type differs from
// the schema's is not changed: EnsureTable then returns the table and an
// error wrapping ErrSchemaConflict.
func (w *Writer) EnsureTable(ctx context.Context, topic string, opts ...TableOption) (*table.Table, error) {
	ctx = w.writes(ctx)
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	want := Schema(o.vs)
	tbl, err := w.ensure(ctx, topic, mainTable, want)
	if err != nil || o.vs == nil {
		return tbl, err
	}
	return w.evolve(ctx, topic, tbl, want)
}

// dictColumnKey prefixes the table property that turns a column's
// dictionary encoding on or off (iceberg-go honours it; the name is
// Iceberg's, not exported by iceberg-go's table package).
const dictColumnKey = "write.parquet.dict-encoding-enabled.column."

// ensure returns topic's table of kind k, creating it with sc when
// missing.
func (w *Writer) ensure(ctx context.Context, topic string, k tableKind, sc *icego.Schema) (*table.Table, error) {
	tbl, err := w.load(ctx, topic, k)
	if err == nil || !missing(err) {
		return tbl, err
	}
	ns := table.Identifier{w.opts.Namespace}
	if err := w.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("iceberg: create namespace %q: %w", w.opts.Namespace, err)
	}
	spec, err := PartitionSpec(sc)
	if err != nil {
		return nil, err
	}
	props := icego.Properties{
		PropTopic:                         topic,
		"format-version":                  "2",
		table.ParquetCompressionKey:       "zstd",
		table.WriteTargetFileSizeBytesKey: strconv.FormatInt(w.opts.TargetFileSize, 10),
		// A file is closed at the first row group flushed past the
		// target, and row groups grow as pages are flushed (a column's
		// dictionary is not counted until it spills): row groups of a
		// quarter of the target, pages and dictionaries of a sixteenth
		// (at most the defaults) keep files near it.
		table.ParquetRowGroupSizeBytesKey: strconv.FormatInt(min(w.opts.TargetFileSize/4+1, table.ParquetRowGroupSizeBytesDefault), 10),
		table.ParquetPageSizeBytesKey:     strconv.FormatInt(min(w.opts.TargetFileSize/16+1, table.ParquetPageSizeBytesDefault), 10),
		table.ParquetDictSizeBytesKey:     strconv.FormatInt(min(w.opts.TargetFileSize/16+1, table.ParquetDictSizeBytesDefault), 10),
		// Record values are mostly distinct: a dictionary of them is
		// their plain copy plus an index (the whole row group's values
		// in one dictionary page read back as one buffer), no smaller
		// once zstd has it and slower to read back (tableread).
		dictColumnKey + ColValue:                     "false",
		table.MetadataDeleteAfterCommitEnabledKey:    "true",
		table.MetadataPreviousVersionsMaxKey:         "20",
		table.DefaultWriteMetricsModeKey:             "truncate(16)",
		table.MetricsModeColumnConfPrefix + ".key":   "none",
		table.MetricsModeColumnConfPrefix + ".value": "none",
	}
	_, err = w.cat.CreateTable(ctx, w.identifier(topic, k), sc,
		catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil && !errors.Is(err, catalog.ErrTableAlreadyExists) {
		return nil, fmt.Errorf("iceberg: create %s of topic %q: %w", k, topic, err)
	}
	if err == nil {
		w.log.Info("iceberg: created table", "topic", topic, "table", w.identifier(topic, k))
	}
	return w.load(ctx, topic, k)
}

// tableWatermark reads tbl's watermark property.
func tableWatermark(tbl *table.Table) (Watermark, error) {
	wm, err := ParseWatermark(tbl.Properties()[PropWatermark])
	if err != nil {
		return nil, fmt.Errorf("table %v: property %s: %w", tbl.Identifier(), PropWatermark, err)
	}
	return wm, nil
}

// Watermark returns topic's table's watermark: per partition, the next
// offset it does not hold. A table that does not exist yet holds
// nothing: its watermark is empty.
func (w *Writer) Watermark(ctx context.Context, topic string) (Watermark, error) {
	tbl, err := w.Load(ctx, topic)
	if missing(err) {
		return Watermark{}, nil
	}
	if err != nil {
		return nil, err
	}
	return tableWatermark(tbl)
}

// AppendResult tells what an Append did.
type AppendResult struct {
	// Rows is the rows this call committed; Skipped those it did not
	// write because the table already held them.
	Rows, Skipped int
	// Files and Bytes are the data files it committed and their size.
	Files int
	Bytes int64
	// SnapshotID is the snapshot it committed; 0 when it committed none
	// (no rows to write).
	SnapshotID int64
	// Watermark is the table's watermark after the call.
	Watermark Watermark
	// Attempts is the commits tried. Recovered says that after a commit
	// error the work was found committed on reload: by this call (its
	// answer was lost; the figures above are its commit's) or by another
	// writer (Rows, Files and Bytes are 0: this call's files are orphans).
	Attempts  int
	Recovered bool
}

// PropAppendID is the snapshot summary key of the random id of the Append
// call that committed the snapshot: after a lost answer, it tells this
// call's commit from another writer's.
const PropAppendID = "floe.append-id"

// committedBy reports whether a snapshot of tbl carries appendID.
func committedBy(tbl *table.Table, appendID string) (int64, bool) {
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[PropAppendID] == appendID {
			return snap.SnapshotID, true
		}
	}
	return 0, false
}

// Append writes rows to topic's table (created if missing) and moves its
// watermark to cover want, in one snapshot; rows must be sorted by
// partition and offset, each below want's offset for its partition.
//
// Exactly once: the rows written are those at or above the watermark of
// the table as loaded; the commit asserts that the table's main branch
// is still at the snapshot loaded and sets the watermark (a table
// property, and the snapshot summary) in the same catalog transaction.
// After any commit error the table is reloaded: when its watermark
// covers want the append was committed (by this call or another
// writer); otherwise it is redone from the new watermark, up to
// MaxAttempts times, then fails with ErrCommitFailed. A call whose want
// the table already covers writes nothing. Data files of failed attempts
// are left for orphan-file clean-up.
func (w *Writer) Append(ctx context.Context, topic string, rows []Row, want Watermark) (AppendResult, error) {
	return w.appendTo(ctx, topic, mainTable, rows, want)
}

// appendTo is Append to topic's table of kind k.
func (w *Writer) appendTo(ctx context.Context, topic string, k tableKind, rows []Row, want Watermark) (AppendResult, error) {
	ctx = w.writes(ctx)
	var res AppendResult
	if err := want.validate(); err != nil {
		return res, err
	}
	// Check the rows against want before any I/O.
	if _, err := RowsToWrite(rows, nil, want); err != nil {
		return res, err
	}
	var (
		tbl *table.Table
		err error
	)
	if k == rejectedTable {
		tbl, err = w.ensure(ctx, topic, k, RejectedSchema())
	} else {
		tbl, err = w.EnsureTable(ctx, topic)
	}
	if err != nil {
		return res, err
	}
	var (
		prev     attemptFiles // files written by the last attempt
		lastErr  error        // the last attempt's commit error
		wait     = w.opts.RetryWait
		appendID = rand.Text()
	)
	for {
		have, err := tableWatermark(tbl)
		if err != nil {
			return res, err
		}
		if have.Covers(want) {
			// Nothing to write, or the last attempt (or another writer)
			// committed it despite the error.
			res.Watermark, res.Recovered = have, lastErr != nil
			res.Skipped = len(rows)
			if snap, mine := committedBy(tbl, appendID); mine {
				res.Rows, res.Skipped = prev.rows, len(rows)-prev.rows
				res.Files, res.Bytes, res.SnapshotID = len(prev.files), prev.bytes, snap
			}
			if res.Recovered {
				w.log.Info("iceberg: append found committed after an error", "topic", topic,
					"by_this_call", res.SnapshotID != 0, "error", lastErr)
			}
			return res, nil
		}
		if res.Attempts == w.opts.MaxAttempts {
			return res, fmt.Errorf("%w: topic %q after %d attempts: %w", ErrCommitFailed, topic, res.Attempts, lastErr)
		}
		res.Attempts++
		if !prev.validFor(tbl, have) {
			if prev, err = w.writeFiles(ctx, tbl, rows, have, want); err != nil {
				return res, err
			}
		}
		next := have.Merge(want)
		snap, err := w.commit(ctx, tbl, prev, next, appendID)
		if err == nil {
			res.Rows, res.Skipped = prev.rows, len(rows)-prev.rows
			res.Files, res.Bytes = len(prev.files), prev.bytes
			res.SnapshotID, res.Watermark = snap, next
			w.log.Debug("iceberg: appended", "topic", topic, "rows", res.Rows, "files", res.Files,
				"bytes", res.Bytes, "snapshot", snap, "watermark", next.String(), "attempts", res.Attempts)
			return res, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return res, fmt.Errorf("iceberg: commit to topic %q, outcome unknown: %w", topic, err)
		}
		w.log.Warn("iceberg: commit failed, reloading the table", "topic", topic, "attempt", res.Attempts, "error", err)
		if res.Attempts < w.opts.MaxAttempts {
			if err := sleep(ctx, wait/2+mrand.N(wait)); err != nil {
				return res, fmt.Errorf("iceberg: append to topic %q: %w (after %w)", topic, err, lastErr)
			}
			wait *= 2
		}
		// Whatever the error said, the commit may have landed: the loop
		// checks the reloaded watermark first.
		if tbl, err = w.load(ctx, topic, k); err != nil {
			return res, fmt.Errorf("iceberg: reload table of topic %q after %w: %w", topic, lastErr, err)
		}
	}
}

// attemptFiles are the data files one attempt wrote, and what for.
type attemptFiles struct {
	files    []icego.DataFile
	rows     int
	bytes    int64
	have     Watermark // the table watermark the rows were chosen from
	schemaID int
	specID   int
	set      bool
}

// validFor reports whether the files can be committed to tbl at have:
// they hold exactly the rows above have, in tbl's schema and spec.
func (a attemptFiles) validFor(tbl *table.Table, have Watermark) bool {
	spec := tbl.Spec()
	return a.set && a.have.Equal(have) && a.schemaID == tbl.Schema().ID && a.specID == spec.ID()
}

// writeFiles writes the rows at or above have to Parquet data files in
// tbl's location.
func (w *Writer) writeFiles(ctx context.Context, tbl *table.Table, rows []Row, have, want Watermark) (attemptFiles, error) {
	spec := tbl.Spec()
	out := attemptFiles{have: have, schemaID: tbl.Schema().ID, specID: spec.ID(), set: true}
	todo, err := RowsToWrite(rows, have, want)
	if err != nil {
		return out, err
	}
	out.rows = len(todo)
	if len(todo) == 0 {
		return out, nil
	}
	sortForFiles(todo)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return out, fmt.Errorf("iceberg: arrow schema of %v: %w", tbl.Identifier(), err)
	}
	batches := recordBatches(memory.DefaultAllocator, sc, todo, w.opts.BatchRows)
	for df, err := range table.WriteRecords(ctx, tbl, sc, batches,
		table.WithTargetFileSize(w.opts.TargetFileSize), table.WithClusteredWrite(), table.WithParquetRowGroupLimit(w.opts.RowGroupRows)) {
		if err != nil {
			return out, fmt.Errorf("iceberg: write data files of %v: %w", tbl.Identifier(), err)
		}
		out.files = append(out.files, df)
		out.bytes += df.FileSizeBytes()
	}
	return out, nil
}

// commit adds files to tbl and sets its watermark to next in one
// transaction that requires the main branch to be where tbl saw it. It
// returns the new snapshot's id (0 when files is empty).
//
// iceberg-go adds a branch requirement to snapshot commits itself, but
// with commit.retry.num-retries set on the table it would refresh and
// replay a conflicting append onto the new head, writing its rows twice;
// the explicit assertion pins the branch, so the commit fails instead
// and Append reloads (TestNoReplayOnCatalogRetry). It also fences a
// watermark-only commit.
func (w *Writer) commit(ctx context.Context, tbl *table.Table, files attemptFiles, next Watermark, appendID string) (int64, error) {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return 0, fmt.Errorf("iceberg: assert snapshot: %w", err)
	}
	wm := next.String()
	if err := tx.SetProperties(icego.Properties{PropWatermark: wm}); err != nil {
		return 0, fmt.Errorf("iceberg: set watermark: %w", err)
	}
	if len(files.files) > 0 {
		summary := icego.Properties{PropWatermark: wm, "floe.rows": strconv.Itoa(files.rows), PropAppendID: appendID}
		if err := tx.AddDataFiles(ctx, files.files, summary, table.WithoutDuplicateCheck()); err != nil {
			return 0, fmt.Errorf("iceberg: add data files: %w", err)
		}
	}
	committed, err := tx.Commit(ctx)
	if err != nil {
		return 0, err
	}
	if len(files.files) == 0 {
		return 0, nil
	}
	if snap := committed.CurrentSnapshot(); snap != nil {
		return snap.SnapshotID, nil
	}
	return 0, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
