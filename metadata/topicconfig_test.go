package metadata

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestValidateTopicConfig: unknown keys are refused with the known ones and
// a did-you-mean; every duration key takes milliseconds and Go durations
// alike; sizes take integers.
func TestValidateTopicConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]string
		want string // "" accepted; else a substring of the error
	}{
		{map[string]string{}, ""},
		{map[string]string{"retention.ms": "3600000"}, ""},
		{map[string]string{"retention.ms": "1h"}, ""},
		{map[string]string{"retention.ms": "-1"}, ""},
		{map[string]string{"retention.ms": "15s", "iceberg.lag": "1m"}, ""},
		{map[string]string{"iceberg.lag": "60000"}, ""},
		{map[string]string{"delete.retention.ms": "2h"}, ""},
		{map[string]string{"min.compaction.lag.ms": "100ms"}, ""},
		{map[string]string{"min.compaction.lag.ms": "100"}, ""},
		{map[string]string{"iceberg.retention.ms": "720h"}, ""},
		{map[string]string{"retention.bytes": "1048576", "cleanup.policy": "compact,delete", "iceberg.enabled": "false"}, ""},

		{map[string]string{"retenton.ms": "1000"}, `unknown key "retenton.ms" (did you mean retention.ms?)`},
		{map[string]string{"foo": "bar"}, `unknown key "foo"; the known keys are cleanup.policy, delete.retention.ms,`},
		{map[string]string{"iceberg.lagg": "1m"}, "did you mean iceberg.lag?"},
		{map[string]string{"segment.ms": "1"}, `unknown key "segment.ms"`},
		{map[string]string{"retention.ms": "-1h"}, `retention.ms="-1h", want milliseconds or a duration`},
		{map[string]string{"retention.ms": "-2"}, "retention.ms"},
		{map[string]string{"retention.ms": "1e3"}, "retention.ms"},
		{map[string]string{"retention.ms": "1.5us"}, "retention.ms"}, // not whole milliseconds
		{map[string]string{"iceberg.lag": "-1"}, "iceberg.lag"},      // -1 is for the keys that mean "for ever"
		{map[string]string{"delete.retention.ms": "-1"}, "delete.retention.ms"},
		{map[string]string{"retention.bytes": "1h"}, "retention.bytes"},
		{map[string]string{"retention.bytes": "-2"}, "retention.bytes"},
		{map[string]string{"iceberg.enabled": "yes"}, "iceberg.enabled"},
		{map[string]string{"cleanup.policy": "keep"}, "cleanup.policy"},
	} {
		err := ValidateTopicConfig(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateTopicConfig(%v) = %v, want nil", tc.cfg, err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateTopicConfig(%v) = %v, want ErrInvalidConfig with %q", tc.cfg, err, tc.want)
		}
	}
}

// TestDurationFormsAgree: each duration key reads "1h" and "3600000" as the
// same value.
func TestDurationFormsAgree(t *testing.T) {
	r1, err1 := ParseRetention(map[string]string{"retention.ms": "1h"})
	r2, err2 := ParseRetention(map[string]string{"retention.ms": "3600000"})
	if err1 != nil || err2 != nil || r1.Ms != 3600000 || r2.Ms != r1.Ms {
		t.Errorf("retention.ms: %+v %v / %+v %v", r1, err1, r2, err2)
	}
	i1, err1 := ParseIceberg(map[string]string{"iceberg.lag": "1h", "iceberg.retention.ms": "1h"})
	i2, err2 := ParseIceberg(map[string]string{"iceberg.lag": "3600000", "iceberg.retention.ms": "3600000"})
	if err1 != nil || err2 != nil || i1 != i2 || i1.Lag != time.Hour || i1.Retention != time.Hour {
		t.Errorf("iceberg: %+v %v / %+v %v", i1, err1, i2, err2)
	}
	c1, err1 := ParseCompaction(map[string]string{"delete.retention.ms": "1h", "min.compaction.lag.ms": "1h"})
	c2, err2 := ParseCompaction(map[string]string{"delete.retention.ms": "3600000", "min.compaction.lag.ms": "3600000"})
	if err1 != nil || err2 != nil || c1 != c2 || c1.DeleteRetention != time.Hour || c1.MinLag != time.Hour {
		t.Errorf("compaction: %+v %v / %+v %v", c1, err1, c2, err2)
	}
}

// TestConfigChangeKeepsOldUnknownKeys: a key an older floe stored is not a
// reason to refuse a change of another key; setting a new unknown key is.
func TestConfigChangeKeepsOldUnknownKeys(t *testing.T) {
	old := map[string]string{"x": "y"}
	if err := ValidateConfigChange(old, map[string]string{"x": "y", "retention.ms": "1h"}); err != nil {
		t.Errorf("change beside a stored unknown key: %v", err)
	}
	if err := ValidateConfigChange(old, map[string]string{"x": "z"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("setting an unknown key: %v, want ErrInvalidConfig", err)
	}
	if err := CheckConfigChange(map[string]string{"retenton.ms": "1"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("CheckConfigChange of an unknown key: %v", err)
	}
}

func TestValidateTopicNameByCharacter(t *testing.T) {
	err := ValidateTopicName("注文")
	if !errors.Is(err, ErrInvalidTopicName) || !strings.Contains(err.Error(), `"注文" has the character '注'`) {
		t.Errorf("ValidateTopicName(注文) = %v", err)
	}
	if err := ValidateTopicName(strings.Repeat("a", MaxTopicNameLen)); err != nil {
		t.Errorf("a name of %d characters: %v", MaxTopicNameLen, err)
	}
}
