package compactor

import (
	"time"

	"github.com/floe-broker/floe/iceberg"
)

// The decisions of table maintenance (maintain.go), free of I/O.

// maintainDue reports whether a table last maintained at lastMs (unix
// ms, 0: never) is due at nowMs, maintenance running every interval
// (<= 0: never).
func maintainDue(lastMs, nowMs int64, interval time.Duration) bool {
	if interval <= 0 {
		return false
	}
	return lastMs <= 0 || nowMs-lastMs >= interval.Milliseconds() || nowMs < lastMs
}

// expireBefore is the cutoff of a table's retention at now: the days
// wholly before it are deleted. Zero (nothing deleted) for a negative
// retention (iceberg.retention.ms=-1, for ever).
func expireBefore(retention time.Duration, now time.Time) time.Time {
	if retention < 0 {
		return time.Time{}
	}
	return now.Add(-retention)
}

// tablesToDrop picks, among the namespace's tables, those of deleted
// topics: a table whose floe.topic no live topic has, or one renamed out
// of a re-created topic's way (its name is not its topic's table name).
// A table without floe.topic is not floe's and is kept. The tables must
// be listed before the topics, so that a table created meanwhile for a
// new topic is never taken for a deleted topic's.
func tablesToDrop(tables []iceberg.TableRef, live map[string]bool) []iceberg.TableRef {
	var out []iceberg.TableRef
	for _, t := range tables {
		if t.Topic == "" || len(t.Identifier) == 0 {
			continue
		}
		renamed := t.Identifier[len(t.Identifier)-1] != iceberg.TableName(t.Topic)
		if renamed || !live[t.Topic] {
			out = append(out, t)
		}
	}
	return out
}
