package s3store_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// A PUT carries its body's CRC-32C in x-amz-checksum-crc32c by default and
// nothing with PutChecksum "none".
func TestPutChecksumHeader(t *testing.T) {
	url, got := putHeaderServer(t, "X-Amz-Checksum-Crc32c")
	body := []byte("a file body")
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	for _, tc := range []struct {
		mode, want string
	}{{s3store.PutChecksumCRC32C, base64.StdEncoding.EncodeToString(sum[:])}, {s3store.PutChecksumNone, ""}, {"", ""}} {
		cfg := configFor(t)
		cfg.Endpoint, cfg.PutChecksum = url, tc.mode
		s := newStore(t, cfg)
		got() // forget earlier PUTs
		if err := s.Put(t.Context(), "k", body, objectstore.PutOptions{}); err != nil {
			t.Fatalf("%q: put: %v", tc.mode, err)
		}
		if h := got(); len(h) != 1 || h[0] != tc.want {
			t.Errorf("%q: X-Amz-Checksum-Crc32c %q, want [%q]", tc.mode, h, tc.want)
		}
	}
	if s3store.DefaultConfig().PutChecksum != s3store.PutChecksumCRC32C {
		t.Errorf("default PutChecksum %q, want %q", s3store.DefaultConfig().PutChecksum, s3store.PutChecksumCRC32C)
	}
}

// putHeaderServer answers every request with success and records header
// of each PUT; got returns the values recorded since its last call.
func putHeaderServer(t *testing.T, header string) (url string, got func() []string) {
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			mu.Lock()
			seen = append(seen, r.Header.Get(header))
			mu.Unlock()
		}
		w.Header().Set("ETag", `"x"`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// corruptingProxy forwards to target and flips one byte of the body of
// the first `bad` PUTs it forwards (-1: every one); puts counts them all.
type corruptingProxy struct {
	bad  int64
	puts atomic.Int64
}

func (p *corruptingProxy) start(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			n := p.puts.Add(1)
			if p.bad < 0 || n <= p.bad {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				if len(body) > 0 {
					body[len(body)/2] ^= 0x20
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		rp.ServeHTTP(w, r) // the Host header stays the proxy's: the one the client signed
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A body damaged between the agent and the store: with the CRC-32C header
// the store refuses it, the attempt is retried and the object stored is
// the one sent; a body damaged on every attempt fails the put and stores
// nothing. Without the header (and unsigned, as over HTTPS) the damaged
// body would be stored as if it were the file: what the header is for.
func TestPutChecksumRefusesDamagedBody(t *testing.T) {
	data := bytes.Repeat([]byte("floe body "), 100_000)
	for _, tc := range []struct {
		name      string
		mode      string
		bad       int64
		wantErr   bool
		wantEqual bool
	}{
		{"crc32c, first attempt damaged", s3store.PutChecksumCRC32C, 1, false, true},
		{"crc32c, every attempt damaged", s3store.PutChecksumCRC32C, -1, true, false},
		{"none, first attempt damaged", s3store.PutChecksumNone, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configFor(t)
			p := &corruptingProxy{bad: tc.bad}
			cfg.Endpoint = p.start(t, cfg.Endpoint)
			cfg.UnsignedPayload, cfg.PutChecksum, cfg.MaxAttempts = true, tc.mode, 3
			s := newStore(t, cfg)
			key := "checksum/" + tc.mode
			err := s.Put(t.Context(), key, data, objectstore.PutOptions{IfAbsent: true})
			t.Logf("put: %v after %d PUTs", err, p.puts.Load())
			if (err != nil) != tc.wantErr {
				t.Fatalf("put: %v (after %d PUTs), want an error: %v", err, p.puts.Load(), tc.wantErr)
			}
			got, gerr := s.Get(t.Context(), key, 0, -1)
			switch {
			case tc.wantErr:
				if !errors.Is(gerr, objectstore.ErrNotFound) {
					t.Fatalf("get after a refused put: %d bytes, %v; want ErrNotFound", len(got), gerr)
				}
			case gerr != nil:
				t.Fatalf("get: %v", gerr)
			case bytes.Equal(got, data) != tc.wantEqual:
				t.Fatalf("stored object equals the body sent: %v, want %v (%d PUTs)", !tc.wantEqual, tc.wantEqual, p.puts.Load())
			}
			if tc.mode == s3store.PutChecksumCRC32C && p.puts.Load() < 2 {
				t.Fatalf("%d PUTs: the refused attempt was not retried", p.puts.Load())
			}
		})
	}
}

// A CRC-32C the caller knows (PutOptions.KnownCRC32C) is sent as it is,
// without a pass of the store's own: the server stores the put when it is
// right and refuses it when it is wrong.
func TestPutKnownCRC32C(t *testing.T) {
	url, got := putHeaderServer(t, "X-Amz-Checksum-Crc32c")
	cfg := configFor(t)
	cfg.Endpoint = url
	s := newStore(t, cfg)
	if err := s.Put(t.Context(), "k", []byte("body"), objectstore.PutOptions{CRC32C: 0x01020304, KnownCRC32C: true}); err != nil {
		t.Fatal(err)
	}
	if h := got(); len(h) != 1 || h[0] != "AQIDBA==" {
		t.Errorf("X-Amz-Checksum-Crc32c %q, want [AQIDBA==] (the caller's)", h)
	}

	v := newStore(t, configFor(t))
	data := bytes.Repeat([]byte("known crc "), 50_000)
	crc := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	if err := v.Put(t.Context(), "known/right", data, objectstore.PutOptions{IfAbsent: true, CRC32C: crc, KnownCRC32C: true}); err != nil {
		t.Fatalf("put with the right CRC: %v", err)
	}
	if err := v.Put(t.Context(), "known/wrong", data, objectstore.PutOptions{IfAbsent: true, CRC32C: crc ^ 1, KnownCRC32C: true}); err == nil {
		t.Fatal("put with a wrong CRC stored")
	}
	if _, err := v.Get(t.Context(), "known/wrong", 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get after a refused put: %v, want ErrNotFound", err)
	}
}

// A Get shows its body to the context's ReadObserver as it arrives:
// consecutive chunks of the buffer it returns, from 0 to its end.
func TestGetShowsBodyToObserver(t *testing.T) {
	s := newStore(t, configFor(t))
	data := bytes.Repeat([]byte("observed "), 300_000)
	if err := s.Put(t.Context(), "observed/a", data, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var (
		next   int
		chunks int
		first  []byte
		bad    string
	)
	ctx := objectstore.WithReadObserver(t.Context(), func(off int, p []byte) {
		if off == 0 {
			first = p
		}
		if off != next || len(first) == 0 || &p[0] != &first[:cap(first)][off] {
			bad = fmt.Sprintf("chunk at %d, want %d, or not of the same buffer", off, next)
		}
		next += len(p)
		chunks++
	})
	got, err := s.Get(ctx, "observed/a", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %d bytes, %v", len(got), err)
	}
	if bad != "" || next != len(got) || &got[0] != &first[0] {
		t.Fatalf("observer: %s; %d bytes shown in %d chunks of a %d-byte answer", bad, next, chunks, len(got))
	}
	t.Logf("%d bytes in %d chunks", next, chunks)
}
