package metadata

import (
	"fmt"

	"github.com/floe-broker/floe/schema"
)

// ConfigValueSchema is the topic config key of the JSON Schema its
// values must conform to (package schema): produce refuses a value that
// does not, and the topic's Iceberg table carries the schema's fields as
// typed columns. Once set it may only change compatibly
// (schema.Compatible), and it cannot be removed.
const ConfigValueSchema = "value.schema"

// ParseValueSchema returns the topic's value schema; nil when it has none.
func ParseValueSchema(cfg map[string]string) (*schema.Schema, error) {
	text, ok := cfg[ConfigValueSchema]
	if !ok {
		return nil, nil
	}
	s, err := schema.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, ConfigValueSchema, err)
	}
	return s, nil
}

// ValidateConfigChange checks a topic's new config (ValidateTopicConfig;
// unknown keys kept unchanged from old pass, an older floe stored any)
// and that its value schema, if the old config had one, changed
// compatibly; the stores call it under the topic's row lock, so that two
// concurrent changes are each checked against the schema they replace.
func ValidateConfigChange(old, next map[string]string) error {
	if err := validateTopicConfig(next, old); err != nil {
		return err
	}
	prev, err := ParseValueSchema(old)
	if err != nil {
		// A stored schema that no longer parses (a newer floe wrote it):
		// nothing to compare against.
		return nil
	}
	cur, err := ParseValueSchema(next)
	if err != nil {
		return err
	}
	if err := schema.Compatible(prev, cur); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, ConfigValueSchema, err)
	}
	return nil
}
