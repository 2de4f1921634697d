package schema_test

import (
	"errors"
	"testing"

	"github.com/floe-broker/floe/schema"
)

// FuzzCompatible: of any two schemas (a topic's value.schema, replaced by
// AlterTopicConfig), Compatible decides without a panic; a refusal wraps
// ErrIncompatible; and what it accepts keeps its promises: a value that
// conforms to the old schema conforms to the new one, and every column of
// the old schema's table is in the new one with its type.
func FuzzCompatible(f *testing.F) {
	obj := func(props string) string { return `{"type":"object","properties":{` + props + `}}` }
	for _, c := range [][3]string{
		{userSchema, userSchema, `{"id":1,"user":{"name":"a"}}`},
		{obj(`"a":{"type":"integer"}`), obj(`"a":{"type":"integer"},"b":{"type":"string"}`), `{"a":1}`},
		{obj(`"a":{"type":"integer"}`), obj(`"a":{"type":["integer","null"]}`), `{"a":null}`},
		{obj(`"a":{"type":"string"}`), obj(`"a":{"type":"string","format":"date-time"}`), `{"a":"x"}`},
		{obj(`"a":{"type":"array","items":{"type":"integer"}}`), obj(`"a":{"type":"array","items":{"type":"number"}}`), `{"a":[1]}`},
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}`, obj(`"a":{"type":"integer"}`), `{"a":2}`},
		{obj(`"a":{"type":"integer"}`), `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}`, `{}`},
		{obj(`"a":{"type":"object","properties":{"b":{"type":"boolean"}}}`), obj(`"a":{"type":"object","properties":{}}`), `{"a":{"b":true}}`},
	} {
		f.Add(c[0], c[1], []byte(c[2]))
	}
	f.Fuzz(func(t *testing.T, prevText, nextText string, value []byte) {
		prev, err1 := schema.Parse(prevText)
		next, err2 := schema.Parse(nextText)
		if err1 != nil || err2 != nil {
			return
		}
		if err := schema.Compatible(prev, next); err != nil {
			if !errors.Is(err, schema.ErrIncompatible) {
				t.Fatalf("Compatible: %v does not wrap ErrIncompatible", err)
			}
			return
		}
		if prev.Validate(value) == nil {
			if err := next.Validate(value); err != nil {
				t.Fatalf("%s accepted as the successor of %s, but %q conforms to the old one only: %v", nextText, prevText, value, err)
			}
		}
		if path, ok := columnsKept(prev.Columns(), next.Columns(), "$"); !ok {
			t.Fatalf("%s accepted as the successor of %s, but column %s lost or changed its type", nextText, prevText, path)
		}
	})
}

// columnsKept reports whether every column of prev is in next with the
// same type, recursively; else the path of one that is not.
func columnsKept(prev, next []schema.Column, path string) (string, bool) {
	for _, p := range prev {
		var n *schema.Column
		for i := range next {
			if next[i].Name == p.Name {
				n = &next[i]
				break
			}
		}
		at := schema.Child(path, p.Name)
		if n == nil || n.Type != p.Type {
			return at, false
		}
		if at, ok := columnsKept(p.Fields, n.Fields, at); !ok {
			return at, false
		}
		if (p.Elem == nil) != (n.Elem == nil) {
			return at + "[]", false
		}
		if p.Elem != nil {
			if at, ok := columnsKept([]schema.Column{*p.Elem}, []schema.Column{*n.Elem}, at); !ok {
				return at, false
			}
		}
	}
	return "", true
}
