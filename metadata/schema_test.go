package metadata_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/floe-broker/floe/metadata"
)

func TestValidateConfigChange(t *testing.T) {
	const v1 = `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`
	const v2 = `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`
	const bad = `{"type":"object","properties":{"id":{"type":"string"}}}`
	cfg := func(s string) map[string]string {
		if s == "" {
			return map[string]string{"retention.ms": "1000"}
		}
		return map[string]string{"retention.ms": "1000", metadata.ConfigValueSchema: s}
	}
	for _, tc := range []struct {
		name, old, next, want string // want "" when accepted
	}{
		{"first schema", "", v1, ""},
		{"optional field added", v1, v2, ""},
		{"unchanged", v2, v2, ""},
		{"no schema", "", "", ""},
		{"type changed", v1, bad, "value.schema: schema: incompatible schema change: $.id: type changed from integer to string"},
		{"field removed", v2, v1, "$.name: property removed"},
		{"schema removed", v1, "", "cannot be removed"},
		{"not a schema", "", `{"type":"object","properties":{"a":{"type":"x"}}}`, `value.schema: schema: invalid value schema: $.a: type "x"`},
		{"not JSON", v1, `{`, "value.schema: schema: invalid value schema: $"},
	} {
		err := metadata.ValidateConfigChange(cfg(tc.old), cfg(tc.next))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, metadata.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidConfig with %q", tc.name, err, tc.want)
		}
	}
	if err := metadata.ValidateTopicConfig(cfg(`{"type":"string"}`)); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("ValidateTopicConfig(root string) = %v, want ErrInvalidConfig", err)
	}
	if err := metadata.ValidateTopicConfig(cfg(v1)); err != nil {
		t.Errorf("ValidateTopicConfig(v1) = %v", err)
	}
}
