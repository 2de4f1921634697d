package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// ValueError is a value that does not conform: the path of the first
// failing place and why. It wraps ErrInvalidValue.
type ValueError struct {
	Path string
	Msg  string
}

func (e *ValueError) Error() string { return e.Path + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrInvalidValue) true.
func (e *ValueError) Unwrap() error { return ErrInvalidValue }

// DecodeJSON decodes one JSON document, numbers as json.Number. Data
// after the document is an error.
func DecodeJSON(value []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// Validate checks value, JSON text, against s. A nil value (a null
// record value, a tombstone) always conforms. The error is a
// *ValueError naming the first failing path.
func (s *Schema) Validate(value []byte) error {
	if value == nil {
		return nil
	}
	sc := scanner{b: value}
	if sc.check(s.Root) {
		if sc.ws(); sc.i == len(value) {
			return nil
		}
	}
	return s.validateSlow(value)
}

// validateSlow is the reference check: decode with encoding/json, then
// walk the tree. It gives the errors.
func (s *Schema) validateSlow(value []byte) error {
	v, err := DecodeJSON(value)
	if err != nil {
		return &ValueError{Path: "$", Msg: "not JSON: " + err.Error()}
	}
	return s.ValidateDecoded(v)
}

// ValidateDecoded checks a value DecodeJSON returned.
func (s *Schema) ValidateDecoded(v any) error {
	return check(s.Root, v, "$")
}

func check(n *Node, v any, path string) error {
	if v == nil {
		if n.Nullable {
			return nil
		}
		return &ValueError{Path: path, Msg: "want " + n.typeName() + ", got null"}
	}
	mismatch := func() error {
		return &ValueError{Path: path, Msg: "want " + n.typeName() + ", got " + jsonKind(v)}
	}
	switch n.Kind {
	case Object:
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch()
		}
		for _, p := range n.Props {
			pv, present := m[p.Name]
			if !present {
				if p.Required {
					return &ValueError{Path: Child(path, p.Name), Msg: "required, missing"}
				}
				continue
			}
			if err := check(p.Node, pv, Child(path, p.Name)); err != nil {
				return err
			}
		}
	case Array:
		a, ok := v.([]any)
		if !ok {
			return mismatch()
		}
		for i, e := range a {
			if err := check(n.Items, e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case String:
		s, ok := v.(string)
		if !ok {
			return mismatch()
		}
		if n.DateTime {
			if _, err := ParseDateTime(s); err != nil {
				return &ValueError{Path: path, Msg: fmt.Sprintf("want a date-time string (RFC 3339), got %s", quoteShort(s))}
			}
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return mismatch()
		}
	case Number:
		num, ok := v.(json.Number)
		if !ok {
			return mismatch()
		}
		if _, err := ParseNumber(num); err != nil {
			return &ValueError{Path: path, Msg: err.Error()}
		}
	case Integer:
		num, ok := v.(json.Number)
		if !ok {
			return mismatch()
		}
		if _, err := ParseInteger(num); err != nil {
			return &ValueError{Path: path, Msg: err.Error()}
		}
	}
	return nil
}

// ParseNumber reads a JSON number as a float64; one out of its range is
// an error.
func ParseNumber(n json.Number) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, fmt.Errorf("number %s is out of range of a double", shorten(string(n)))
	}
	return f, nil
}

// ParseInteger reads a JSON number that is an integer (JSON Schema's
// integer: 3, 3.0 and 3e2 are integers) within int64.
func ParseInteger(n json.Number) (int64, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) {
		return 0, fmt.Errorf("want integer, got number %s", shorten(string(n)))
	}
	// float64(MaxInt64) rounds up to 2^63, itself out of range.
	if f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("integer %s is out of range of a 64-bit integer", shorten(string(n)))
	}
	return int64(f), nil
}

// ParseDateTime reads an RFC 3339 date-time (a time zone offset or Z is
// required), within the years 0001 to 9999.
func ParseDateTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, fmt.Errorf("year %d out of range", y)
	}
	return t, nil
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func quoteShort(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}
