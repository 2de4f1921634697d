package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitAddrFile polls the -addr-file at path until it holds what ok asks
// for (a minute at most) and returns it.
func waitAddrFile(t *testing.T, path string, ok func(listenAddrs) bool) listenAddrs {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var a listenAddrs
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &a)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("addr file: %v", err)
		}
		if err == nil && ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("addr file %s: %+v after a minute", path, a)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWriteAddrFile: the file holds the addresses as JSON, each write
// replaces it whole, no temporary file is left, and an empty path writes
// nothing; a folder that does not exist is an error naming the file.
func TestWriteAddrFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "addrs.json")
	if err := writeAddrFile("", listenAddrs{Metrics: "x"}); err != nil {
		t.Fatal(err)
	}
	first := listenAddrs{GRPC: "127.0.0.1:1", Metrics: "127.0.0.1:2"}
	if err := writeAddrFile(path, first); err != nil {
		t.Fatal(err)
	}
	if got := waitAddrFile(t, path, func(listenAddrs) bool { return true }); got != first {
		t.Fatalf("addr file: %+v, want %+v", got, first)
	}
	second := listenAddrs{GRPC: "127.0.0.1:1", Metrics: "127.0.0.1:2", Kafka: "127.0.0.1:3"}
	if err := writeAddrFile(path, second); err != nil {
		t.Fatal(err)
	}
	if got := waitAddrFile(t, path, func(listenAddrs) bool { return true }); got != second {
		t.Fatalf("addr file after the rewrite: %+v, want %+v", got, second)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("folder holds %d entries, want the addr file alone", len(ents))
	}
	if err := writeAddrFile(filepath.Join(dir, "no", "such", "f"), first); err == nil || !strings.Contains(err.Error(), "addr file") {
		t.Fatalf("addr file in a missing folder: %v", err)
	}
}
