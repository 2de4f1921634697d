package compactor

import (
	"strconv"
	"strings"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
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

// liveTopics are the live topics by name (to their id) and by id.
type liveTopics struct {
	byName map[string]int64
	byID   map[int64]bool
}

func newLiveTopics(topics []metadata.Topic) liveTopics {
	l := liveTopics{byName: make(map[string]int64, len(topics)), byID: make(map[int64]bool, len(topics))}
	for _, t := range topics {
		l.byName[t.Name], l.byID[t.ID] = t.ID, true
	}
	return l
}

// dropTable decides whether t, a table of the namespace, is a deleted
// topic's table to drop, by identity, never by name alone. cursorID is
// the topic id that the lease cursor of the table of t's floe.topic names
// (0: none; the id the table at the topic's table name was written for,
// set before that table is created: retireStaleTable). The answer holds
// only while that lease is held (dropDeletedTables):
//
//   - a table without floe.topic is not floe's: kept;
//   - a retired table (TABLE_xID or TABLE_rejected_xID, renamed out of a
//     re-created topic's way) is dropped unless ID is a live topic's;
//   - a table at the topic's table (or rejected table) name is dropped
//     when the id the cursor names is no live topic's, or, without a
//     cursor, when no live topic has its floe.topic;
//   - any other table (floe.topic set, a name floe does not give it) is
//     kept.
func dropTable(t iceberg.TableRef, cursorID int64, live liveTopics) bool {
	if t.Topic == "" || len(t.Identifier) == 0 {
		return false
	}
	name := t.Identifier[len(t.Identifier)-1]
	if id, ok := retiredID(name, t.Topic); ok {
		return !live.byID[id]
	}
	if name != iceberg.TableName(t.Topic) && name != iceberg.RejectedTableName(t.Topic) {
		return false
	}
	if cursorID != 0 {
		return !live.byID[cursorID]
	}
	_, ok := live.byName[t.Topic]
	return !ok
}

// retiredID returns the topic id of name when it is one of topic's
// tables renamed out of the way of a re-created topic: TABLE_xID, or its
// rejected table's TABLE_rejected_xID. No topic's table name holds "_x"
// or "_r".
func retiredID(name, topic string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, iceberg.TableName(topic))
	if !ok {
		return 0, false
	}
	rest = strings.TrimPrefix(rest, "_rejected")
	id, ok := strings.CutPrefix(rest, "_x")
	if !ok || id == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(id, 10, 63)
	return int64(n), err == nil
}
