package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	if err := run([]string{srv.URL}, noSleep(t)); err != nil {
		t.Fatalf("ready server: %v", err)
	}
	ready.Store(false)
	if err := run([]string{srv.URL}, noSleep(t)); err == nil {
		t.Fatal("503 answered as healthy")
	}
	srv.Close()
	if err := probe(srv.URL, 200*time.Millisecond); err == nil {
		t.Fatal("closed server answered as healthy")
	}
	if err := run(nil, noSleep(t)); err == nil {
		t.Fatal("no URL accepted")
	}
}

// noSleep fails the test if the probe sleeps.
func noSleep(t *testing.T) func(time.Duration) {
	return func(d time.Duration) { t.Errorf("slept %v while probing", d) }
}

// TestSleep: -sleep waits the time given (through the sleep function) and
// exits 0 without asking anything; with a URL too, or negative, it is
// refused.
func TestSleep(t *testing.T) {
	var slept []time.Duration
	sleep := func(d time.Duration) { slept = append(slept, d) }
	if err := run([]string{"-sleep", "10s"}, sleep); err != nil {
		t.Fatalf("-sleep 10s: %v", err)
	}
	if len(slept) != 1 || slept[0] != 10*time.Second {
		t.Fatalf("-sleep 10s slept %v", slept)
	}
	for _, bad := range [][]string{{"-sleep", "10s", "http://127.0.0.1:1/"}, {"-sleep", "-1s"}, {"-sleep", "x"}} {
		if err := run(bad, sleep); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if len(slept) != 1 {
		t.Errorf("refused arguments slept: %v", slept)
	}
}

// TestProbeHTTPS: an https:// server is asked with its CA (-ca), or
// unchecked (-insecure); with neither its unknown certificate fails.
func TestProbeHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-ca", ca, srv.URL}, noSleep(t)); err != nil {
		t.Fatalf("-ca: %v", err)
	}
	if err := run([]string{"-insecure", srv.URL}, noSleep(t)); err != nil {
		t.Fatalf("-insecure: %v", err)
	}
	if err := run([]string{srv.URL}, noSleep(t)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate: %v", err)
	}
	if err := run([]string{"-ca", filepath.Join(t.TempDir(), "none"), srv.URL}, noSleep(t)); err == nil {
		t.Fatal("a missing -ca file accepted")
	}
}
