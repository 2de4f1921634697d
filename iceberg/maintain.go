package iceberg

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// MaintainOptions tune Maintain.
type MaintainOptions struct {
	// KeepSnapshots is the fewest snapshots kept (at least 1).
	KeepSnapshots int
	// MaxSnapshotAge expires snapshots older than this beyond the
	// KeepSnapshots most recent; 0 expires every one beyond them.
	MaxSnapshotAge time.Duration
	// KeepSuperseded keeps, beyond MaxSnapshotAge, every snapshot
	// superseded (by the next commit) less than this ago: a reader that
	// planned a scan of a snapshot while it was current reads its files
	// for that long after (floe's compactor passes its orphan age). 0:
	// none.
	KeepSuperseded time.Duration
	// OrphanAge is the age past which a file under the table's location
	// that no snapshot or metadata file references is deleted. It must
	// exceed the longest append or rewrite (a file written but not yet
	// committed looks orphaned); 0 skips orphan deletion.
	OrphanAge time.Duration
	// Rewrite, when set, rewrites small data files first
	// (RewriteSmallFiles).
	Rewrite *RewriteOptions
	// ExpireBefore, when not zero, first deletes the data files whose day
	// partition ends at or before it (ExpireDays): the table's retention.
	ExpireBefore time.Time
}

// DefaultMaintainOptions keeps the last 10 snapshots, those of the last
// day and those superseded within it, deletes files orphaned for a day, and rewrites a day's small
// files once it has more than 10.
func DefaultMaintainOptions() MaintainOptions {
	return MaintainOptions{KeepSnapshots: 10, MaxSnapshotAge: 24 * time.Hour, OrphanAge: 24 * time.Hour, KeepSuperseded: 24 * time.Hour,
		Rewrite: &RewriteOptions{MinFiles: 10}}
}

// MaintainResult tells what Maintain did.
type MaintainResult struct {
	ExpiredSnapshots int
	OrphanFiles      int
	OrphanBytes      int64
	// Rewrite of small files.
	Rewrite RewriteResult
	// Data files and rows deleted by the table's retention.
	ExpiredFiles int
	ExpiredRows  int64
}

// Maintain keeps topic's table in shape, in this order: deletes the days
// the table's retention expired (ExpireBefore), rewrites small files
// (Rewrite), expires old snapshots (the watermark, a table property,
// stays), and deletes orphan files (of appends or rewrites whose commit
// failed, and of expired snapshots). A table that does not exist is left
// alone. Each step commits on its own; a step that fails stops the rest
// (the next Maintain starts again), and the result tells what the
// earlier steps did.
func (w *Writer) Maintain(ctx context.Context, topic string, opts MaintainOptions) (MaintainResult, error) {
	return w.maintain(ctx, topic, mainTable, opts)
}

// maintain is Maintain on topic's table of kind k.
func (w *Writer) maintain(ctx context.Context, topic string, k tableKind, opts MaintainOptions) (MaintainResult, error) {
	ctx = w.writes(ctx)
	var res MaintainResult
	if opts.KeepSnapshots < 1 || opts.MaxSnapshotAge < 0 || opts.OrphanAge < 0 || opts.KeepSuperseded < 0 {
		return res, fmt.Errorf("%w: maintain options %+v", ErrInvalidConfig, opts)
	}
	if !opts.ExpireBefore.IsZero() {
		n, rows, err := w.expireDays(ctx, topic, k, opts.ExpireBefore)
		if err != nil {
			return res, err
		}
		res.ExpiredFiles, res.ExpiredRows = n, rows
	}
	if opts.Rewrite != nil {
		rw, err := w.rewriteSmallFiles(ctx, topic, k, *opts.Rewrite)
		res.Rewrite = rw
		if err != nil {
			res.Rewrite = RewriteResult{}
			return res, err
		}
	}
	tbl, err := w.load(ctx, topic, k)
	if missing(err) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	before := len(tbl.Metadata().Snapshots())
	var commits []int64
	for _, s := range tbl.Metadata().Snapshots() {
		commits = append(commits, s.TimestampMs)
	}
	// The commit deletes the files only the expired snapshots reference
	// (iceberg-go's post-commit step): a snapshot superseded within
	// KeepSuperseded stays, for the scans planned of it.
	maxAge := snapshotMaxAge(commits, time.Now(), opts.MaxSnapshotAge, opts.KeepSuperseded)
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(opts.KeepSnapshots), table.WithOlderThan(maxAge)); err != nil {
		return res, fmt.Errorf("iceberg: expire snapshots of %v: %w", tbl.Identifier(), err)
	}
	expired, err := tx.Commit(ctx)
	if err != nil {
		return res, fmt.Errorf("iceberg: expire snapshots of %v: %w", tbl.Identifier(), err)
	}
	tbl = expired
	res.ExpiredSnapshots = before - len(tbl.Metadata().Snapshots())
	if opts.OrphanAge > 0 {
		orphans, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(opts.OrphanAge))
		if err != nil {
			return res, fmt.Errorf("iceberg: delete orphan files of %v: %w", tbl.Identifier(), err)
		}
		res.OrphanFiles, res.OrphanBytes = len(orphans.DeletedFiles), orphans.TotalSizeBytes
	}
	if res.ExpiredSnapshots > 0 || res.OrphanFiles > 0 {
		w.log.Info("iceberg: maintained table", "topic", topic, "table", tbl.Identifier(), "expired_snapshots", res.ExpiredSnapshots,
			"orphan_files", res.OrphanFiles, "orphan_bytes", res.OrphanBytes)
	}
	return res, nil
}

// TableRef is a table of the namespace and the topic it mirrors.
type TableRef struct {
	Identifier table.Identifier
	Topic      string // its floe.topic property; "" when it has none
}

// Tables lists the tables of the Writer's namespace with their topics
// (one catalog load per table). A namespace that does not exist holds
// none.
func (w *Writer) Tables(ctx context.Context) ([]TableRef, error) {
	var out []TableRef
	for ident, err := range w.cat.ListTables(ctx, []string{w.opts.Namespace}) {
		if missing(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("iceberg: list tables of %q: %w", w.opts.Namespace, err)
		}
		tbl, err := w.cat.LoadTable(ctx, ident)
		if missing(err) {
			continue // dropped meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("iceberg: load %v: %w", ident, err)
		}
		out = append(out, TableRef{Identifier: ident, Topic: tbl.Properties()[PropTopic]})
	}
	return out, nil
}

// DropTable removes the table from the catalog and deletes the files its
// metadata references (data files, manifests, manifest lists, metadata
// files), not everything under its location: a table renamed out of a
// re-created topic's way shares its location with the new topic's table.
// It is for tables of deleted topics: the rows are gone for good. Files
// it could not delete are logged; the table is dropped regardless (no
// reader can reach them any more).
func (w *Writer) DropTable(ctx context.Context, ident table.Identifier) error {
	tbl, err := w.cat.LoadTable(ctx, ident)
	if missing(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("iceberg: load %v: %w", ident, err)
	}
	files, err := referencedFiles(ctx, tbl)
	if err != nil {
		return fmt.Errorf("iceberg: files of %v: %w", ident, err)
	}
	if err := w.cat.DropTable(ctx, ident); err != nil && !missing(err) {
		return fmt.Errorf("iceberg: drop %v: %w", ident, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		w.log.Warn("iceberg: dropped table, files not deleted", "table", ident, "err", err)
		return nil
	}
	var failed int
	var lastErr error
	for _, f := range files {
		if err := fs.Remove(f); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			failed, lastErr = failed+1, err
		}
	}
	if failed > 0 {
		w.log.Warn("iceberg: dropped table, some files not deleted", "table", ident, "failed", failed, "of", len(files), "err", lastErr)
	}
	w.log.Info("iceberg: dropped table", "table", ident, "location", tbl.Location(), "files", len(files)-failed)
	return nil
}

// referencedFiles lists every file tbl's metadata references: its
// metadata files, and per snapshot its manifest list, manifests and
// their data files.
func referencedFiles(ctx context.Context, tbl *table.Table) ([]string, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(tbl.MetadataLocation())
	for e := range tbl.Metadata().PreviousFiles() {
		add(e.MetadataFile)
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		add(snap.ManifestList)
		mfs, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, mf := range mfs {
			add(mf.FilePath())
			entries, err := mf.FetchEntries(fs, false)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", mf.FilePath(), err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	return out, nil
}

// RetiredTables lists the tables named after topic's table renamed out of
// the way of a re-created topic (TABLE_xID): they share its location, so
// that its orphan files cannot be told from theirs.
func (w *Writer) RetiredTables(ctx context.Context, topic string) ([]table.Identifier, error) {
	return w.retiredTables(ctx, topic, mainTable)
}

// retiredTables is RetiredTables of topic's table of kind k: for the
// rejected table, TABLE_rejected_xID.
func (w *Writer) retiredTables(ctx context.Context, topic string, k tableKind) ([]table.Identifier, error) {
	prefix := w.identifier(topic, k)[1] + "_x"
	var out []table.Identifier
	for ident, err := range w.cat.ListTables(ctx, []string{w.opts.Namespace}) {
		if missing(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("iceberg: list tables of %q: %w", w.opts.Namespace, err)
		}
		rest, ok := strings.CutPrefix(ident[len(ident)-1], prefix)
		if _, err := strconv.ParseUint(rest, 10, 63); ok && err == nil {
			out = append(out, ident)
		}
	}
	return out, nil
}
