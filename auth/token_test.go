package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNewTokenParseVerify(t *testing.T) {
	text, tok, err := NewToken("User:alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(text) != TokenLen || !strings.HasPrefix(text, "floe_"+tok.ID+"_") {
		t.Fatalf("token text %q", text)
	}
	id, secret, err := ParseToken(text)
	if err != nil || id != tok.ID {
		t.Fatalf("ParseToken = %q, %v", id, err)
	}
	if strings.Contains(string(tok.Hash), secret) || len(tok.Hash) != 32 {
		t.Fatalf("stored hash %x", tok.Hash)
	}
	if tok.Principal != "User:alice" || tok.Expires.Sub(tok.Created) != time.Hour || tok.Revoked {
		t.Fatalf("stored token %+v", tok)
	}
	now := tok.Created.Add(time.Minute)
	if err := tok.Verify(secret, now); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	wrong := []byte(secret)
	wrong[0] ^= 1
	revoked := tok
	revoked.Revoked = true
	for name, check := range map[string]error{
		"wrong secret": tok.Verify(string(wrong), now),
		"empty secret": tok.Verify("", now),
		"expired":      tok.Verify(secret, tok.Expires),
		"revoked":      revoked.Verify(secret, now),
	} {
		if !errors.Is(check, ErrUnauthenticated) {
			t.Errorf("%s: %v, want ErrUnauthenticated", name, check)
		} else if strings.Contains(check.Error(), secret) {
			t.Errorf("%s: the error shows the secret", name)
		}
	}

	_, forever, err := NewToken("User:bob", 0)
	if err != nil || !forever.Expires.IsZero() || forever.Expired(time.Now().Add(1e6*time.Hour)) {
		t.Errorf("ttl 0: %+v %v", forever, err)
	}
	other, _, _ := NewToken("User:bob", 0)
	if other == text {
		t.Error("two tokens alike")
	}
	for _, bad := range []struct {
		p   string
		ttl time.Duration
	}{{"alice", 0}, {"User:", 0}, {"User:a", -time.Second}} {
		if _, _, err := NewToken(bad.p, bad.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewToken(%q, %v) = %v, want ErrInvalid", bad.p, bad.ttl, err)
		}
	}
}

func TestParseTokenRefuses(t *testing.T) {
	good, _, err := NewToken("User:a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"", "floe_", good[:len(good)-1], good + "0",
		strings.Replace(good, "floe_", "flow_", 1),
		good[:len(TokenPrefix)+tokenIDLen] + "-" + good[len(TokenPrefix)+tokenIDLen+1:],
		strings.ToUpper(good[:5]) + good[5:],
		good[:len(good)-1] + "g",
		good[:len(TokenPrefix)] + "X" + good[len(TokenPrefix)+1:],
	} {
		if _, _, err := ParseToken(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("ParseToken(%q) = %v, want ErrUnauthenticated", bad, err)
		}
	}
	if !ValidTokenID(good[len(TokenPrefix):len(TokenPrefix)+tokenIDLen]) || ValidTokenID("abc") || ValidTokenID("ABCDEF0123456789") {
		t.Error("ValidTokenID")
	}
}

// FuzzParseToken: ParseToken never panics, and what it accepts is exactly
// the token it splits.
func FuzzParseToken(f *testing.F) {
	f.Add("floe_0123456789abcdef_" + strings.Repeat("ab", 32))
	f.Add("floe_")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %v is not ErrUnauthenticated", err)
			}
			return
		}
		if TokenPrefix+id+"_"+secret != s || !ValidTokenID(id) || len(secret) != tokenSecretLen {
			t.Fatalf("ParseToken(%q) = %q, %q", s, id, secret)
		}
	})
}
