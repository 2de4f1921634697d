package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// consume -f: a format string with kcat's letters, each record printed
// through it.
//
//	%t topic   %p partition   %o offset   %T timestamp (unix ms)
//	%k key     %K key length (-1: none)
//	%s %v value   %S value length (-1: null)
//	%h headers, escaped, as k=v,k=v   %% a percent sign
//	\n \t \r \\ as in C
const formatHelp = `print each record through this format, kcat's letters: %t topic, %p partition, %o offset, ` +
	`%T timestamp (unix ms), %k key, %K key length, %s or %v value, %S value length, %h headers (escaped, k=v,k=v), ` +
	`%% percent; \n \t \r \\ escapes (e.g. '%p:%o %k=%s\n')`

// formatPiece is a literal run of a format, or one letter.
type formatPiece struct {
	lit  string
	verb byte // 0 for a literal
}

// parseFormat parses a -f format.
func parseFormat(f string) ([]formatPiece, error) {
	var out []formatPiece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, formatPiece{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '\\' && i+1 < len(f):
			i++
			switch f[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				return nil, fmt.Errorf(`flag -f: unknown escape \%c (\n, \t, \r or \\)`, f[i])
			}
		case c == '%' && i+1 < len(f):
			i++
			switch v := f[i]; v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'T', 'k', 'K', 's', 'v', 'S', 'h':
				flush()
				out = append(out, formatPiece{verb: v})
			default:
				return nil, fmt.Errorf("flag -f: unknown letter %%%c (see 'floe consume -h')", v)
			}
		case c == '%':
			return nil, fmt.Errorf("flag -f: a lone %% at the end (%%%% prints one)")
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return out, nil
}

// formatRecord writes r through the format.
func (p *printer) formatRecord(partition int32, r *floev1.Record) error {
	for _, f := range p.format {
		switch f.verb {
		case 0:
			p.w.WriteString(f.lit)
		case 't':
			p.w.WriteString(p.topic)
		case 'p':
			p.w.WriteString(strconv.Itoa(int(partition)))
		case 'o':
			p.w.WriteString(strconv.FormatInt(r.GetOffset(), 10))
		case 'T':
			p.w.WriteString(strconv.FormatInt(r.GetTimestampMs(), 10))
		case 'k':
			p.w.Write(r.GetKey())
		case 'K':
			n := -1
			if r.Key != nil {
				n = len(r.Key)
			}
			p.w.WriteString(strconv.Itoa(n))
		case 's', 'v':
			p.w.Write(r.GetValue())
		case 'S':
			n := len(r.GetValue())
			if r.GetNullValue() {
				n = -1
			}
			p.w.WriteString(strconv.Itoa(n))
		case 'h':
			p.writeHeaders(r)
		}
	}
	return nil
}

// writeHeaders writes the headers as k=v,k=v, escaped so that the line can
// be split back: '\', ',', '=', control characters and bytes that are not
// UTF-8 are written as \\, \,, \=, \n, \t, \r or \xNN.
func (p *printer) writeHeaders(r *floev1.Record) {
	for i, h := range r.GetHeaders() {
		if i > 0 {
			p.w.WriteByte(',')
		}
		p.w.WriteString(escapeHeader([]byte(h.GetKey())))
		p.w.WriteByte('=')
		p.w.WriteString(escapeHeader(h.GetValue()))
	}
}

// escapeHeader escapes a header key or value for text output.
func escapeHeader(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&out, `\x%02x`, b[0])
		case r == '\\' || r == ',' || r == '=':
			out.WriteByte('\\')
			out.WriteRune(r)
		case r == '\n':
			out.WriteString(`\n`)
		case r == '\t':
			out.WriteString(`\t`)
		case r == '\r':
			out.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&out, `\x%02x`, r)
		default:
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.String()
}

// timestampText is a record's timestamp as text output prints it.
func timestampText(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
