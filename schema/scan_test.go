package schema

import (
	"bytes"
	"encoding/json"
	"testing"
)

const scanSchema = `{"type":"object","required":["id","u"],"properties":{
  "id":{"type":"integer"},"n":{"type":["number","null"]},"b":{"type":"boolean"},
  "s":{"type":"string"},"at":{"type":"string","format":"date-time"},
  "u":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":["string","null"]}}}},
  "l":{"type":"array","items":{"type":"array","items":{"type":"integer"}}},
  "p1":{"type":"string"},"p2":{"type":"string"},"p3":{"type":"string"},"p4":{"type":"string"},"p5":{"type":"string"},"p6":{"type":"string"},"p7":{"type":"string"}}}`

// FuzzValidateScanner holds the fast scanner to the reference check:
// whatever the scanner accepts, the reference (encoding/json and the
// tree walk) accepts; and on values without repeated keys (where the
// scanner is stricter) they agree both ways.
func FuzzValidateScanner(f *testing.F) {
	s, err := Parse(scanSchema)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []string{
		`{"id":1,"u":{"name":"a"}}`,
		`{"id":1.0,"n":null,"b":true,"s":"x\u00e9\ud83d\ude00","at":"2024-03-01T10:00:00Z","u":{"name":"a","tags":["x",null]},"l":[[1,2],[]],"z":{"q":[1,{"r":null}]}}`,
		` {"id" : -0 , "u" : {"name" : "\"q\\"} } `,
		`{"id":1e2,"u":{"name":"a"},"id":2}`,
		`{"id":1,"u":{"name":"a"}} x`,
		`{"id":9223372036854775807,"u":{"name":"\ud800"}}`,
		`{"id":1,"u":{"name":"a"},"at":"2024-03-01T10:00:00+25:00"}`,
		`{"\u0069d":1,"u":{"name":"a"}}`,
		`[1]`, `"x"`, `null`, `{`, ``, `{"id":01,"u":{"name":"a"}}`, `{"id":1.,"u":{"name":"a"}}`,
	} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		sc := scanner{b: value}
		fast := sc.check(s.Root)
		if fast {
			sc.ws()
			fast = sc.i == len(value)
		}
		slow := s.validateSlow(value)
		if fast && slow != nil {
			t.Fatalf("scanner accepts %q, reference refuses: %v", value, slow)
		}
		if !fast && slow == nil && !repeatedKeys(value) {
			t.Fatalf("scanner refuses %q, reference accepts", value)
		}
		if err := s.Validate(value); (err == nil) != (slow == nil) {
			t.Fatalf("Validate(%q) = %v, reference %v", value, err, slow)
		}
	})
}

// repeatedKeys reports whether some object of value repeats a key.
func repeatedKeys(value []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(value))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return false
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return false
				}
				ks, _ := k.(string)
				if seen[ks] {
					return true
				}
				seen[ks] = true
				if walk() {
					return true
				}
			}
			_, _ = dec.Token()
		case '[':
			for dec.More() {
				if walk() {
					return true
				}
			}
			_, _ = dec.Token()
		}
		return false
	}
	return walk()
}

func TestReaders(t *testing.T) {
	var keys []string
	var vals []string
	if !Members([]byte(` {"a" : 1, "b\u0021":{"x":[1,2]} ,"c":"s"} `), func(k string, v []byte) {
		keys, vals = append(keys, k), append(vals, string(v))
	}) || len(keys) != 3 || keys[1] != "b!" || vals[1] != `{"x":[1,2]}` || vals[2] != `"s"` {
		t.Errorf("Members: %q %q", keys, vals)
	}
	var els []string
	if !Elements([]byte(`[ 1 , "a", null,[2]]`), func(v []byte) { els = append(els, string(v)) }) || len(els) != 4 || els[3] != "[2]" {
		t.Errorf("Elements: %q", els)
	}
	if s, ok := Text([]byte(`"a\nb\u00e9\ud83d\ude00\ud800"`)); !ok || s != "a\nbé😀\uFFFD" {
		t.Errorf("Text = %q, %v", s, ok)
	}
	if Members([]byte(`[1]`), func(string, []byte) {}) || Elements([]byte(`{}`), func([]byte) {}) {
		t.Error("Members of an array or Elements of an object")
	}
	if !IsNull([]byte(" null ")) || IsNull([]byte(`"null"`)) {
		t.Error("IsNull")
	}
}
