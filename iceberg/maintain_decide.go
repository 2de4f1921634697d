package iceberg

import (
	"slices"
	"time"
)

// snapshotMaxAge is the age past which Maintain expires snapshots (beyond
// the KeepSnapshots most recent), given the commit times of the table's
// snapshots (unix ms, any order) and now: maxAge, raised so that no
// snapshot superseded less than protect ago expires. A reader may plan a
// scan of a snapshot for as long as it is current, that is until the next
// commit: expiring it, and deleting the files only it references (a
// rewrite's small files), is safe once that commit is protect old. The
// age is counted from the oldest snapshot to keep, plus a second for the
// clock iceberg-go reads later; protect 0 leaves maxAge.
func snapshotMaxAge(commitsMs []int64, now time.Time, maxAge, protect time.Duration) time.Duration {
	if protect <= 0 || len(commitsMs) < 2 {
		return maxAge
	}
	ts := slices.Clone(commitsMs)
	slices.Sort(ts)
	since := now.Add(-protect).UnixMilli()
	for i := 0; i+1 < len(ts); i++ {
		if ts[i+1] > since { // ts[i] was current less than protect ago
			age := now.Sub(time.UnixMilli(ts[i])) + time.Second
			return max(maxAge, age)
		}
	}
	return maxAge // every snapshot but the current was superseded long ago
}
