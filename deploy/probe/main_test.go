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
