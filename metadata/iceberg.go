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
	// ConfigIcebergRetentionMs is the table's own retention: -1 (the
	// default) keeps every row for ever, whatever the log's retention;
	// a duration ("720h") or milliseconds >= 0 deletes the table's data
	// files whose day partition (day of the record's timestamp) is
	// wholly older than that.
	ConfigIcebergRetentionMs = "iceberg.retention.ms"

	DefaultIcebergLag = time.Minute
)

// Iceberg is a topic's parsed Iceberg output configuration.
type Iceberg struct {
	Enabled bool
	Lag     time.Duration
	// Retention is the table's retention; negative: for ever.
	Retention time.Duration
}

// ParseIceberg reads iceberg.enabled, iceberg.lag and
// iceberg.retention.ms from a topic's config, with their defaults for
// absent keys; iceberg.retention.ms defaults to retention.ms on a topic
// that sets retention.raw.ms (its table serves its old offsets).
func ParseIceberg(cfg map[string]string) (Iceberg, error) {
	ic := Iceberg{Enabled: true, Lag: DefaultIcebergLag, Retention: -1}
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
		ms, err := parseConfigMs(ConfigIcebergLag, v, false)
		if err != nil {
			return ic, err
		}
		ic.Lag = durationMs(ms)
	}
	if v, ok := cfg[ConfigIcebergRetentionMs]; ok {
		ms, err := parseConfigMs(ConfigIcebergRetentionMs, v, true)
		if err != nil {
			return ic, err
		}
		ic.Retention = -1
		if ms >= 0 {
			ic.Retention = durationMs(ms)
		}
	} else if _, raw := cfg[ConfigRetentionRawMs]; raw {
		// The table serves the topic's old offsets (TableServes): it
		// follows the topic's retention unless told otherwise.
		ic.Retention = -1
		r, err := ParseRetention(cfg)
		if err != nil {
			return ic, err
		}
		if r.Ms >= 0 {
			ic.Retention = durationMs(r.Ms)
		}
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

// IcebergCursor is all a table's lease cursor holds: the table's
// watermark for a topic id, and what the compactor last saw of the
// table (its last snapshot, its size, its last maintenance). The text
// form, fields separated by single spaces:
//
//	TOPIC_ID WATERMARK [t=ROWS/DATA_FILES/DATA_BYTES] [m=MAINTAINED_MS] [n=NAMESPACE.TABLE] [r=ROWS/DATA_FILES/DATA_BYTES] [s=SNAPSHOT_ID@SNAPSHOT_MS]
//	42 0:1200,1:998 t=2198/3/81920 m=1700000100000 n=floe.orders r=2/1/1500 s=4242@1700000000123
//
// r= is the topic's rejected table (TABLE_rejected: the values its value
// schema could not convert), present once the compactor saw that table.
// WATERMARK is "p:o" pairs in partition order (empty when the table holds
// nothing, so that the line then has two spaces in a row). Each optional
// field appears once, in that order; s= stays last, where readers of the
// older two-field form (ParseIcebergSnapshot) look for it, and the
// watermark stays second, where ParseIcebergCursor reads it. Readers skip
// fields they do not know.
type IcebergCursor struct {
	TopicID   int64
	Watermark map[int32]int64
	// Totals: the table's rows, data files and data bytes at the last
	// snapshot the compactor saw (HasTotals false: not recorded).
	HasTotals                  bool
	Rows, DataFiles, DataBytes int64
	// MaintainedMs is when the compactor last maintained the table (unix
	// ms); 0: never.
	MaintainedMs int64
	// Table is the table's identifier, namespace.table ([a-z0-9_.],
	// no spaces); "": not recorded.
	Table string
	// SnapshotID and SnapshotMs are the table's last snapshot; 0: none.
	SnapshotID, SnapshotMs int64
	// The rejected table's rows, data files and data bytes at the last
	// snapshot the compactor saw (HasRejected false: it saw none).
	HasRejected                                        bool
	RejectedRows, RejectedDataFiles, RejectedDataBytes int64
}

// appendTotals appends " KEY=ROWS/FILES/BYTES" to b.
func appendTotals(b []byte, key string, rows, files, bytes int64) []byte {
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	b = strconv.AppendInt(b, rows, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, files, 10)
	b = append(b, '/')
	return strconv.AppendInt(b, bytes, 10)
}

// parseTotals reads "ROWS/FILES/BYTES", each >= 0.
func parseTotals(v string) (n [3]int64, ok bool) {
	parts := strings.Split(v, "/")
	if len(parts) != 3 {
		return n, false
	}
	for i, p := range parts {
		x, err := strconv.ParseInt(p, 10, 64)
		if err != nil || x < 0 {
			return n, false
		}
		n[i] = x
	}
	return n, true
}

// String formats c (see IcebergCursor).
func (c IcebergCursor) String() string {
	b := []byte(FormatIcebergCursor(c.TopicID, c.Watermark))
	if c.HasTotals {
		b = appendTotals(b, "t", c.Rows, c.DataFiles, c.DataBytes)
	}
	if c.MaintainedMs != 0 {
		b = append(b, " m="...)
		b = strconv.AppendInt(b, c.MaintainedMs, 10)
	}
	if c.Table != "" && !strings.ContainsAny(c.Table, " =") {
		b = append(b, " n="...)
		b = append(b, c.Table...)
	}
	if c.HasRejected {
		b = appendTotals(b, "r", c.RejectedRows, c.RejectedDataFiles, c.RejectedDataBytes)
	}
	s := string(b)
	if c.SnapshotID != 0 {
		s = WithIcebergSnapshot(s, c.SnapshotID, c.SnapshotMs)
	}
	return s
}

// ReadIcebergCursor parses any cursor a table's lease held: the form of
// IcebergCursor.String, FormatIcebergCursor's and WithIcebergSnapshot's
// older ones. ok is false when s is empty or its topic id or watermark is
// malformed; a malformed optional field is left out.
func ReadIcebergCursor(s string) (c IcebergCursor, ok bool) {
	id, ok := IcebergCursorTopic(s)
	if !ok {
		return c, false
	}
	if c.Watermark, ok = ParseIcebergCursor(s, id); !ok {
		return c, false
	}
	c.TopicID = id
	if c.SnapshotID, c.SnapshotMs, _ = ParseIcebergSnapshot(s); c.SnapshotID == 0 {
		c.SnapshotMs = 0 // no snapshot
	}
	_, rest, _ := strings.Cut(s, " ")
	_, rest, _ = strings.Cut(rest, " ") // past the watermark
	for f := range strings.SplitSeq(rest, " ") {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "t":
			if n, good := parseTotals(v); good {
				c.HasTotals, c.Rows, c.DataFiles, c.DataBytes = true, n[0], n[1], n[2]
			}
		case "r":
			if n, good := parseTotals(v); good {
				c.HasRejected, c.RejectedRows, c.RejectedDataFiles, c.RejectedDataBytes = true, n[0], n[1], n[2]
			}
		case "n":
			if !strings.Contains(v, "=") {
				c.Table = v
			}
		case "m":
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				c.MaintainedMs = ms
			}
		}
	}
	return c, true
}

// IcebergLagBytesCap is the batch bytes per partition that IcebergLag's
// callers look up (FindBatches) to measure how far a table trails: past
// it, the trailing bytes are extrapolated.
const IcebergLagBytesCap = 4 << 20

// IcebergLag returns how far a partition's table trails its log: the
// records from max(logStart, watermark) to the high watermark, their
// batches' bytes, and the age in ms (nowMs minus append time) of the
// oldest of them. refs are the partition's batches from that offset on
// (FindBatches, usually capped by IcebergLagBytesCap); when they stop
// short of the high watermark, the bytes of the rest are extrapolated
// from the bytes per record of those seen. Pure.
func IcebergLag(logStart, hw, watermark int64, refs []BatchRef, nowMs int64) (records, bytes, ageMs int64) {
	start := max(logStart, watermark)
	records = max(0, hw-start)
	if records == 0 || len(refs) == 0 {
		return records, 0, 0
	}
	var seen int64
	for _, b := range refs {
		if b.LastOffset < start {
			continue
		}
		if seen == 0 {
			ageMs = max(0, nowMs-b.LogAppendTime)
		}
		bytes += b.ByteLength
		seen += b.LastOffset + 1 - max(b.BaseOffset, start)
	}
	if seen > 0 && seen < records {
		bytes += (records - seen) * bytes / seen
	}
	return records, bytes, ageMs
}
