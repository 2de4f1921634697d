package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A fast path for Validate, and a small reader of JSON values known to be
// valid (Members, Elements, Text) for the table's typed columns: both
// scan the value's bytes without building a tree. The scanner only
// decides acceptance; when it refuses, Validate runs the reference
// check (encoding/json, then the tree walk of check) for the exact error
// (and to accept what the scanner is stricter about, such as a repeated
// key). FuzzValidateScanner holds the scanner to the reference: what it
// accepts, the reference accepts.

// maxSkipDepth bounds the nesting of a value the schema does not
// describe (encoding/json's own limit is 10000).
const maxSkipDepth = 10000

type scanner struct {
	b []byte
	i int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) ws() {
	for s.i < len(s.b) && isSpace(s.b[s.i]) {
		s.i++
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// str scans a string at s.i (its opening quote) and returns its bytes
// without the quotes, still escaped, and whether it has escapes.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if s.peek() != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				s.i += 6
			default:
				return nil, false, false
			}
		default:
			s.i++
		}
	}
	return nil, false, false
}

// num scans a JSON number and returns its text.
func (s *scanner) num() ([]byte, bool) {
	start := s.i
	if s.peek() == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		digits()
	default:
		return nil, false
	}
	if s.peek() == '.' {
		s.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// skip scans any value.
func (s *scanner) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	s.ws()
	switch c := s.peek(); c {
	case '{':
		s.i++
		s.ws()
		if s.peek() == '}' {
			s.i++
			return true
		}
		for {
			s.ws()
			if _, _, ok := s.str(); !ok {
				return false
			}
			s.ws()
			if s.peek() != ':' {
				return false
			}
			s.i++
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return true
			default:
				return false
			}
		}
	case '[':
		s.i++
		s.ws()
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case '"':
		_, _, ok := s.str()
		return ok
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, ok := s.num()
		return ok
	}
}

// check scans a value against n; false when it is not valid JSON or does
// not conform (or the scanner cannot tell: a repeated key).
func (s *scanner) check(n *Node) bool {
	s.ws()
	c := s.peek()
	if c == 'n' {
		return n.Nullable && s.lit("null")
	}
	switch n.Kind {
	case Object:
		return c == '{' && s.object(n)
	case Array:
		if c != '[' {
			return false
		}
		s.i++
		s.ws()
		if s.peek() == ']' {
			s.i++
			return true
		}
		for {
			if !s.check(n.Items) {
				return false
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case String:
		raw, esc, ok := s.str()
		if !ok {
			return false
		}
		if n.DateTime {
			_, err := ParseDateTime(unquote(raw, esc))
			return err == nil
		}
		return true
	case Boolean:
		return c == 't' && s.lit("true") || c == 'f' && s.lit("false")
	case Number:
		text, ok := s.num()
		if !ok {
			return false
		}
		_, err := strconv.ParseFloat(string(text), 64)
		return err == nil
	case Integer:
		text, ok := s.num()
		if !ok {
			return false
		}
		_, err := ParseInteger(json.Number(text))
		return err == nil
	}
	return false
}

// object scans an object against n (s.i at its '{').
func (s *scanner) object(n *Node) bool {
	s.i++
	var seenSmall uint64
	var seenBig []bool
	if len(n.Props) > 64 {
		seenBig = make([]bool, len(n.Props))
	}
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.ws()
			raw, esc, ok := s.str()
			if !ok {
				return false
			}
			s.ws()
			if s.peek() != ':' {
				return false
			}
			s.i++
			idx := -1
			if esc {
				idx = n.propIndex([]byte(unquote(raw, esc)))
			} else {
				idx = n.propIndex(raw)
			}
			if idx < 0 {
				if !s.skip(1) {
					return false
				}
			} else {
				if idx < 64 {
					if seenSmall&(1<<idx) != 0 {
						return false // a repeated key: the reference decides
					}
					seenSmall |= 1 << idx
				} else {
					if seenBig[idx] {
						return false
					}
					seenBig[idx] = true
				}
				if !s.check(n.Props[idx].Node) {
					return false
				}
			}
			s.ws()
			if c := s.peek(); c == ',' {
				s.i++
				continue
			} else if c == '}' {
				s.i++
				break
			}
			return false
		}
	}
	for i, p := range n.Props {
		if !p.Required {
			continue
		}
		if i < 64 && seenSmall&(1<<i) == 0 || i >= 64 && !seenBig[i] {
			return false
		}
	}
	return true
}

// propIndex returns the index of the property called name, -1 if none.
func (n *Node) propIndex(name []byte) int {
	if n.index != nil {
		if i, ok := n.index[string(name)]; ok {
			return i
		}
		return -1
	}
	for i, p := range n.Props {
		if p.Name == string(name) {
			return i
		}
	}
	return -1
}

// unquote returns the text of a string's raw bytes (without quotes). As
// encoding/json does, invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(raw []byte, escaped bool) string {
	if !escaped {
		if utf8.Valid(raw) {
			return string(raw)
		}
		return string(bytes.ToValidUTF8(raw, []byte("\uFFFD")))
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r) // RuneError for invalid bytes
			i += size
			continue
		}
		switch raw[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, hex4(raw[i+2:i+6])); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // " \ /
			out = append(out, raw[i+1])
		}
		i += 2
	}
	return string(out)
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// Members calls fn with each member of obj, a valid JSON object, in
// order: its key (unescaped) and its value's bytes. It returns false
// when obj is not an object.
func Members(obj []byte, fn func(key string, value []byte)) bool {
	s := scanner{b: obj}
	s.ws()
	if s.peek() != '{' {
		return false
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		return true
	}
	for {
		s.ws()
		raw, esc, ok := s.str()
		if !ok {
			return false
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		start := s.i
		if !s.skip(1) {
			return false
		}
		fn(unquote(raw, esc), obj[start:s.i])
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			return true
		default:
			return false
		}
	}
}

// Elements calls fn with each element of arr, a valid JSON array. It
// returns false when arr is not an array.
func Elements(arr []byte, fn func(value []byte)) bool {
	s := scanner{b: arr}
	s.ws()
	if s.peek() != '[' {
		return false
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		return true
	}
	for {
		s.ws()
		start := s.i
		if !s.skip(1) {
			return false
		}
		fn(arr[start:s.i])
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			return true
		default:
			return false
		}
	}
}

// Text returns the text of value, a JSON string; false if it is not one.
func Text(value []byte) (string, bool) {
	s := scanner{b: value}
	s.ws()
	raw, esc, ok := s.str()
	if !ok {
		return "", false
	}
	return unquote(raw, esc), true
}

// IsNull reports whether value is JSON null (or only white space).
func IsNull(value []byte) bool {
	v := bytes.TrimSpace(value)
	return len(v) == 0 || string(v) == "null"
}
