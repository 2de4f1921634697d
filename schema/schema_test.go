package schema_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/floe-broker/floe/schema"
)

const userSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "user event",
  "type": "object",
  "required": ["id", "user"],
  "properties": {
    "id": {"type": "integer"},
    "user": {
      "type": "object",
      "required": ["name"],
      "properties": {
        "name": {"type": "string"},
        "age": {"type": ["integer", "null"]},
        "score": {"type": "number"}
      }
    },
    "at": {"type": "string", "format": "date-time", "description": "when"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "ok": {"type": "boolean"},
    "odd name": {"type": "string"}
  }
}`

func mustParse(t *testing.T, text string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatalf("Parse(%s): %v", text, err)
	}
	return s
}

func TestParse(t *testing.T) {
	s := mustParse(t, userSchema)
	root := s.Root
	if root.Kind != schema.Object || len(root.Props) != 6 {
		t.Fatalf("root = %+v", root)
	}
	var names []string
	for _, p := range root.Props {
		names = append(names, p.Name)
	}
	if want := []string{"id", "user", "at", "tags", "ok", "odd name"}; !reflect.DeepEqual(names, want) {
		t.Errorf("properties in order = %v, want %v", names, want)
	}
	user, _ := root.Prop("user")
	age, _ := user.Node.Prop("age")
	at, _ := root.Prop("at")
	tags, _ := root.Prop("tags")
	if !user.Required || age.Required || !age.Node.Nullable || age.Node.Kind != schema.Integer ||
		!at.Node.DateTime || tags.Node.Items.Kind != schema.String {
		t.Errorf("parsed tree wrong: user %+v age %+v at %+v tags %+v", user, age.Node, at.Node, tags.Node)
	}
	if s.Text() != userSchema {
		t.Error("Text() is not the text parsed")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{``, "$: want a schema object"},
		{`[]`, "$: want a schema object"},
		{`{"type":"object"} x`, "$: want a schema object"},
		{`{"type":"string"}`, "$: the root must be an object"},
		{`{}`, "$: type is required"},
		{`{"type":"object","properties":{"a":{"type":"null"}}}`, "$.a: type \"null\": a type other than null"},
		{`{"type":"object","properties":{"a":{"type":["string","integer"]}}}`, "$.a: type [\"string\",\"integer\"]: one type"},
		{`{"type":"object","properties":{"a":{"type":"date"}}}`, "$.a: type \"date\" is not supported"},
		{`{"type":"object","properties":{"a":{"type":7}}}`, "$.a: type 7"},
		{`{"type":"object","properties":{"a":{"type":"string","enum":["x"]}}}`, "$.a: keyword \"enum\" is not supported"},
		{`{"type":"object","additionalProperties":false}`, "$: keyword \"additionalProperties\" is not supported"},
		{`{"type":"object","properties":{"a":{"$ref":"#/x"}}}`, "$.a: keyword \"$ref\" is not supported"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`, "$.a: format \"email\" is not supported"},
		{`{"type":"object","properties":{"a":{"type":"integer","format":"date-time"}}}`, "$.a: format \"date-time\" is not supported"},
		{`{"type":"object","properties":{"a":{"type":"array"}}}`, "$.a: an array needs items"},
		{`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`, "$.a[]: want a schema object"},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"x"}}}}}}`, "$.a[].b: type \"x\""},
		{`{"type":"object","properties":{"a":{"type":"string","items":{"type":"string"}}}}`, "$.a: items on a string"},
		{`{"type":"string","properties":{}}`, "$: properties on a string"},
		{`{"type":"object","required":["b"],"properties":{"a":{"type":"string"}}}`, "$: required names \"b\", which is not in properties"},
		{`{"type":"object","required":["a","a"],"properties":{"a":{"type":"string"}}}`, "$: required names \"a\" twice"},
		{`{"type":"object","required":"a","properties":{"a":{"type":"string"}}}`, "$: required: want an array"},
		{`{"type":"object","properties":{"a.b":{"type":"string"}}}`, "$[\"a.b\"]: property name has a '.'"},
		{`{"type":"object","properties":{"":{"type":"string"}}}`, "$[\"\"]: empty property name"},
		{`{"type":"object","properties":{"a":{"type":"string"},"A":{"type":"string"}}}`, "$.A: property \"A\" differs from \"a\" only in case"},
		{`{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"string"}}}`, "$.a: property named twice"},
		{`{"type":"object","type":"object"}`, "$: keyword \"type\" appears twice"},
		{`{"type":"object","properties":{"u":{"type":"object","properties":{"v":{"type":"bool"}}}}}`, "$.u.v: type \"bool\""},
		{`{"type":"object","properties":[]}`, "$: properties: want an object"},
		{strings.Repeat(`{"type":"array","items":`, 40) + `{"type":"string"}` + strings.Repeat(`}`, 40), "nested deeper than"},
		{`{"type":"object","x":"` + strings.Repeat("a", schema.MaxSchemaBytes) + `"}`, "over the limit"},
	} {
		_, err := schema.Parse(tc.text)
		if !errors.Is(err, schema.ErrInvalidSchema) || !strings.Contains(err.Error(), tc.want) {
			name := tc.text
			if len(name) > 80 {
				name = name[:80]
			}
			t.Errorf("Parse(%s) = %v, want ErrInvalidSchema with %q", name, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	s := mustParse(t, userSchema)
	for _, tc := range []struct {
		value string
		want  string // "" for valid
	}{
		{`{"id":1,"user":{"name":"a"}}`, ""},
		{`{"id":1.0,"user":{"name":"a","age":null,"score":1e3},"extra":[1,2]}`, ""},
		{`{"id":3e2,"user":{"name":"a","age":-9223372036854775808},"at":"2024-03-01T10:00:00.123456+02:00","tags":[],"ok":false,"odd name":"x"}`, ""},
		{`{"id":1,"user":{"name":"a","age":"7"}}`, "$.user.age: want integer, got string"},
		{`{"id":1,"user":{"name":"a","age":7.5}}`, "$.user.age: want integer, got number 7.5"},
		{`{"id":1,"user":{"name":"a","age":9223372036854775808}}`, "$.user.age: integer 9223372036854775808 is out of range of a 64-bit integer"},
		{`{"id":1,"user":{"name":"a","score":1e400}}`, "$.user.score: number 1e400 is out of range of a double"},
		{`{"id":1,"user":{"name":null}}`, "$.user.name: want string, got null"},
		{`{"id":1,"user":{}}`, "$.user.name: required, missing"},
		{`{"user":{"name":"a"}}`, "$.id: required, missing"},
		{`{"id":1,"user":[]}`, "$.user: want object, got array"},
		{`{"id":1,"user":{"name":"a"},"tags":["a",2]}`, "$.tags[1]: want string, got number"},
		{`{"id":1,"user":{"name":"a"},"at":"yesterday"}`, `$.at: want a date-time string (RFC 3339), got "yesterday"`},
		{`{"id":1,"user":{"name":"a"},"at":"2024-03-01T10:00:00"}`, `$.at: want a date-time string`},
		{`{"id":1,"user":{"name":"a"},"ok":"true"}`, "$.ok: want boolean, got string"},
		{`{"id":1,"user":{"name":"a"},"odd name":1}`, `$["odd name"]: want string, got number`},
		{`[1]`, "$: want object, got array"},
		{`null`, "$: want object, got null"},
		{`{"id":1,"user":{"name":"a"}} {}`, "$: not JSON"},
		{`{"id":`, "$: not JSON"},
		{``, "$: not JSON"},
	} {
		err := s.Validate([]byte(tc.value))
		if tc.want == "" {
			if err != nil {
				t.Errorf("Validate(%s) = %v, want nil", tc.value, err)
			}
			continue
		}
		var ve *schema.ValueError
		if !errors.As(err, &ve) || !errors.Is(err, schema.ErrInvalidValue) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Validate(%s) = %v, want a ValueError starting %q", tc.value, err, tc.want)
		}
	}
	if err := s.Validate(nil); err != nil {
		t.Errorf("Validate(nil) (a tombstone) = %v", err)
	}
	nullable := mustParse(t, `{"type":["object","null"]}`)
	if err := nullable.Validate([]byte(`null`)); err != nil {
		t.Errorf("nullable root: Validate(null) = %v", err)
	}
}

func TestCompatible(t *testing.T) {
	const base = `{"type":"object","required":["a"],"properties":{
		"a":{"type":"integer"},"b":{"type":"string"},
		"o":{"type":"object","properties":{"x":{"type":"number"}}},
		"l":{"type":"array","items":{"type":"string","format":"date-time"}},
		"n":{"type":["boolean","null"]}}}`
	for _, tc := range []struct {
		name, next, want string // want "" for compatible
	}{
		{"same", base, ""},
		{"optional added", `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"string"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]},"c":{"type":"boolean"}}}`, ""},
		{"required relaxed, nullable added", `{"type":"object","properties":{"a":{"type":["integer","null"]},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, ""},
		{"required removed", `{"type":"object","properties":{"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, "$.a: required property removed"},
		{"optional removed", `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, "$.b: property removed"},
		{"type changed", `{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, "$.a: type changed from integer to string"},
		{"nested type changed", `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"integer"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, "$.o.x: type changed from number to integer"},
		{"format dropped", `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string"}},"n":{"type":["boolean","null"]}}}`, "$.l[]: type changed from date-time string to string"},
		{"optional made required", `{"type":"object","required":["a","b"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]}}}`, "$.b: optional property made required"},
		{"required added", `{"type":"object","required":["a","c"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":["boolean","null"]},"c":{"type":"string"}}}`, "$.c: new property is required"},
		{"made non-nullable", `{"type":"object","required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"string"},"o":{"type":"object","properties":{"x":{"type":"number"}}},"l":{"type":"array","items":{"type":"string","format":"date-time"}},"n":{"type":"boolean"}}}`, "$.n: made non-nullable"},
	} {
		err := schema.Compatible(mustParse(t, base), mustParse(t, tc.next))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: Compatible = %v, want nil", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, schema.ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Compatible = %v, want ErrIncompatible with %q", tc.name, err, tc.want)
		}
	}
	if err := schema.Compatible(nil, mustParse(t, base)); err != nil {
		t.Errorf("first schema: %v", err)
	}
	if err := schema.Compatible(mustParse(t, base), nil); !errors.Is(err, schema.ErrIncompatible) {
		t.Errorf("schema removed: %v, want ErrIncompatible", err)
	}
}

func TestColumns(t *testing.T) {
	s := mustParse(t, userSchema)
	elem := func(c schema.Column) *schema.Column { return &c }
	want := []schema.Column{
		{Name: "id", Type: schema.TypeLong},
		{Name: "user", Type: schema.TypeStruct, Fields: []schema.Column{
			{Name: "name", Type: schema.TypeString},
			{Name: "age", Type: schema.TypeLong},
			{Name: "score", Type: schema.TypeDouble},
		}},
		{Name: "at", Type: schema.TypeTimestampTz},
		{Name: "tags", Type: schema.TypeList, Elem: elem(schema.Column{Name: "element", Type: schema.TypeString})},
		{Name: "ok", Type: schema.TypeBoolean},
		{Name: "odd name", Type: schema.TypeString},
	}
	if got := s.Columns(); !reflect.DeepEqual(got, want) {
		t.Errorf("Columns() =\n%+v\nwant\n%+v", got, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(userSchema)
	f.Add(`{"type":"object","properties":{"a":{"type":["array","null"],"items":{"type":"object","required":["x"],"properties":{"x":{"type":"integer"}}}}}}`)
	f.Add(`{"type":["object","null"],"required":[]}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"string","format":"date-time"}}}`)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := schema.Parse(text)
		if err != nil {
			if !errors.Is(err, schema.ErrInvalidSchema) {
				t.Fatalf("error %v does not wrap ErrInvalidSchema", err)
			}
			return
		}
		_ = s.Columns()
		if err := schema.Compatible(s, s); err != nil {
			t.Fatalf("a schema is not compatible with itself: %v", err)
		}
		if err := s.Validate([]byte(text)); err != nil && !errors.Is(err, schema.ErrInvalidValue) {
			t.Fatalf("Validate: %v", err)
		}
	})
}

func FuzzValidate(f *testing.F) {
	s, err := schema.Parse(userSchema)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []string{
		`{"id":1,"user":{"name":"a"}}`, `{"id":1.5}`, `{"id":1,"user":{"name":"a","age":1e19}}`,
		`{"id":1,"user":{"name":"a"},"at":"2024-03-01T10:00:00Z","tags":["x"]}`, `[`, `null`, `"\ud800"`,
	} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		err := s.Validate(value)
		if err != nil && !errors.Is(err, schema.ErrInvalidValue) {
			t.Fatalf("error %v does not wrap ErrInvalidValue", err)
		}
	})
}
