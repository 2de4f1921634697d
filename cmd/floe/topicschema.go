package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/schema"
)

// The value schema of a topic (config value.schema, a JSON Schema) is
// given to `floe topic create` and `floe topic alter` as a file:
//
//	floe topic create orders -schema orders.schema.json
//	floe topic alter orders -schema orders.v2.schema.json
//
// The file is checked here (a clear error before any request), and again
// by the agent, which also refuses an incompatible change.

// schemaFlag adds -schema to a topic command.
func schemaFlag(fs *flag.FlagSet) *string {
	return fs.String("schema", "", "file with the topic's value schema (JSON Schema; '-' reads stdin), set as config value.schema")
}

// readValueSchema reads and checks the -schema file; "" when none.
func readValueSchema(path string, stdin io.Reader) (string, error) {
	if path == "" {
		return "", nil
	}
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, schema.MaxSchemaBytes+1))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("flag -schema: %w", err)
	}
	if _, err := schema.Parse(string(b)); err != nil {
		return "", fmt.Errorf("flag -schema %s: %w", path, err)
	}
	return string(b), nil
}

// withValueSchema sets config value.schema from the -schema file.
func withValueSchema(cfg map[string]string, path string) error {
	text, err := readValueSchema(path, os.Stdin)
	if err != nil || text == "" {
		return err
	}
	if _, ok := cfg[metadata.ConfigValueSchema]; ok {
		return fmt.Errorf("flag -schema: %s is also given as a key=value", metadata.ConfigValueSchema)
	}
	cfg[metadata.ConfigValueSchema] = text
	return nil
}

// printTopicConfig prints a topic's config, one "config key=value" line per
// key in order; the value schema, a JSON document, as a summary of its
// top-level fields and their table types.
func printTopicConfig(w io.Writer, cfg map[string]string, keys []string) {
	for _, k := range keys {
		if k == metadata.ConfigValueSchema {
			fmt.Fprintf(w, "config %s=%s\n", k, describeValueSchema(cfg[k]))
			continue
		}
		fmt.Fprintf(w, "config %s=%s\n", k, cfg[k])
	}
}

// describeValueSchema summarises a schema text: "set (N bytes): name type, ...".
func describeValueSchema(text string) string {
	s, err := schema.Parse(text)
	if err != nil {
		return fmt.Sprintf("set (%d bytes), unreadable here: %v", len(text), err)
	}
	var fields []string
	for _, c := range s.Columns() {
		name := c.Name
		if req, _ := s.Root.Prop(c.Name); req.Required {
			name += "*"
		}
		fields = append(fields, name+" "+columnType(c))
	}
	return fmt.Sprintf("set (%d bytes; * required): %s", len(text), strings.Join(fields, ", "))
}

// columnType writes a column's table type: long, struct<a long>, list<string>.
func columnType(c schema.Column) string {
	switch c.Type {
	case schema.TypeStruct:
		var fs []string
		for _, f := range c.Fields {
			fs = append(fs, f.Name+" "+columnType(f))
		}
		return "struct<" + strings.Join(fs, ", ") + ">"
	case schema.TypeList:
		return "list<" + columnType(*c.Elem) + ">"
	}
	return c.Type.String()
}
