package s3store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

// The payload hash a PUT is signed with: the body's SHA-256 over plain
// HTTP by default, UNSIGNED-PAYLOAD with Config.UnsignedPayload.
func TestUnsignedPayloadHeader(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			mu.Lock()
			got = append(got, r.Header.Get("X-Amz-Content-Sha256"))
			mu.Unlock()
		}
		w.Header().Set("ETag", `"x"`)
	}))
	t.Cleanup(srv.Close)
	body := []byte("a file body")
	sum := sha256.Sum256(body)
	for _, tc := range []struct {
		unsigned bool
		want     string
	}{{false, hex.EncodeToString(sum[:])}, {true, "UNSIGNED-PAYLOAD"}} {
		cfg := configFor(t)
		cfg.Endpoint, cfg.UnsignedPayload = srv.URL, tc.unsigned
		s := newStore(t, cfg)
		mu.Lock()
		got = nil
		mu.Unlock()
		if err := s.Put(t.Context(), "k", body, objectstore.PutOptions{IfAbsent: true}); err != nil {
			t.Fatalf("unsigned=%v: put: %v", tc.unsigned, err)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("unsigned=%v: X-Amz-Content-Sha256 %q, want [%q]", tc.unsigned, got, tc.want)
		}
		mu.Unlock()
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
