package compactor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// The decisions of the jobs, free of I/O so that they are table-tested.

// shards is how many key shards the batcher spreads files over:
// v1/files/XX/..., XX two hex digits.
const shards = 256

// orphanCursor is where the orphan job's listing stands: the shard it is
// in and the last key it looked at in that shard.
type orphanCursor struct {
	shard int
	after string
}

// parseOrphanCursor reads a saved cursor, "XX" or "XX/<last key>"; anything
// else (or "") starts at shard 00.
func parseOrphanCursor(s string) orphanCursor {
	hex, after, _ := strings.Cut(s, "/")
	n, err := strconv.ParseUint(hex, 16, 16)
	if err != nil || len(hex) != 2 || n >= shards {
		return orphanCursor{}
	}
	return orphanCursor{shard: int(n), after: after}
}

func (c orphanCursor) String() string {
	if c.after == "" {
		return fmt.Sprintf("%02x", c.shard)
	}
	return fmt.Sprintf("%02x/%s", c.shard, c.after)
}

// prefix is the listing prefix of the cursor's shard under root.
func (c orphanCursor) prefix(root string) string { return fmt.Sprintf("%s%02x/", root, c.shard) }

// next is the cursor after a page: the same shard after last when the page
// was cut, else the start of the next shard (wrapping).
func (c orphanCursor) next(cut bool, last string) orphanCursor {
	if cut {
		return orphanCursor{shard: c.shard, after: last}
	}
	return orphanCursor{shard: (c.shard + 1) % shards}
}

// orphanDue reports whether an object the metadata does not know may be
// deleted: it was last modified more than minAge before now (both the
// store's clocks). minAge is the grace period plus the longest time an
// agent may still commit a file after its upload (the batcher's upload and
// commit deadlines): an agent commits a file only before
// sealed + UploadTimeout + CommitTimeout, and an object cannot be last
// modified before its file was sealed, so past that age no commit can make
// the object known any more. A LastModified in the future (clock skew) is
// never due.
func orphanDue(lastModified, now time.Time, minAge time.Duration) bool {
	if lastModified.IsZero() {
		return false
	}
	return now.Sub(lastModified) > minAge
}

// deleteConfirmed reports whether a Delete's error confirms the object is
// gone: no error, or the object was already missing.
func deleteConfirmed(err error) bool {
	return err == nil || errors.Is(err, objectstore.ErrNotFound)
}

// collectMore reports whether the retention job runs another bounded
// collection step: the last one was full and the pass has steps left.
func collectMore(lastBatches, limit, step, maxSteps int) bool {
	return lastBatches >= limit && step < maxSteps
}

// mergeDeadline bounds a merge's upload and commit: half the time between
// the grace period and the orphan age, so that a merged object is known to
// the metadata long before the orphan job could delete it (the rule of
// orphanDue holds for the compactor's own uploads too).
func mergeDeadline(orphanAge, grace time.Duration) time.Duration {
	return max((orphanAge-grace)/2, 0)
}
