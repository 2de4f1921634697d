package metadata

import (
	"errors"
	"testing"
)

// FuzzValidateTopicConfig: a topic config (from CreateTopic, the Kafka
// listener's CreateTopics/AlterConfigs, or the CLI) of any key and value
// is checked without a panic, refused with an error wrapping ErrInvalidConfig,
// and what it accepts the Parse functions accept too.
func FuzzValidateTopicConfig(f *testing.F) {
	for _, kv := range [][2]string{
		{ConfigRetentionMs, "3600000"}, {ConfigRetentionMs, "1h"}, {ConfigRetentionMs, "-1"}, {ConfigRetentionMs, "-2"},
		{ConfigRetentionMs, "1.5ms"}, {ConfigRetentionMs, "9223372036854775807"}, {ConfigRetentionMs, "2562048h"},
		{ConfigRetentionBytes, "-1"}, {ConfigRetentionBytes, "1e9"}, {ConfigIcebergLag, "90s"}, {ConfigIcebergEnabled, "TRUE"},
		{ConfigCleanupPolicy, "compact,delete"}, {ConfigCleanupPolicy, "delete,compact,"}, {ConfigDeleteRetentionMs, "0"},
		{ConfigMinCompactionLagMs, "-1"}, {ConfigIcebergRetentionMs, "-1"}, {"retention.msx", "1"}, {"", ""},
		{ConfigValueSchema, `{"type":"object","properties":{"a":{"type":"integer"}}}`}, {ConfigValueSchema, `{`},
	} {
		f.Add(kv[0], kv[1], ConfigCleanupPolicy, "delete")
	}
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		cfg := map[string]string{k1: v1, k2: v2}
		if err := ValidateTopicConfig(cfg); err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("ValidateTopicConfig(%q): %v does not wrap ErrInvalidConfig", cfg, err)
			}
			return
		}
		for _, k := range []string{k1, k2} {
			if _, known := TopicConfigKey(k); !known {
				t.Fatalf("ValidateTopicConfig(%q) accepted the unknown key %q", cfg, k)
			}
		}
		if _, err := ParseRetention(cfg); err != nil {
			t.Fatalf("accepted %q, but ParseRetention: %v", cfg, err)
		}
		if _, err := ParseIceberg(cfg); err != nil {
			t.Fatalf("accepted %q, but ParseIceberg: %v", cfg, err)
		}
		if _, err := ParseCompaction(cfg); err != nil {
			t.Fatalf("accepted %q, but ParseCompaction: %v", cfg, err)
		}
	})
}
