package metadata

import "fmt"

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
