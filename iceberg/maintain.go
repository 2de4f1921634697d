package iceberg

import (
	"context"
	"fmt"
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
	// OrphanAge is the age past which a file under the table's location
	// that no snapshot or metadata file references is deleted. It must
	// exceed the longest append (a file written but not yet committed
	// looks orphaned); 0 skips orphan deletion.
	OrphanAge time.Duration
}

// DefaultMaintainOptions keeps the last 10 snapshots and those of the
// last day, and deletes files orphaned for a day.
func DefaultMaintainOptions() MaintainOptions {
	return MaintainOptions{KeepSnapshots: 10, MaxSnapshotAge: 24 * time.Hour, OrphanAge: 24 * time.Hour}
}

// MaintainResult tells what Maintain did.
type MaintainResult struct {
	ExpiredSnapshots int
	OrphanFiles      int
	OrphanBytes      int64
}

// Maintain expires topic's table's old snapshots (the watermark, a table
// property, stays) and deletes its orphan files (of appends whose commit
// failed). A table that does not exist is left alone.
func (w *Writer) Maintain(ctx context.Context, topic string, opts MaintainOptions) (MaintainResult, error) {
	var res MaintainResult
	if opts.KeepSnapshots < 1 || opts.MaxSnapshotAge < 0 || opts.OrphanAge < 0 {
		return res, fmt.Errorf("%w: maintain options %+v", ErrInvalidConfig, opts)
	}
	tbl, err := w.Load(ctx, topic)
	if missing(err) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	before := len(tbl.Metadata().Snapshots())
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(opts.KeepSnapshots), table.WithOlderThan(opts.MaxSnapshotAge)); err != nil {
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
		w.log.Info("iceberg: maintained table", "topic", topic, "expired_snapshots", res.ExpiredSnapshots,
			"orphan_files", res.OrphanFiles, "orphan_bytes", res.OrphanBytes)
	}
	return res, nil
}
