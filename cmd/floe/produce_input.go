package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// Per-line keys, headers and partitions for `floe produce`: -f reads each
// line through a format (rpk's and kcat's letters), -json reads each line
// as the object `floe consume -o json` prints.

const produceFormatHelp = `read each line through this format: %k key, %v (or %s) value, %p partition, ` +
	`%h headers as k=v,k=v (escaped as consume prints them); the text between letters separates them (e.g. '%k %h %v')`

// lineInput is one line's record and, when the line names one, partition
// (-1 otherwise).
type lineInput struct {
	rec       *floev1.Record
	partition int32
}

// parseProduceFormat parses -f: consume's format syntax, the letters a
// line can carry, each but the last followed by a literal separator.
func parseProduceFormat(f string) ([]formatPiece, error) {
	ps, err := parseFormat(f)
	if err != nil {
		return nil, err
	}
	for len(ps) > 0 && ps[len(ps)-1].verb == 0 && len(bytes.Trim([]byte(ps[len(ps)-1].lit), "\n")) == 0 {
		ps = ps[:len(ps)-1] // a trailing \n: lines are already split
	}
	if len(ps) == 0 {
		return nil, errors.New("flag -f: the format reads nothing (use %v for the value)")
	}
	for i, p := range ps {
		switch p.verb {
		case 0, 'k', 'v', 's', 'p', 'h':
		default:
			return nil, fmt.Errorf("flag -f: %%%c cannot be read from a line (%%k, %%v, %%p and %%h can)", p.verb)
		}
		if p.verb != 0 && i+1 < len(ps) && ps[i+1].verb != 0 {
			return nil, fmt.Errorf("flag -f: %%%c and %%%c need text between them to be told apart", p.verb, ps[i+1].verb)
		}
	}
	return ps, nil
}

// fromFormat reads a line through the pieces of -f.
func fromFormat(ps []formatPiece, line []byte) (lineInput, error) {
	in := lineInput{rec: &floev1.Record{}, partition: -1}
	rest := line
	for i, p := range ps {
		if p.verb == 0 {
			if !bytes.HasPrefix(rest, []byte(p.lit)) {
				return in, fmt.Errorf("does not match the format: %q expected", p.lit)
			}
			rest = rest[len(p.lit):]
			continue
		}
		field := rest
		if i+1 < len(ps) {
			j := bytes.Index(rest, []byte(ps[i+1].lit))
			if j < 0 {
				return in, fmt.Errorf("does not match the format: %q expected after %%%c", ps[i+1].lit, p.verb)
			}
			field = rest[:j]
		}
		rest = rest[len(field):]
		switch p.verb {
		case 'k':
			in.rec.Key = field
		case 'v', 's':
			in.rec.Value = field
		case 'p':
			n, err := strconv.ParseInt(string(field), 10, 32)
			if err != nil || n < 0 {
				return in, fmt.Errorf("partition %q is not a partition number", field)
			}
			in.partition = int32(n)
		case 'h':
			hs, err := parseHeaderText(field)
			if err != nil {
				return in, err
			}
			in.rec.Headers = hs
		}
	}
	if len(rest) > 0 {
		return in, fmt.Errorf("does not match the format: %q left over", rest)
	}
	return in, nil
}

// parseHeaderText reads k=v,k=v, escaped as escapeHeader writes it.
func parseHeaderText(b []byte) ([]*floev1.Header, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var hs []*floev1.Header
	var cur []byte
	var key []byte
	inKey := true
	end := func() error {
		if inKey {
			return fmt.Errorf("header %q has no '='", cur)
		}
		hs = append(hs, &floev1.Header{Key: string(key), Value: cur})
		cur, key, inKey = nil, nil, true
		return nil
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\\' && i+1 < len(b):
			i++
			switch b[i] {
			case 'n':
				cur = append(cur, '\n')
			case 't':
				cur = append(cur, '\t')
			case 'r':
				cur = append(cur, '\r')
			case 'x':
				if i+2 >= len(b) {
					return nil, errors.New(`headers: \x needs two hex digits`)
				}
				v, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8)
				if err != nil {
					return nil, fmt.Errorf(`headers: \x%s is not a hex byte`, b[i+1:i+3])
				}
				cur = append(cur, byte(v))
				i += 2
			default:
				cur = append(cur, b[i])
			}
		case c == '=' && inKey:
			key, cur, inKey = cur, nil, false
		case c == ',':
			if err := end(); err != nil {
				return nil, err
			}
		default:
			cur = append(cur, c)
		}
	}
	return hs, end()
}

// jsonLine is a line of -json: the object `floe consume -o json` prints
// (topic, offset and timestamp are ignored; headers may also be an
// object of string values).
type jsonLine struct {
	Key           *string         `json:"key"`
	KeyEncoding   string          `json:"key_encoding"`
	Value         *string         `json:"value"`
	ValueEncoding string          `json:"value_encoding"`
	Headers       json.RawMessage `json:"headers"`
	Partition     *int32          `json:"partition"`
}

// fromJSON reads a line of -json.
func fromJSON(line []byte) (lineInput, error) {
	in := lineInput{rec: &floev1.Record{}, partition: -1}
	var j jsonLine
	d := json.NewDecoder(bytes.NewReader(line))
	if err := d.Decode(&j); err != nil {
		return in, fmt.Errorf("not a JSON object: %v", err)
	}
	var err error
	if j.Key != nil {
		if in.rec.Key, err = decodeBytes("key", *j.Key, j.KeyEncoding); err != nil {
			return in, err
		}
	}
	if j.Value == nil {
		in.rec.NullValue = true
	} else if in.rec.Value, err = decodeBytes("value", *j.Value, j.ValueEncoding); err != nil {
		return in, err
	}
	if j.Partition != nil {
		if *j.Partition < 0 {
			return in, fmt.Errorf("partition %d is negative", *j.Partition)
		}
		in.partition = *j.Partition
	}
	if len(j.Headers) > 0 && string(j.Headers) != "null" {
		var list []struct {
			Key           string `json:"key"`
			Value         string `json:"value"`
			ValueEncoding string `json:"value_encoding"`
		}
		var obj map[string]string
		switch {
		case json.Unmarshal(j.Headers, &list) == nil:
			for _, h := range list {
				v, err := decodeBytes("header "+h.Key, h.Value, h.ValueEncoding)
				if err != nil {
					return in, err
				}
				in.rec.Headers = append(in.rec.Headers, &floev1.Header{Key: h.Key, Value: v})
			}
		case json.Unmarshal(j.Headers, &obj) == nil:
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				in.rec.Headers = append(in.rec.Headers, &floev1.Header{Key: k, Value: []byte(obj[k])})
			}
		default:
			return in, errors.New(`"headers" is neither a list of {"key","value"} nor an object of strings`)
		}
	}
	return in, nil
}

// decodeBytes reads a JSON string field, base64 when its encoding says so.
func decodeBytes(what, s, enc string) ([]byte, error) {
	switch enc {
	case "":
		return []byte(s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s: not base64: %v", what, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s: encoding %q is not base64", what, enc)
}
