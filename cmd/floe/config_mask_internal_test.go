package main

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The cases of issue 16: passwords pgx reads that Go's url.Parse does not.
func TestMaskURLPgxForms(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"postgres://floe:pa#ss@db/floe", "pa#ss"},
		{"postgres://floe:pa?ss@db/floe", "pa?ss"},
		{"postgres://floe:pa[ss@db/floe", "pa[ss"},
		{"postgres://floe:pa%20ss@db/floe", "pa ss"},
		{`host=db user=floe password='a b\' c' dbname=floe`, `a b' c`},
		{`host=db password=x\ y user=floe`, "x y"},
		{"host=db sslpassword=k3yp4ss password=hunter2", "k3yp4ss"},
		{"postgres://db/floe?sslpassword=k3yp4ss&password=hunter2", "k3yp4ss"},
		{"postgres://db/floe?password=hunter2&sslmode=disable", "hunter2"},
	} {
		got := maskURL(tc.in)
		for _, leak := range []string{tc.secret, url.PathEscape(tc.secret), " c'", "hunter2"} {
			if strings.Contains(got, leak) {
				t.Errorf("maskURL(%q) = %q shows %q", tc.in, got, leak)
			}
		}
	}
}

// Generated connection strings, URL and key=value, with passwords of
// every awkward character, each written in a form pgx reads: the output
// never holds a password pgx reads from the input (nor the sslpassword
// written in it), and when not masked whole it still parses, with the
// mask as its password.
func TestMaskURLGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 17))
	alphabet := []rune(`abcXYZ019#?[]@/:&=% '"\!$;,.é注`)
	pass := func() string {
		var b strings.Builder
		for range 8 + rng.IntN(9) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	// escape writes s for a URL component: the bytes pgx would misread
	// always %-escaped, others at random.
	escape := func(s, must string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			if strings.IndexByte(must, c) >= 0 || c >= 0x80 || rng.IntN(4) == 0 {
				fmt.Fprintf(&b, "%%%02X", c)
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	kvValue := func(s string) string {
		if rng.IntN(2) == 0 { // quoted
			return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
		}
		var b strings.Builder
		for _, c := range []byte(s) {
			if c == ' ' || c == '\\' || c == '\'' || rng.IntN(8) == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	for i := range 2000 {
		pw, sslpw := pass(), pass()
		var text string
		switch i % 3 {
		case 0: // userinfo
			text = "postgres://floe:" + escape(pw, "@/% ") + "@db:5432/floe?sslmode=disable&sslpassword=" + escape(sslpw, "&=% ")
		case 1: // query
			text = "postgresql://db/floe?user=floe&password=" + escape(pw, "&=% ") + "&sslpassword=" + escape(sslpw, "&=% ") + "&application_name=x"
		default:
			text = "host=db user=floe password=" + kvValue(pw) + " dbname=floe sslpassword=" + kvValue(sslpw) + " sslmode=disable"
		}
		cfg, err := pgconn.ParseConfig(text)
		if err != nil || cfg.Password != pw {
			t.Fatalf("generator: pgx reads %q as password %q (%v), want %q", text, cfg.Password, err, pw)
		}
		got := maskURL(text)
		for _, secret := range []string{pw, sslpw, url.QueryEscape(pw), url.PathEscape(pw)} {
			if strings.Contains(got, secret) {
				t.Fatalf("maskURL(%q) = %q shows %q", text, got, secret)
			}
		}
		if got == masked {
			continue
		}
		back, err := pgconn.ParseConfig(got)
		if err != nil || back.Password != masked {
			t.Fatalf("maskURL(%q) = %q: pgx reads it as password %q (%v)", text, got, back.Password, err)
		}
	}
}
