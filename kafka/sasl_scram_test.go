package kafka

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/floe-broker/floe/auth"
)

// rfc7677 is RFC 7677 §3's SCRAM-SHA-256 example (user "user", password
// "pencil").
var rfc7677 = struct {
	clientFirst, serverNonce, serverFirst, clientFinal, serverFinal string
	salt                                                            string
}{
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
	salt:        "W22ZaJ0SNY7soEsUEjb6gQ==",
}

func rfcCredential(t *testing.T, password string) auth.ScramCredential {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString(rfc7677.salt)
	c, err := auth.NewScramCredential("user", auth.ScramSHA256, password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestScramRFC7677(t *testing.T) {
	first, err := parseScramFirst([]byte(rfc7677.clientFirst))
	if err != nil || first.user != "user" {
		t.Fatalf("client-first: %+v, %v", first, err)
	}
	srv, sf := newScramServer(first, rfcCredential(t, "pencil"), rfc7677.serverNonce)
	if string(sf) != rfc7677.serverFirst {
		t.Fatalf("server-first\n got %s\nwant %s", sf, rfc7677.serverFirst)
	}
	out, err := srv.final([]byte(rfc7677.clientFinal))
	if err != nil || string(out) != rfc7677.serverFinal {
		t.Fatalf("server-final %q, %v; want %q", out, err, rfc7677.serverFinal)
	}
}

func TestScramRefusals(t *testing.T) {
	first, _ := parseScramFirst([]byte(rfc7677.clientFirst))
	for _, tc := range []struct {
		name, password, final string
	}{
		{"wrong password", "pencil2", rfc7677.clientFinal},
		{"wrong proof", "pencil", strings.Replace(rfc7677.clientFinal, "p=dHzb", "p=eHzb", 1)},
		{"nonce not the server's", "pencil", strings.Replace(rfc7677.clientFinal, "r=rOprNGfwEbeRWgbNEkqO%hvYD", "r=rOprNGfwEbeRWgbNEkqO%hvYE", 1)},
		{"channel binding changed", "pencil", strings.Replace(rfc7677.clientFinal, "c=biws", "c=eSws", 1)},
		{"short proof", "pencil", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"},
		{"no proof", "pencil", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"},
	} {
		srv, _ := newScramServer(first, rfcCredential(t, tc.password), rfc7677.serverNonce)
		if out, err := srv.final([]byte(tc.final)); !errors.Is(err, errScram) || out != nil {
			t.Errorf("%s: %q, %v; want refused", tc.name, out, err)
		}
	}
	for _, bad := range []string{
		"", "n", "n,,", "p=tls-unique,,n=user,r=x", "x,,n=user,r=abc", "n,,n=user", "n,,r=abc,n=user",
		"n,,n=,r=abc", "n,,n=us=er,r=abc", "n,,n=user,r=", "n,a=bob,n=user,r=abc", "n,,m=ext,n=user,r=abc",
		"n,,n=user,r=abc,tokenauth=true", "n,,n=user,r=a,b c",
	} {
		if _, err := parseScramFirst([]byte(bad)); !errors.Is(err, errScram) {
			t.Errorf("client-first %q accepted", bad)
		}
	}
	f, err := parseScramFirst([]byte("y,a=a=2Cb,n=a=2Cb,r=abc"))
	if err != nil || f.user != "a,b" || f.gs2 != "y,a=a=2Cb," {
		t.Errorf("escaped names: %+v, %v", f, err)
	}
}

func TestPlain(t *testing.T) {
	for _, tc := range []struct {
		msg, user, password string
	}{
		{"\x00alice\x00secret", "alice", "secret"},
		{"alice\x00alice\x00secret", "alice", "secret"},
		{"bob\x00alice\x00secret", "", ""},
		{"\x00\x00secret", "", ""},
		{"\x00alice\x00", "", ""},
		{"alice\x00secret", "", ""},
		{"\x00a\x00b\x00c", "", ""},
	} {
		u, p, err := parsePlain([]byte(tc.msg))
		if tc.user == "" {
			if err == nil {
				t.Errorf("%q accepted", tc.msg)
			}
			continue
		}
		if err != nil || u != tc.user || p != tc.password {
			t.Errorf("%q: %q %q %v", tc.msg, u, p, err)
		}
	}
	c := rfcCredential(t, "pencil")
	if !plainMatches(c, "pencil") || plainMatches(c, "Pencil") || plainMatches(c, "") {
		t.Fatal("plainMatches")
	}
}

// TestScramClientAgainstServer runs a client computed here (the RFC's
// formulas) against the server with random nonces, SHA-256 and SHA-512.
func TestScramClientAgainstServer(t *testing.T) {
	for _, mech := range []auth.ScramMechanism{auth.ScramSHA256, auth.ScramSHA512} {
		cred, err := auth.NewScramCredential("u", mech, "pw", nil, 4096)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := parseScramFirst([]byte("n,,n=u,r=clientnonce"))
		srv, sf := newScramServer(first, cred, serverNonce())
		final, wantV := clientFinal(t, mech, "pw", cred, "n=u,r=clientnonce", string(sf), "")
		out, err := srv.final([]byte(final))
		if err != nil || !bytes.Equal(out, []byte(wantV)) {
			t.Fatalf("%v: %q, %v; want %q", mech, out, err, wantV)
		}
	}
	// librdkafka sends its client nonce again before the server-first
	// nonce; Apache Kafka accepts that (endsWith), and so does floe (kcat
	// failed with "nonce does not match" before).
	cred, _ := auth.NewScramCredential("u", auth.ScramSHA256, "pw", nil, 4096)
	first, _ := parseScramFirst([]byte("n,,n=u,r=clientnonce"))
	srv, sf := newScramServer(first, cred, serverNonce())
	final, wantV := clientFinal(t, auth.ScramSHA256, "pw", cred, "n=u,r=clientnonce", string(sf), "clientnonce")
	if out, err := srv.final([]byte(final)); err != nil || string(out) != wantV {
		t.Fatalf("librdkafka's client-final: %q, %v; want %q", out, err, wantV)
	}
	var _ = sha256.New
}

// clientFinal computes a client's final message and the expected
// server-final, from the password; the client-final's nonce is prefix and
// then server-first's.
func clientFinal(t *testing.T, mech auth.ScramMechanism, password string, cred auth.ScramCredential, bare, serverFirst, prefix string) (string, string) {
	t.Helper()
	h := mech.New()
	nonce := prefix + strings.TrimPrefix(strings.Split(serverFirst, ",")[0], "r=")
	noProof := "c=biws,r=" + nonce
	authMsg := bare + "," + serverFirst + "," + noProof
	// SaltedPassword is recomputed through the contract's derivation: the
	// ClientKey is what hashes to StoredKey.
	d, err := auth.NewScramCredential(cred.User, mech, password, cred.Salt, cred.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	_ = d
	salted := hiForTest(h, password, cred.Salt, cred.Iterations)
	ck := hmac.New(h, salted)
	ck.Write([]byte("Client Key"))
	clientKey := ck.Sum(nil)
	sig := hmac.New(h, cred.StoredKey)
	sig.Write([]byte(authMsg))
	proof := sig.Sum(nil)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	ss := hmac.New(h, cred.ServerKey)
	ss.Write([]byte(authMsg))
	return noProof + ",p=" + base64.StdEncoding.EncodeToString(proof), "v=" + base64.StdEncoding.EncodeToString(ss.Sum(nil))
}
