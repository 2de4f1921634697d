package main

import (
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// `floe config print` masks the passwords of postgres.url as pgx reads
// them, not as Go's url.Parse would: pgx parses like libpq, so a URL Go
// rejects (postgres://floe:pa#ss@db/floe) or a key=value string with a
// quoted password ('a b\' c') still carries a password pgx sends. The
// string is split the way pgx splits it (URL: the userinfo up to the
// first '@' before any '/', then '&'-separated query pairs; key=value:
// unquoted values ending at a space, quoted ones at the closing quote,
// '\' escaping), the values of password and sslpassword replaced; then
// pgx's own parse checks that no password it reads is left, or the whole
// value is masked.

const masked = "*****"

// maskURL hides every password pgx would read from a connection string.
func maskURL(text string) string {
	out, ok := maskConnString(text)
	if !ok || leaks(text, out) {
		return masked
	}
	return out
}

// leaks reports whether a password pgx reads from text is in out.
func leaks(text, out string) bool {
	cfg, err := pgconn.ParseConfig(text)
	if err != nil {
		return false // pgx reads nothing from it; our split already masked what looks like one
	}
	pw := cfg.Password // the fallbacks share it
	return pw != "" && pw != masked && (strings.Contains(out, pw) || strings.Contains(out, url.QueryEscape(pw)) ||
		strings.Contains(out, url.PathEscape(pw)))
}

// isSecretKey is a connection string key whose value is a secret.
func isSecretKey(k string) bool { return k == "password" || k == "sslpassword" }

// maskConnString replaces the secret values of text; ok is false when
// text cannot be split as pgx would (then nothing of it is shown).
func maskConnString(text string) (string, bool) {
	for _, prefix := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(text, prefix); ok {
			out, ok := maskURLForm(rest)
			return prefix + out, ok
		}
	}
	return maskKeywordValue(text)
}

// maskURLForm masks the part of a connection URI after its scheme.
func maskURLForm(p string) (string, bool) {
	var b strings.Builder
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, pw, has := strings.Cut(p[:i], ":")
		b.WriteString(user)
		if has {
			b.WriteByte(':')
			if pw != "" {
				b.WriteString(masked)
			}
		}
		b.WriteByte('@')
		p = p[i+1:]
	}
	// The hosts end at the first '/' or '?' outside an IPv6 bracket.
	end, inBracket := len(p), false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '[':
			inBracket = true
		case c == ']':
			inBracket = false
		case !inBracket && (c == '/' || c == '?'):
			end = i
		}
		if end < len(p) {
			break
		}
	}
	q := strings.IndexByte(p[end:], '?')
	if q < 0 {
		b.WriteString(p)
		return b.String(), true
	}
	q += end
	b.WriteString(p[:q+1])
	pairs := strings.Split(p[q+1:], "&")
	for i, pair := range pairs {
		rawKey, _, found := strings.Cut(pair, "=")
		key, err := url.PathUnescape(rawKey)
		if err != nil {
			return "", false
		}
		if found && isSecretKey(strings.TrimSpace(key)) {
			pairs[i] = rawKey + "=" + masked
		}
	}
	b.WriteString(strings.Join(pairs, "&"))
	return b.String(), true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// maskKeywordValue masks a key=value connection string, split as pgx
// splits it.
func maskKeywordValue(s string) (string, bool) {
	var b strings.Builder
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
		}
		if i == len(s) {
			return b.String(), true
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return "", false
		}
		key := strings.TrimFunc(s[i:i+eq], func(r rune) bool { return r < 128 && isSpace(byte(r)) })
		b.WriteString(s[i : i+eq+1])
		i += eq + 1
		for i < len(s) && isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
		}
		start := i
		switch {
		case i == len(s):
		case s[i] != '\'':
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i, len(s))
		default:
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return "", false // unterminated: pgx refuses it
			}
			i++
		}
		if isSecretKey(key) {
			b.WriteString(masked)
		} else {
			b.WriteString(s[start:i])
		}
	}
}
