package metadata

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ConfigRetentionRawMs is how long a topic's raw files are kept once its
// Iceberg table holds their offsets (default: retention.ms). Set, reads
// below the raw log start are served from the table, and the table's
// retention (iceberg.retention.ms) defaults to retention.ms: the table,
// not the raw files, then bounds the topic (TableServes, ParseIceberg).
const ConfigRetentionRawMs = "retention.raw.ms"

// parseRawRetention reads retention.raw.ms into r: milliseconds or a
// duration, at most retention.ms (-1, for ever, only when retention.ms is
// -1 too: raw files never outlive the topic's retention).
func parseRawRetention(r *Retention, cfg map[string]string) error {
	v, ok := cfg[ConfigRetentionRawMs]
	if !ok {
		return nil
	}
	ms, err := parseConfigMs(ConfigRetentionRawMs, v, true)
	if err != nil {
		return err
	}
	if r.Ms >= 0 && (ms < 0 || ms > r.Ms) {
		return fmt.Errorf("%w: %s=%q exceeds %s=%d: raw files are kept at most as long as the topic", ErrInvalidConfig, ConfigRetentionRawMs, v, ConfigRetentionMs, r.Ms)
	}
	r.RawMs, r.HasRaw = ms, true
	return nil
}

// Raw is the retention of r's raw files: with retention.raw.ms set and a
// table holding the topic's offsets (Hold non-nil), time retention moves
// the raw log start after RawMs, never past the table's watermark; else
// after Ms, as before. Raw of Raw is Raw. RetentionRule and both
// backends' RetentionPass apply it.
func (r Retention) Raw() Retention {
	if r.HasRaw && r.Hold != nil {
		r.Ms = r.RawMs
	}
	return r
}

// TableServes reports whether reads of a topic of config cfg below its
// raw log start are served from its Iceberg table: the topic sets
// retention.raw.ms and its table is on. A config that does not parse
// serves nothing from the table.
func TableServes(cfg map[string]string) bool {
	if _, ok := cfg[ConfigRetentionRawMs]; !ok {
		return false
	}
	ic, err := ParseIceberg(cfg)
	return err == nil && ic.Enabled
}

// The deleted floor of a topic its table serves: DeleteRecords moves a
// partition's log start, and the table's rows below it are no longer
// served, although the table still holds them (its own retention drops
// them in time). The raw log start (the partitions row) cannot say it:
// it moves when raw files age out too. The floors live in the cursor of
// the job TableFloorJob(topicID), written under its lease (agents'
// DeleteRecords), one "partition=offset" a partition that has one.

// TableFloorJob is the job whose cursor holds the deleted floors of the
// topic of id topicID.
func TableFloorJob(topicID int64) string { return fmt.Sprintf("table-floor:%d", topicID) }

// FormatTableFloors is the cursor of floors (by partition), in partition
// order.
func FormatTableFloors(floors map[int32]int64) string {
	parts := make([]int32, 0, len(floors))
	for p := range floors {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d=%d", p, floors[p])
	}
	return b.String()
}

// ParseTableFloors reads FormatTableFloors' form; a malformed entry is
// left out, and a partition given twice keeps the higher floor (a floor
// never moves back).
func ParseTableFloors(s string) map[int32]int64 {
	out := map[int32]int64{}
	for f := range strings.FieldsSeq(s) {
		ps, os, ok := strings.Cut(f, "=")
		p, err1 := strconv.ParseInt(ps, 10, 32)
		off, err2 := strconv.ParseInt(os, 10, 64)
		if !ok || err1 != nil || err2 != nil || p < 0 || off < 0 {
			continue
		}
		out[int32(p)] = max(out[int32(p)], off)
	}
	return out
}

// ServedLogStart is the log start of a partition of a topic its table
// serves: the table's first offset (tableFirst, when inTable: the table
// holds offsets below rawStart), else the raw log start, raised to the
// floor DeleteRecords left (floor; 0: none), never past rawStart (from
// there the raw log answers, and DeleteRecords moved it too).
func ServedLogStart(rawStart, tableFirst int64, inTable bool, floor int64) int64 {
	start := rawStart
	if inTable && tableFirst < rawStart {
		start = tableFirst
	}
	return max(start, min(floor, rawStart))
}
