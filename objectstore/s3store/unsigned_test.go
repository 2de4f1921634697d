package s3store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

// The payload hash a PUT is signed with: the body's SHA-256 over plain
// HTTP by default, UNSIGNED-PAYLOAD with Config.UnsignedPayload.
func TestUnsignedPayloadHeader(t *testing.T) {
	url, got := putHeaderServer(t, "X-Amz-Content-Sha256")
	body := []byte("a file body")
	sum := sha256.Sum256(body)
	for _, tc := range []struct {
		unsigned bool
		want     string
	}{{false, hex.EncodeToString(sum[:])}, {true, "UNSIGNED-PAYLOAD"}} {
		cfg := configFor(t)
		cfg.Endpoint, cfg.UnsignedPayload = url, tc.unsigned
		s := newStore(t, cfg)
		got()
		if err := s.Put(t.Context(), "k", body, objectstore.PutOptions{IfAbsent: true}); err != nil {
			t.Fatalf("unsigned=%v: put: %v", tc.unsigned, err)
		}
		if h := got(); len(h) != 1 || h[0] != tc.want {
			t.Errorf("unsigned=%v: X-Amz-Content-Sha256 %q, want [%q]", tc.unsigned, h, tc.want)
		}
	}
}

// versitygw over plain HTTP accepts unsigned PUTs, if-absent included.
func TestUnsignedPayloadVersitygw(t *testing.T) {
	cfg := configFor(t)
	cfg.UnsignedPayload = true
	s := newStore(t, cfg)
	data := bytes.Repeat([]byte("floe"), 300_000)
	if err := s.Put(t.Context(), "unsigned/a", data, objectstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("put: %v", err)
	}
	got, err := s.Get(t.Context(), "unsigned/a", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v; want the %d bytes put", len(got), err, len(data))
	}
	if err := s.Put(t.Context(), "unsigned/a", data[:10], objectstore.PutOptions{IfAbsent: true}); !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("second if-absent put: %v, want ErrExists", err)
	}
}
