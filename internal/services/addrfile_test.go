package services

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWaitAddrFile: the addresses are read once the process wrote what
// ok asks for; a process that exits without writing them, and a stale
// file removed by FreshAddrFile, are not taken for addresses.
func TestWaitAddrFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(dir, "addrs.json")
	if err := os.WriteFile(path, []byte(`{"grpc":"stale:1","metrics":"stale:2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := FreshAddrFile(path); err != nil {
		t.Fatal(err)
	}
	if err := FreshAddrFile(path); err != nil {
		t.Fatalf("FreshAddrFile without a file: %v", err)
	}
	if _, err := ReadAddrFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadAddrFile after FreshAddrFile: %v, want os.ErrNotExist", err)
	}
	// Written in two steps, atomically each (as floe does: the Kafka
	// listener comes once the stores answered).
	script := `printf '{"grpc":"127.0.0.1:5","metrics":"127.0.0.1:6"}' > "$1.tmp" && mv "$1.tmp" "$1"; sleep 0.2;` +
		`printf '{"grpc":"127.0.0.1:5","metrics":"127.0.0.1:6","kafka":"127.0.0.1:7"}' > "$1.tmp" && mv "$1.tmp" "$1"; exec sleep 60`
	p, err := Start(ProcessSpec{Path: "/bin/sh", Args: []string{"-c", script, "sh", path}, LogPath: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(9, time.Second)
	a, err := WaitAddrFile(ctx, path, p, func(a FloeAddrs) bool { return a.Kafka != "" })
	if err != nil {
		t.Fatal(err)
	}
	if want := (FloeAddrs{GRPC: "127.0.0.1:5", Metrics: "127.0.0.1:6", Kafka: "127.0.0.1:7"}); a != want {
		t.Fatalf("addresses %+v, want %+v", a, want)
	}
	// A predecessor's file, left in place, is not the next process's.
	stale := filepath.Join(dir, "stale.json")
	if err := os.WriteFile(stale, []byte(`{"grpc":"stale:1","metrics":"stale:2","kafka":"stale:3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Second)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	r, err := Start(ProcessSpec{Path: "/bin/sh", Args: []string{"-c", script, "sh", stale}, LogPath: filepath.Join(dir, "log3")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop(9, time.Second)
	if a, err := WaitAddrFile(ctx, stale, r, nil); err != nil || a.GRPC != "127.0.0.1:5" {
		t.Fatalf("with a predecessor's file in place: %+v, %v, want the new process's addresses", a, err)
	}
	q, err := Start(ProcessSpec{Path: "/bin/sh", Args: []string{"-c", "echo no addresses; exit 3"}, LogPath: filepath.Join(dir, "log2")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WaitAddrFile(ctx, filepath.Join(dir, "none.json"), q, nil); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("a process that wrote nothing: %v, want an error saying it exited", err)
	}
	if err := os.WriteFile(path, []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAddrFile(path); err == nil {
		t.Fatal("a file that is not JSON read as addresses")
	}
}
