package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"hash"
	"testing"
)

// scramExample is one exchange of an RFC's example (user "user", password
// "pencil"): the client's proof and the server's signature that a
// credential derived from the password must reproduce.
type scramExample struct {
	clientFirstBare, serverFirst, clientFinalNoProof string
	salt                                             string // base64
	proof, serverSignature                           string // base64
}

func (e scramExample) authMessage() []byte {
	return []byte(e.clientFirstBare + "," + e.serverFirst + "," + e.clientFinalNoProof)
}

// checkScram verifies c against e as a server does (RFC 5802 §3): the
// client key recovered from the proof hashes to StoredKey, and ServerKey
// signs the auth message as the RFC's server did.
func checkScram(t *testing.T, h func() hash.Hash, c ScramCredential, e scramExample) {
	t.Helper()
	am := e.authMessage()
	proof := b64(t, e.proof)
	sig := hmac.New(h, c.StoredKey)
	sig.Write(am)
	clientSig := sig.Sum(nil)
	if len(proof) != len(clientSig) {
		t.Fatalf("proof is %d bytes, signature %d", len(proof), len(clientSig))
	}
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	sh := h()
	sh.Write(clientKey)
	if got := sh.Sum(nil); !bytes.Equal(got, c.StoredKey) {
		t.Errorf("H(ClientKey) = %x, want StoredKey %x: the RFC's client proof does not verify", got, c.StoredKey)
	}
	ss := hmac.New(h, c.ServerKey)
	ss.Write(am)
	if got := base64.StdEncoding.EncodeToString(ss.Sum(nil)); got != e.serverSignature {
		t.Errorf("ServerSignature = %s, want the RFC's %s", got, e.serverSignature)
	}
}

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScramRFC7677 derives the credential of RFC 7677 §3's SCRAM-SHA-256
// example and checks the exchange the RFC shows against it.
func TestScramRFC7677(t *testing.T) {
	e := scramExample{
		clientFirstBare:    "n=user,r=rOprNGfwEbeRWgbNEkqO",
		serverFirst:        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		clientFinalNoProof: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
		salt:               "W22ZaJ0SNY7soEsUEjb6gQ==",
		proof:              "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		serverSignature:    "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
	}
	c, err := NewScramCredential("user", ScramSHA256, "pencil", b64(t, e.salt), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "user" || c.Mechanism != ScramSHA256 || c.Iterations != 4096 || !bytes.Equal(c.Salt, b64(t, e.salt)) {
		t.Errorf("credential %+v does not keep its inputs", c)
	}
	checkScram(t, ScramSHA256.New(), c, e)
}

// TestScramRFC5802 runs the same derivation with SHA-1 over RFC 5802 §5's
// example (floe offers no SCRAM-SHA-1; the formula is the same).
func TestScramRFC5802(t *testing.T) {
	e := scramExample{
		clientFirstBare:    "n=user,r=fyko+d2lbbFgONRv9qkxdawL",
		serverFirst:        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
		clientFinalNoProof: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j",
		salt:               "QSXCR+Q6sek8bf92",
		proof:              "v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
		serverSignature:    "rmF9pqV8S7suAoZWja4dJRkFsKQ=",
	}
	c, err := deriveScram(sha1.New, "user", ScramUnknown, "pencil", b64(t, e.salt), 4096)
	if err != nil {
		t.Fatal(err)
	}
	checkScram(t, sha1.New, c, e)
}

func TestScramCredentialRefusals(t *testing.T) {
	if _, err := NewScramCredential("u", ScramUnknown, "p", nil, 4096); err == nil {
		t.Error("unknown mechanism accepted")
	}
	if _, err := NewScramCredential("u", ScramSHA512, "p", nil, MinScramIterations-1); err == nil {
		t.Error("iterations below the minimum accepted")
	}
	a, err := NewScramCredential("u", ScramSHA512, "p", nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewScramCredential("u", ScramSHA512, "p", nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Salt) != 32 || bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.StoredKey, b.StoredKey) {
		t.Errorf("random salts: %x and %x", a.Salt, b.Salt)
	}
	if len(a.StoredKey) != 64 || len(a.ServerKey) != 64 {
		t.Errorf("SHA-512 keys of %d and %d bytes", len(a.StoredKey), len(a.ServerKey))
	}
}
