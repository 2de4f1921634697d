package batcher

import (
	"testing"
	"time"
)

func TestSealWaitedRule(t *testing.T) {
	fast := waitedState{busy: 2, waiting: 2, bytes: 4096, recentBytes: 8 << 20, maxFileBytes: 8 << 20,
		age: 200 * time.Millisecond, minAge: 125 * time.Millisecond}
	for _, tc := range []struct {
		name string
		mod  func(*waitedState)
		want bool
	}{
		{"every busy writer waits, ingest fills a file per linger", func(*waitedState) {}, true},
		{"one writer still sending", func(s *waitedState) { s.waiting = 1 }, false},
		{"no writer busy", func(s *waitedState) { s.busy, s.waiting = 0, 0 }, false},
		{"file holds a gRPC batch", func(s *waitedState) { s.anonymous = true }, false},
		{"file empty", func(s *waitedState) { s.bytes = 0 }, false},
		{"low rate, small file: the linger gathers idle clients", func(s *waitedState) { s.recentBytes = 8<<20 - 1 }, false},
		{"low rate, an eighth of a file", func(s *waitedState) { s.recentBytes, s.bytes = 0, 1<<20 }, true},
		{"low rate, just under an eighth", func(s *waitedState) { s.recentBytes, s.bytes = 0, 1<<20-1 }, false},
		{"an eighth of a file, one writer still sending", func(s *waitedState) { s.bytes, s.waiting = 1<<20, 1 }, false},
		{"rate above a file per linger", func(s *waitedState) { s.recentBytes = 40 << 20 }, true},
		{"one writer, alone and waiting", func(s *waitedState) { s.busy, s.waiting = 1, 1 }, true},
		{"younger than the minimum age", func(s *waitedState) { s.age = s.minAge - 1 }, false},
		{"just the minimum age", func(s *waitedState) { s.age = s.minAge }, true},
		{"no minimum age (linger 0)", func(s *waitedState) { s.age, s.minAge = 0, 0 }, true},
		{"an eighth of a file, younger than the minimum age", func(s *waitedState) { s.bytes, s.age = 1<<20, s.minAge/2 }, false},
	} {
		s := fast
		tc.mod(&s)
		if got := sealWaited(s); got != tc.want {
			t.Errorf("%s: sealWaited(%+v) = %v, want %v", tc.name, s, got, tc.want)
		}
	}
}

func TestIngestWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	iw := ingestWindow{windowSize: 100 * time.Millisecond, start: t0}
	iw.add(t0, 10)
	iw.add(t0.Add(50*time.Millisecond), 5)
	if got := iw.perWindow(t0.Add(60 * time.Millisecond)); got != 15 {
		t.Fatalf("current window: %d, want 15", got)
	}
	iw.add(t0.Add(120*time.Millisecond), 3) // the next window
	if got := iw.perWindow(t0.Add(130 * time.Millisecond)); got != 15 {
		t.Fatalf("after a roll: %d, want the previous window's 15", got)
	}
	if got := iw.perWindow(t0.Add(250 * time.Millisecond)); got != 3 {
		t.Fatalf("two rolls: %d, want 3 (the window before)", got)
	}
	if got := iw.perWindow(t0.Add(time.Second)); got != 0 {
		t.Fatalf("after a long idle: %d, want 0", got)
	}
	var zero ingestWindow // linger 0: no window kept
	zero.add(t0, 7)
	if got := zero.perWindow(t0); got != 7 {
		t.Fatalf("zero window: %d", got)
	}
}
