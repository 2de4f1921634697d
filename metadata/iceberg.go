package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Iceberg output configuration keys and their defaults: every topic is
// also an Iceberg table (package iceberg) unless iceberg.enabled=false; the
// compactor appends batches once they are iceberg.lag old.
const (
	ConfigIcebergEnabled = "iceberg.enabled"
	// ConfigIcebergLag is a duration ("1m", "30s", "500ms") or an integer
	// number of milliseconds, >= 0.
	ConfigIcebergLag = "iceberg.lag"

	DefaultIcebergLag = time.Minute
)

// Iceberg is a topic's parsed Iceberg output configuration.
type Iceberg struct {
	Enabled bool
	Lag     time.Duration
}

// ParseIceberg reads iceberg.enabled and iceberg.lag from a topic's
// config, with their defaults for absent keys.
func ParseIceberg(cfg map[string]string) (Iceberg, error) {
	ic := Iceberg{Enabled: true, Lag: DefaultIcebergLag}
	if v, ok := cfg[ConfigIcebergEnabled]; ok {
		switch v {
		case "true":
		case "false":
			ic.Enabled = false
		default:
			return ic, fmt.Errorf("%w: %s=%q, want true or false", ErrInvalidConfig, ConfigIcebergEnabled, v)
		}
	}
	if v, ok := cfg[ConfigIcebergLag]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			var ms int64
			ms, err = strconv.ParseInt(v, 10, 64)
			d = durationMs(ms)
		}
		if err != nil || d < 0 {
			return ic, fmt.Errorf("%w: %s=%q, want a duration >= 0 such as 1m, 30s or 500ms (or milliseconds)",
				ErrInvalidConfig, ConfigIcebergLag, v)
		}
		ic.Lag = d
	}
	return ic, nil
}

// HoldLogStart bounds a retention target of a partition by hold, the
// offsets an Iceberg table still needs: with hold non-nil, the log start
// never passes hold[partition] (0 for a partition hold does not list).
// A nil hold bounds nothing.
func HoldLogStart(target int64, partition int32, hold map[int32]int64) int64 {
	if hold == nil {
		return target
	}
	return min(target, hold[partition])
}

// IcebergLease is the compactor's lease key of a topic's table; its
// cursor (JobCursor) holds the table's watermark as the compactor last
// saw it (FormatIcebergCursor), which DescribeTopic reads.
func IcebergLease(topic string) string { return "iceberg/" + topic }

// FormatIcebergCursor writes a table's watermark (per partition, the
// next offset the table does not hold) for the topic of id topicID:
// "ID p:o,p:o", partitions in order.
func FormatIcebergCursor(topicID int64, wm map[int32]int64) string {
	ps := make([]int32, 0, len(wm))
	for p := range wm {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	b := strconv.AppendInt(nil, topicID, 10)
	b = append(b, ' ')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(p), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, wm[p], 10)
	}
	return string(b)
}

// ParseIcebergCursor reads a cursor of FormatIcebergCursor; ok is false
// when s is empty, malformed, or of another topic (a deleted one of the
// same name).
func ParseIcebergCursor(s string, topicID int64) (wm map[int32]int64, ok bool) {
	id, rest, found := strings.Cut(s, " ")
	if n, err := strconv.ParseInt(id, 10, 64); !found || err != nil || n != topicID {
		return nil, false
	}
	rest, _, _ = strings.Cut(rest, " ") // the snapshot (WithIcebergSnapshot), if any
	wm = map[int32]int64{}
	if rest == "" {
		return wm, true
	}
	for _, kv := range strings.Split(rest, ",") {
		ps, os, _ := strings.Cut(kv, ":")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		o, err2 := strconv.ParseInt(os, 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, false
		}
		wm[int32(p)] = o
	}
	return wm, true
}

// WithIcebergSnapshot appends the table's last snapshot (id, and its time
// in unix ms) to a cursor of FormatIcebergCursor: "TOPIC p:o,... s=ID@MS".
func WithIcebergSnapshot(cursor string, snapshotID, unixMs int64) string {
	return cursor + " s=" + strconv.FormatInt(snapshotID, 10) + "@" + strconv.FormatInt(unixMs, 10)
}

// ParseIcebergSnapshot reads the snapshot of WithIcebergSnapshot; ok is
// false when the cursor holds none.
func ParseIcebergSnapshot(cursor string) (snapshotID, unixMs int64, ok bool) {
	i := strings.LastIndex(cursor, " s=")
	if i < 0 {
		return 0, 0, false
	}
	ids, mss, found := strings.Cut(cursor[i+3:], "@")
	id, err1 := strconv.ParseInt(ids, 10, 64)
	ms, err2 := strconv.ParseInt(mss, 10, 64)
	if !found || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return id, ms, true
}

// IcebergCursorTopic returns the topic id a cursor of FormatIcebergCursor
// was written for; false when s is not such a cursor.
func IcebergCursorTopic(s string) (int64, bool) {
	id, _, found := strings.Cut(s, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	return n, found && err == nil
}
