package agent

import (
	"errors"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/schema"
)

// maxCachedSchemas bounds the compiled value schemas an agent keeps.
const maxCachedSchemas = 256

// schemaCache holds compiled value schemas by topic id and schema text,
// so that a topic's schema is parsed once, and a changed schema (a new
// text) is parsed afresh. Its zero value is ready.
type schemaCache struct {
	mu sync.Mutex // protects byKey
	// byKey holds the parse of each (topic id, text); dropped whole when
	// full (a bound, not an eviction policy: the topics producing now
	// come back at once).
	byKey map[schemaKey]compiledSchema
}

type schemaKey struct {
	topic int64
	text  string
}

type compiledSchema struct {
	s   *schema.Schema
	err error
}

// get returns the compiled schema of text for topic.
func (c *schemaCache) get(topic int64, text string) (*schema.Schema, error) {
	k := schemaKey{topic, text}
	c.mu.Lock()
	cs, ok := c.byKey[k]
	c.mu.Unlock()
	if ok {
		return cs.s, cs.err
	}
	s, err := schema.Parse(text) // outside the lock: parsing may take a while
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil || len(c.byKey) >= maxCachedSchemas {
		c.byKey = make(map[schemaKey]compiledSchema)
	}
	c.byKey[k] = compiledSchema{s, err}
	return s, err
}

// valueCheck returns the check of a topic's records against its value
// schema (topic config value.schema), or nil when the topic has none.
// The check takes a record's position in its request and its value (nil
// for a null value) and answers a gRPC InvalidArgument status naming the
// record and the failing path when the value does not conform. Both
// produce paths (records and Kafka batches) call it before anything is
// appended.
func (a *Agent) valueCheck(t metadata.Topic) func(record int, value []byte) error {
	text, ok := t.Config[metadata.ConfigValueSchema]
	if !ok {
		return nil
	}
	s, err := a.schemas.get(t.ID, text)
	if err != nil {
		// The stored schema was validated when it was set: one that does
		// not parse was written by another version of floe.
		return func(int, []byte) error {
			return errf(codes.FailedPrecondition, "produce: topic %q: this agent cannot read its %s: %v", t.Name, metadata.ConfigValueSchema, err)
		}
	}
	return func(record int, value []byte) error {
		err := s.Validate(value)
		if err == nil {
			return nil
		}
		md := map[string]string{"record": strconv.Itoa(record)}
		var ve *schema.ValueError
		if errors.As(err, &ve) {
			md["path"] = ve.Path
		}
		return statusInfo(codes.InvalidArgument, ReasonInvalidValue, md,
			"produce: record %d: value does not conform to the topic's %s: %v", record, metadata.ConfigValueSchema, err)
	}
}

// nonNil returns v, or an empty value for nil: a record that is not null
// but empty is checked as an empty value (not JSON), not as a null one.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}
