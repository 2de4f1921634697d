// Package schema reads the JSON Schema a topic may declare for its
// values (topic config value.schema), validates values against it,
// checks that a new schema is a compatible evolution of the old one, and
// maps it to the column types of the topic's Iceberg table.
//
// Only a subset of JSON Schema is supported, the part that maps to table
// columns; anything else is refused with the path of the keyword:
//
//	type        "object", "string", "number", "integer", "boolean", "array",
//	            or [T, "null"] for a nullable T
//	properties  of an object, in declaration order
//	required    of an object: names of its properties
//	items       of an array: one schema for every element
//	format      "date-time" on a string (RFC 3339)
//
// Annotations ($schema, $id, $comment, title, description, examples,
// default, deprecated, readOnly, writeOnly) are accepted and ignored. The
// root must be an object: its properties become the typed columns.
// Properties a schema does not name are allowed in values (JSON Schema's
// default) and ignored by the table.
//
// Paths name a place in a value or a schema: $ is the root, $.user.age a
// property, $.tags[2] an array element ($.tags[] in a schema), and
// $["odd name"] a property whose name is not an identifier.
//
// Everything here is pure: no I/O, safe for concurrent use once parsed.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

var (
	// ErrInvalidSchema refuses a schema text: not JSON, not a schema, or
	// using what this package does not support.
	ErrInvalidSchema = errors.New("schema: invalid value schema")
	// ErrInvalidValue refuses a value that does not conform.
	ErrInvalidValue = errors.New("schema: value does not conform")
	// ErrIncompatible refuses a schema change that values or the table
	// could not follow.
	ErrIncompatible = errors.New("schema: incompatible schema change")
)

// Limits of a schema text.
const (
	MaxSchemaBytes = 64 << 10
	MaxDepth       = 32
	MaxNodes       = 2000
)

// Kind is a JSON Schema type.
type Kind uint8

// The supported types.
const (
	Object Kind = iota + 1
	String
	Number
	Integer
	Boolean
	Array
)

var kindNames = map[string]Kind{
	"object": Object, "string": String, "number": Number,
	"integer": Integer, "boolean": Boolean, "array": Array,
}

func (k Kind) String() string {
	for n, v := range kindNames {
		if v == k {
			return n
		}
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one schema of a schema tree.
type Node struct {
	Kind     Kind
	Nullable bool   // type [T, "null"]
	DateTime bool   // a String with format date-time
	Props    []Prop // an Object's properties, in declaration order
	Items    *Node  // an Array's elements

	index map[string]int // an Object's property index by name (scan.go)
}

// Prop is a property of an Object.
type Prop struct {
	Name     string
	Required bool
	Node     *Node
}

// Prop returns the property called name.
func (n *Node) Prop(name string) (Prop, bool) {
	for _, p := range n.Props {
		if p.Name == name {
			return p, true
		}
	}
	return Prop{}, false
}

// typeName is n's type as a schema writes it.
func (n *Node) typeName() string {
	s := n.Kind.String()
	if n.DateTime {
		s = "date-time string"
	}
	return s
}

// Schema is a parsed value schema.
type Schema struct {
	Root *Node
	text string
}

// Text returns the schema text it was parsed from.
func (s *Schema) Text() string { return s.text }

// annotations are keywords accepted and ignored.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// Parse reads a schema text. Errors wrap ErrInvalidSchema and name the
// path of what is refused.
func Parse(text string) (*Schema, error) {
	if len(text) > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidSchema, len(text), MaxSchemaBytes)
	}
	p := parser{}
	root, err := p.node([]byte(text), "$", 0)
	if err != nil {
		return nil, err
	}
	if root.Kind != Object {
		return nil, p.errf("$", "the root must be an object (its properties become the table's typed columns), not %s", root.typeName())
	}
	return &Schema{Root: root, text: text}, nil
}

type parser struct{ nodes int }

func (p *parser) errf(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidSchema, path, fmt.Sprintf(format, args...))
}

// node parses the schema object raw found at path.
func (p *parser) node(raw []byte, path string, depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, p.errf(path, "nested deeper than %d levels", MaxDepth)
	}
	if p.nodes++; p.nodes > MaxNodes {
		return nil, p.errf(path, "more than %d schemas", MaxNodes)
	}
	keys, vals, err := object(raw)
	if err != nil {
		return nil, p.errf(path, "want a schema object: %v", err)
	}
	kw := make(map[string]json.RawMessage, len(keys))
	for i, k := range keys {
		if _, dup := kw[k]; dup {
			return nil, p.errf(path, "keyword %q appears twice", k)
		}
		if !annotations[k] {
			switch k {
			case "type", "properties", "required", "items", "format":
			default:
				return nil, p.errf(path, "keyword %q is not supported (supported: type, properties, required, items, format date-time)", k)
			}
		}
		kw[k] = vals[i]
	}
	n := &Node{}
	if err := p.kind(n, kw["type"], path); err != nil {
		return nil, err
	}
	if f, ok := kw["format"]; ok {
		var s string
		if json.Unmarshal(f, &s) != nil || s != "date-time" || n.Kind != String {
			return nil, p.errf(path, "format %s is not supported (only \"date-time\" on a string)", f)
		}
		n.DateTime = true
	}
	if _, ok := kw["properties"]; ok && n.Kind != Object {
		return nil, p.errf(path, "properties on a %s", n.typeName())
	}
	if _, ok := kw["required"]; ok && n.Kind != Object {
		return nil, p.errf(path, "required on a %s", n.typeName())
	}
	if _, ok := kw["items"]; ok != (n.Kind == Array) {
		if ok {
			return nil, p.errf(path, "items on a %s", n.typeName())
		}
		return nil, p.errf(path, "an array needs items (one schema for its elements)")
	}
	switch n.Kind {
	case Object:
		if err := p.props(n, kw, path, depth); err != nil {
			return nil, err
		}
	case Array:
		if n.Items, err = p.node(kw["items"], path+"[]", depth+1); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// kind reads the type keyword.
func (p *parser) kind(n *Node, raw json.RawMessage, path string) error {
	if raw == nil {
		return p.errf(path, "type is required")
	}
	var names []string
	var one string
	if json.Unmarshal(raw, &one) == nil {
		names = []string{one}
	} else if err := json.Unmarshal(raw, &names); err != nil {
		return p.errf(path, "type %s: want a type name or [name, \"null\"]", raw)
	}
	for _, name := range names {
		if name == "null" {
			if n.Nullable {
				return p.errf(path, "type %s names null twice", raw)
			}
			n.Nullable = true
			continue
		}
		k, ok := kindNames[name]
		if !ok {
			return p.errf(path, "type %q is not supported (object, string, number, integer, boolean, array)", name)
		}
		if n.Kind != 0 {
			return p.errf(path, "type %s: one type and optionally \"null\", not several", raw)
		}
		n.Kind = k
	}
	if n.Kind == 0 {
		return p.errf(path, "type %s: a type other than null is required", raw)
	}
	return nil
}

// props reads an object's properties and required.
func (p *parser) props(n *Node, kw map[string]json.RawMessage, path string, depth int) error {
	if raw, ok := kw["properties"]; ok {
		keys, vals, err := object(raw)
		if err != nil {
			return p.errf(path, "properties: want an object: %v", err)
		}
		folded := make(map[string]string, len(keys))
		for i, name := range keys {
			ppath := Child(path, name)
			if err := checkName(name); err != nil {
				return p.errf(ppath, "%v", err)
			}
			if other, dup := folded[strings.ToLower(name)]; dup {
				if other == name {
					return p.errf(ppath, "property named twice")
				}
				return p.errf(ppath, "property %q differs from %q only in case (SQL engines fold column names)", name, other)
			}
			folded[strings.ToLower(name)] = name
			child, err := p.node(vals[i], ppath, depth+1)
			if err != nil {
				return err
			}
			n.Props = append(n.Props, Prop{Name: name, Node: child})
		}
		if len(n.Props) > 8 {
			n.index = make(map[string]int, len(n.Props))
			for i, p := range n.Props {
				n.index[p.Name] = i
			}
		}
	}
	if raw, ok := kw["required"]; ok {
		var req []string
		if err := json.Unmarshal(raw, &req); err != nil {
			return p.errf(path, "required: want an array of property names")
		}
		for _, name := range req {
			i := slices.IndexFunc(n.Props, func(p Prop) bool { return p.Name == name })
			if i < 0 {
				return p.errf(path, "required names %q, which is not in properties", name)
			}
			if n.Props[i].Required {
				return p.errf(path, "required names %q twice", name)
			}
			n.Props[i].Required = true
		}
	}
	return nil
}

// checkName refuses property names a table column cannot have.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty property name")
	case !utf8.ValidString(name):
		return errors.New("property name is not UTF-8")
	case strings.Contains(name, "."):
		return errors.New("property name has a '.' (engines read it as a nested path)")
	case len(name) > 255:
		return errors.New("property name longer than 255 bytes")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return errors.New("property name has a control character")
		}
	}
	return nil
}

// object reads a JSON object's keys in order, with their raw values.
func object(raw []byte) (keys []string, vals []json.RawMessage, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("got %s", jsonKind(tok))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("data after the object")
	}
	return keys, vals, nil
}

// jsonKind names the JSON type of a decoded token or value.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Delim:
		if v == '[' {
			return "array"
		}
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Child returns the path of property name under path.
func Child(path, name string) string {
	ident := name != ""
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ident = false
			break
		}
	}
	if ident {
		return path + "." + name
	}
	q, _ := json.Marshal(name)
	return path + "[" + string(q) + "]"
}
