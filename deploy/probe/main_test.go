package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := run([]string{srv.URL}); err != nil {
		t.Fatalf("ready server: %v", err)
	}
	ready.Store(false)
	if err := run([]string{srv.URL}); err == nil {
		t.Fatal("503 answered as healthy")
	}
	srv.Close()
	if err := probe(srv.URL, 200*time.Millisecond); err == nil {
		t.Fatal("closed server answered as healthy")
	}
	if err := run(nil); err == nil {
		t.Fatal("no URL accepted")
	}
}
