package iceberg

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestTableName(t *testing.T) {
	for topic, want := range map[string]string{
		"orders":         "orders",
		"orders.created": "orders_dcreated",
		"user-events":    "user_hevents",
		"user_events":    "user__events",
		"Orders":         "_uorders",
		"a._-Z9":         "a_d___h_uz9",
	} {
		if got := TableName(topic); got != want {
			t.Errorf("TableName(%q) = %q, want %q", topic, got, want)
		}
	}
}

// decodeTableName inverts TableName for names it did not cut.
func decodeTableName(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(name) {
			return "", false
		}
		i++
		switch name[i] {
		case '_':
			b.WriteByte('_')
		case 'd':
			b.WriteByte('.')
		case 'h':
			b.WriteByte('-')
		case 'u':
			if i+1 >= len(name) {
				return "", false
			}
			i++
			b.WriteByte(name[i] - 'a' + 'A')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// TestTableNameOneToOne: every mapping is a valid, unquoted SQL name of
// at most 255 characters; short ones decode back to their topic (so no
// two topics share a table); long ones differ by their hash.
func TestTableNameOneToOne(t *testing.T) {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	valid := regexp.MustCompile(`^[a-z0-9_]+$`)
	rnd := rand.New(rand.NewPCG(1, 2))
	seen := map[string]string{}
	for i := 0; i < 20000; i++ {
		n := 1 + rnd.IntN(12)
		if i%10 == 0 {
			n = 80 + rnd.IntN(170) // up to Kafka's 249
		}
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(alphabet[rnd.IntN(len(alphabet))])
		}
		topic := b.String()
		name := TableName(topic)
		if !valid.MatchString(name) || len(name) > MaxTableNameLen {
			t.Fatalf("TableName(%q) = %q: not [a-z0-9_]{1,255}", topic, name)
		}
		if prev, ok := seen[name]; ok && prev != topic {
			t.Fatalf("TableName(%q) = TableName(%q) = %q", topic, prev, name)
		}
		seen[name] = topic
		if len(name) < MaxTableNameLen-5 { // not cut: a cut name is 252 to 255 long
			if back, ok := decodeTableName(name); !ok || back != topic {
				t.Fatalf("TableName(%q) = %q decodes to %q, %v", topic, name, back, ok)
			}
		}
	}
	long := strings.Repeat("A", 249)
	if a, b := TableName(long), TableName(long[:248]+"B"); a == b || len(a) > MaxTableNameLen {
		t.Errorf("long names: %q and %q", a, b)
	}
}

func TestValidateNamespace(t *testing.T) {
	for _, ok := range []string{"floe", "floe_prod", "_x", "a1"} {
		if err := ValidateNamespace(ok); err != nil {
			t.Errorf("ValidateNamespace(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "floe.prod", "Floe", "1a", "a-b", strings.Repeat("a", 256)} {
		if err := ValidateNamespace(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateNamespace(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	good := []Config{
		DefaultPostgresConfig("postgres://x/y", "bucket"),
		DefaultSQLiteConfig("/var/lib/floe"),
	}
	for _, c := range good {
		if err := c.validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	pg := DefaultPostgresConfig("postgres://x/y", "bucket")
	for name, c := range map[string]Config{
		"no dsn":             func() Config { c := pg; c.DSN = ""; return c }(),
		"dotted catalog":     func() Config { c := pg; c.CatalogName = "a.b"; return c }(),
		"dotted namespace":   func() Config { c := pg; c.Options.Namespace = "a.b"; return c }(),
		"local warehouse":    func() Config { c := pg; c.Warehouse = "/tmp/w"; return c }(),
		"endpoint, no keys":  func() Config { c := pg; c.S3Endpoint = "http://127.0.0.1:1"; return c }(),
		"unknown backend":    func() Config { c := pg; c.Backend = "mysql"; return c }(),
		"relative warehouse": func() Config { c := DefaultSQLiteConfig("/d"); c.Warehouse = "w"; return c }(),
	} {
		if err := c.validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: validate = %v, want ErrInvalidConfig", name, err)
		}
	}
}
