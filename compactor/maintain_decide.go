package compactor

import (
	"strconv"
	"strings"
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

// maintainRetryWait bounds the wait before a failed maintenance of a
// table is tried again (retryDue).
const maintainRetryWait = 5 * time.Minute

// retryDue reports whether a table whose maintenance last failed at
// failedAt (zero: it did not) may be maintained again at now: after the
// interval or maintainRetryWait, whichever is shorter, so that a table
// whose maintenance keeps failing is not retried on every pass.
func retryDue(failedAt, now time.Time, interval time.Duration) bool {
	return failedAt.IsZero() || now.Sub(failedAt) >= min(interval, maintainRetryWait) || now.Before(failedAt)
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
// of a re-created topic's way (TABLE_xID or TABLE_rejected_xID,
// retireStaleTable). A table
// without floe.topic is not floe's, and any other table of a live topic
// (a <topic>_rejected table, say) is the topic's: both are kept. The
// tables must be listed before the topics, so that a table created
// meanwhile for a new topic is never taken for a deleted topic's.
func tablesToDrop(tables []iceberg.TableRef, live map[string]bool) []iceberg.TableRef {
	var out []iceberg.TableRef
	for _, t := range tables {
		if t.Topic == "" || len(t.Identifier) == 0 {
			continue
		}
		if !live[t.Topic] || retiredName(t.Identifier[len(t.Identifier)-1], t.Topic) {
			out = append(out, t)
		}
	}
	return out
}

// retiredName reports whether name is one of topic's tables renamed out
// of the way of a re-created topic: TABLE_xID, or its rejected table's
// TABLE_rejected_xID. No topic's table name holds "_x" or "_r".
func retiredName(name, topic string) bool {
	rest, ok := strings.CutPrefix(name, iceberg.TableName(topic))
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "_rejected")
	id, ok := strings.CutPrefix(rest, "_x")
	if !ok || id == "" {
		return false
	}
	_, err := strconv.ParseUint(id, 10, 63)
	return err == nil
}
