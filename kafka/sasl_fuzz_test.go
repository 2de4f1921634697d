package kafka

import (
	"crypto/pbkdf2"
	"hash"
	"testing"

	"github.com/floe-broker/floe/auth"
)

// Fuzz targets of the SASL parsers (seeds in testdata/fuzz/FuzzSASL*):
//
//	go test -run '^$' -fuzz FuzzSASLScramFirst -fuzztime 30s ./kafka/

func FuzzSASLScramFirst(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst))
	f.Fuzz(func(t *testing.T, msg []byte) {
		first, err := parseScramFirst(msg)
		if err != nil {
			return
		}
		if first.user == "" || first.nonce == "" || first.gs2+first.bare != string(msg) {
			t.Fatalf("accepted %q as %+v", msg, first)
		}
	})
}

func FuzzSASLScramFinal(f *testing.F) {
	f.Add([]byte(rfc7677.clientFinal))
	cred, err := auth.NewScramCredential("user", auth.ScramSHA256, "pencil", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	first, _ := parseScramFirst([]byte(rfc7677.clientFirst))
	f.Fuzz(func(t *testing.T, msg []byte) {
		srv, _ := newScramServer(first, cred, rfc7677.serverNonce)
		if out, err := srv.final(msg); err == nil {
			t.Fatalf("a fuzzed proof verified: %q -> %q", msg, out) // would need SHA-256 preimages
		}
	})
}

func FuzzSASLPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00secret"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		u, p, err := parsePlain(msg)
		if err == nil && (u == "" || p == "") {
			t.Fatalf("accepted %q with an empty user or password", msg)
		}
	})
}

// hiForTest is RFC 5802's Hi (PBKDF2 with HMAC-H).
func hiForTest(h func() hash.Hash, password string, salt []byte, iter int) []byte {
	k, err := pbkdf2.Key(h, password, salt, iter, h().Size())
	if err != nil {
		panic(err)
	}
	return k
}
