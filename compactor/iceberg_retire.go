package compactor

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/metadata"
)

// A topic deleted and created again under the same name would find the
// old topic's table, and its watermark would make the compactor skip the
// new topic's offsets below it. The table's lease cursor names the topic
// id it was written for: a table of another id is renamed out of the way
// (to TABLE_xID, a name no topic maps to) before the new topic's first
// append, and retention holds everything until then.

// staleTable reports whether the lease cursor of t's table names another
// topic id (a deleted topic of the same name).
func (c *Compactor) staleTable(ctx context.Context, t metadata.Topic) (old int64, stale bool, err error) {
	cur, err := c.meta.JobCursor(ctx, metadata.IcebergLease(t.Name))
	if err != nil {
		return 0, false, err
	}
	old, ok := metadata.IcebergCursorTopic(cur)
	return old, ok && old != t.ID, nil
}

// retireStaleTable renames a deleted topic's table of t's name, if any,
// and makes the cursor t's.
func (c *Compactor) retireStaleTable(ctx context.Context, t metadata.Topic) error {
	old, stale, err := c.staleTable(ctx, t)
	if err != nil || !stale {
		return err
	}
	w := c.cfg.Iceberg
	// Its rejected table (iceberg/rejected.go) too; first, so that the
	// main table, renamed last, keeps the cursor stale until both moved.
	for _, from := range []table.Identifier{w.RejectedIdentifier(t.Name), w.Identifier(t.Name)} {
		exists, err := w.Catalog().CheckTableExists(ctx, from)
		if err != nil {
			return fmt.Errorf("look up the table of deleted topic %d: %w", old, err)
		}
		if exists {
			to := table.Identifier{from[0], from[1] + "_x" + strconv.FormatInt(old, 10)}
			if _, err := w.Catalog().RenameTable(ctx, from, to); err != nil {
				return fmt.Errorf("rename the table of deleted topic %d to %v: %w", old, to, err)
			}
			c.log.Warn("table of a deleted topic of the same name renamed", "topic", t.Name, "deleted_topic_id", old, "to", to)
		}
	}
	ok, err := c.meta.SetJobCursor(ctx, metadata.IcebergLease(t.Name), c.cfg.Owner, metadata.FormatIcebergCursor(t.ID, nil))
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", errLeaseLost, metadata.IcebergLease(t.Name))
	}
	return err
}
