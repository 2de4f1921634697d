package metadata

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The topic config keys floe knows, and the one parser of their values.
// A key outside this list is refused (as Kafka refuses an unknown topic
// config), with the list and the nearest known key. Values of one kind
// take one set of forms, whatever the key:
//
//   - durations (the keys ending in .ms, and iceberg.lag): an integer of
//     milliseconds ("3600000") or a Go duration ("1h", "90s", "500ms"),
//     whole milliseconds, >= 0; -1 where the key says so (for ever);
//   - sizes (retention.bytes): an integer of bytes, or -1 (unlimited).

// ConfigKind is the kind of value a config key takes.
type ConfigKind int

const (
	KindDuration         ConfigKind = iota // milliseconds or a Go duration, >= 0
	KindDurationOrNever                    // the same, or -1: for ever
	KindBytesOrUnlimited                   // an integer of bytes >= 0, or -1: unlimited
	KindBool                               // true or false
	KindCleanupPolicy                      // delete, compact or compact,delete
	KindValueSchema                        // a JSON Schema (package schema)
)

// ConfigKey is one known topic config key.
type ConfigKey struct {
	Name string
	Kind ConfigKind
	Help string // what it does, one line
}

// TopicConfigKeys lists the known keys, by name.
var TopicConfigKeys = []ConfigKey{
	{ConfigCleanupPolicy, KindCleanupPolicy, "delete (the default), compact, or compact,delete"},
	{ConfigDeleteRetentionMs, KindDuration, "how long a tombstone of a compacted topic stays readable (default 1 day)"},
	{ConfigIcebergEnabled, KindBool, "write the topic's Iceberg table (default true)"},
	{ConfigIcebergLag, KindDuration, "how old a batch is before it goes to the table (default 1m)"},
	{ConfigIcebergRetentionMs, KindDurationOrNever, "the table's own retention (default -1: for ever)"},
	{ConfigMinCompactionLagMs, KindDuration, "how old a batch is before keyed compaction takes it (default 0)"},
	{ConfigRetentionBytes, KindBytesOrUnlimited, "bytes kept per partition (default -1: unlimited)"},
	{ConfigRetentionMs, KindDurationOrNever, "how long records are kept (default 7 days; -1: for ever)"},
	{ConfigRetentionRawMs, KindDurationOrNever, "how long raw files are kept once the Iceberg table holds them; set, older offsets are read from the table (default: retention.ms)"},
	{ConfigValueSchema, KindValueSchema, "the JSON Schema values must conform to"},
}

// TopicConfigKey returns the known key of name.
func TopicConfigKey(name string) (ConfigKey, bool) {
	i := slices.IndexFunc(TopicConfigKeys, func(k ConfigKey) bool { return k.Name == name })
	if i < 0 {
		return ConfigKey{}, false
	}
	return TopicConfigKeys[i], true
}

// ValidateTopicConfig checks every key and value of cfg: unknown keys and
// values not of their key's kind are ErrInvalidConfig, the message naming
// the key, the forms it takes, and for an unknown key the known ones.
func ValidateTopicConfig(cfg map[string]string) error {
	return validateTopicConfig(cfg, nil)
}

// validateTopicConfig is ValidateTopicConfig; keep, when non-nil, excuses
// unknown keys it holds with the same value (kept from an older floe that
// stored any key, so that altering another key does not fail on them).
func validateTopicConfig(cfg, keep map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		k, ok := TopicConfigKey(name)
		if !ok {
			if old, kept := keep[name]; kept && old == cfg[name] {
				continue
			}
			return unknownConfigKey(name)
		}
		if err := checkConfigValue(k, cfg[name]); err != nil {
			return err
		}
	}
	if _, err := ParseRetention(cfg); err != nil {
		return err
	}
	if _, err := ParseIceberg(cfg); err != nil {
		return err
	}
	if _, err := ParseValueSchema(cfg); err != nil {
		return err
	}
	_, err := ParseCompaction(cfg)
	return err
}

// checkConfigValue checks a value against its key's kind (the Parse
// functions read it the same way).
func checkConfigValue(k ConfigKey, v string) error {
	var err error
	switch k.Kind {
	case KindDuration:
		_, err = parseConfigMs(k.Name, v, false)
	case KindDurationOrNever:
		_, err = parseConfigMs(k.Name, v, true)
	case KindBytesOrUnlimited:
		_, err = parseLimit(k.Name, v)
	case KindBool:
		if v != "true" && v != "false" {
			err = fmt.Errorf("%w: %s=%q, want true or false", ErrInvalidConfig, k.Name, v)
		}
	}
	return err // cleanup.policy and value.schema: their Parse functions check them
}

// unknownConfigKey refuses name, suggesting the nearest known key.
func unknownConfigKey(name string) error {
	names := make([]string, len(TopicConfigKeys))
	for i, k := range TopicConfigKeys {
		names[i] = k.Name
	}
	hint := ""
	if s := nearest(name, names); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	return fmt.Errorf("%w: unknown key %q%s; the known keys are %s", ErrInvalidConfig, name, hint, strings.Join(names, ", "))
}

// nearest returns the name of names closest to s by edit distance, if it
// is close enough to be a likely typo ("" otherwise).
func nearest(s string, names []string) string {
	best, bestD := "", math.MaxInt
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD > max(2, len(s)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by byte.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseConfigMs reads a duration value of key: an integer of milliseconds
// or a Go duration of whole milliseconds, >= 0; with never, -1 (for ever)
// too, returned as -1.
func parseConfigMs(key, v string, never bool) (int64, error) {
	if never && v == "-1" {
		return -1, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr == nil && d%time.Millisecond == 0 {
			ms, err = d.Milliseconds(), nil
		}
	}
	if err != nil || ms < 0 {
		want := "milliseconds or a duration such as 1h, 90s or 500ms, >= 0"
		if never {
			want += ", or -1 (for ever)"
		}
		return 0, fmt.Errorf("%w: %s=%q, want %s", ErrInvalidConfig, key, v, want)
	}
	return ms, nil
}
