package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// action is what the fault proxy does with one request.
type action int

const (
	forward         action = iota // pass it on
	slowDown                      // answer 503 SlowDown without passing it on
	forwardThenLose               // pass it on, then answer 503 instead of the real answer
	hang                          // never answer (until the client gives up)
)

// faultProxy sits between a Store and the S3 server and misbehaves on
// request. It keeps the Host header, so signatures stay valid.
type faultProxy struct {
	srv *httptest.Server

	mu     sync.Mutex // protects decide and calls
	decide func(n int, r *http.Request) action
	calls  []string // method of each request seen
}

func newFaultProxy(t *testing.T, upstream string, decide func(n int, r *http.Request) action) *faultProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &faultProxy{decide: decide}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		n := len(p.calls)
		p.calls = append(p.calls, r.Method)
		act := p.decide(n, r)
		p.mu.Unlock()
		switch act {
		case forward:
			rp.ServeHTTP(w, r)
		case slowDown:
			_, _ = io.Copy(io.Discard, r.Body)
			writeSlowDown(w)
		case forwardThenLose:
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			writeSlowDown(w)
		case hang:
			// Reading the body lets the server notice the client hanging up.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func writeSlowDown(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
		`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
}

func (p *faultProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// proxied returns a store reaching the test bucket through a fault proxy,
// and a store reaching it directly.
func proxied(t *testing.T, decide func(n int, r *http.Request) action) (viaProxy, direct *s3store.Store, p *faultProxy) {
	t.Helper()
	cfg := configFor(t)
	direct = newStore(t, cfg)
	p = newFaultProxy(t, cfg.Endpoint, decide)
	cfg.Endpoint = p.srv.URL
	cfg.MaxAttempts = 3
	cfg.MaxBackoff = 20 * time.Millisecond
	cfg.RequestTimeout = 500 * time.Millisecond
	return newStore(t, cfg), direct, p
}

func TestRetriesSlowDown(t *testing.T) {
	s, direct, p := proxied(t, func(n int, r *http.Request) action {
		if n < 2 {
			return slowDown
		}
		return forward
	})
	ctx := t.Context()
	if err := s.Put(ctx, "k", []byte("after two 503s"), objectstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("Put through two 503 SlowDown answers: %v", err)
	}
	if got := p.requests(); len(got) != 3 {
		t.Errorf("proxy saw %d requests %v, want 3", len(got), got)
	}
	got, err := direct.Get(ctx, "k", 0, -1)
	if err != nil || string(got) != "after two 503s" {
		t.Fatalf("object = %q, %v", got, err)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	s, direct, p := proxied(t, func(int, *http.Request) action { return slowDown })
	ctx := t.Context()
	start := time.Now()
	err := s.Put(ctx, "k", []byte("never"), objectstore.PutOptions{})
	if err == nil {
		t.Fatal("Put against a server that always answers 503 succeeded")
	}
	if objectstore.IsPermanent(err) {
		t.Errorf("503 reported as permanent: %v", err)
	}
	if got := p.requests(); len(got) != 3 {
		t.Errorf("proxy saw %d requests, want MaxAttempts = 3", len(got))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("bounded retries took %v", d)
	}
	if _, err := direct.Head(ctx, "k"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head = %v, want ErrNotFound", err)
	}
}

func TestRetriesTimeouts(t *testing.T) {
	s, _, p := proxied(t, func(n int, r *http.Request) action {
		if n == 0 {
			return hang
		}
		return forward
	})
	ctx := t.Context()
	if err := s.Put(ctx, "k", []byte("after a timeout"), objectstore.PutOptions{}); err != nil {
		t.Fatalf("Put after one attempt timed out: %v", err)
	}
	if got := p.requests(); len(got) != 2 {
		t.Errorf("proxy saw %d requests, want 2", len(got))
	}
}

// The first attempt writes the object but its answer is lost; the retry
// then meets "precondition failed" on its own write, which must count as
// success.
func TestIfAbsentLostResponseIsOurs(t *testing.T) {
	s, direct, p := proxied(t, func(n int, r *http.Request) action {
		if n == 0 {
			return forwardThenLose
		}
		return forward
	})
	ctx := t.Context()
	data := bytes.Repeat([]byte("ours"), 1000)
	if err := s.Put(ctx, "k", data, objectstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("if-absent Put whose first answer was lost: %v", err)
	}
	// Two PUTs, then the GET that finds our own data behind "precondition
	// failed".
	if got := fmt.Sprint(p.requests()); got != "[PUT PUT GET]" {
		t.Errorf("proxy saw %v, want [PUT PUT GET]", got)
	}
	got, err := direct.Get(ctx, "k", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object = %d bytes, %v", len(got), err)
	}
}

// When the object held someone else's data all along, a retried
// "precondition failed" is still ErrExists.
func TestIfAbsentLostResponseOfConflict(t *testing.T) {
	s, direct, _ := proxied(t, func(n int, r *http.Request) action {
		if n == 0 {
			return forwardThenLose
		}
		return forward
	})
	ctx := t.Context()
	if err := direct.Put(ctx, "k", []byte("theirs"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, "k", []byte("ours"), objectstore.PutOptions{IfAbsent: true})
	if !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("if-absent Put over another writer's object = %v, want ErrExists", err)
	}
	got, err := direct.Get(ctx, "k", 0, -1)
	if err != nil || string(got) != "theirs" {
		t.Fatalf("object = %q, %v", got, err)
	}
}

// A hung server: the caller's deadline ends the request, retries
// included, even when one attempt may take longer.
func TestRetriesStopAtContextDeadline(t *testing.T) {
	cfg := configFor(t)
	p := newFaultProxy(t, cfg.Endpoint, func(int, *http.Request) action { return hang })
	cfg.Endpoint = p.srv.URL
	cfg.MaxAttempts = 5
	cfg.RequestTimeout = 2 * time.Second
	s := newStore(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Put(ctx, "k", []byte("hung"), objectstore.PutOptions{IfAbsent: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put to a hung server = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Put returned %v after its 300ms deadline", d)
	}
	if got := p.requests(); len(got) != 1 {
		t.Errorf("proxy saw %d requests, want 1 (no retry after the deadline)", len(got))
	}
}
