package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeHistory(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCheckCommand: a clean history exits 0, one with a lost write exits 1
// naming it, a bad file or command exits 2 with one line.
func TestCheckCommand(t *testing.T) {
	clean := writeHistory(t,
		`{"type":"send","topic":"t","partition":0,"offset":0,"value":"a","outcome":"ok"}`,
		`{"type":"read","process":"final","final":true,"topic":"t","partition":0,"offset":0,"value":"a"}`,
		`{"type":"final","topic":"t","partition":0,"offset":1}`)
	lost := writeHistory(t,
		`{"type":"send","topic":"t","partition":0,"offset":0,"value":"a","outcome":"ok"}`,
		`{"type":"send","topic":"t","partition":0,"offset":1,"value":"b","outcome":"ok"}`,
		`{"type":"read","process":"r","topic":"t","partition":0,"offset":1,"value":"b"}`)
	bad := writeHistory(t, `{"type":"nope"}`)
	// b acknowledged before the primary's kill, then lost with it; the new
	// primary wrote c at its offset.
	async := writeHistory(t,
		`{"type":"send","topic":"t","partition":0,"offset":0,"value":"a","outcome":"ok","start":1,"time":2}`,
		`{"type":"send","topic":"t","partition":0,"offset":1,"value":"b","outcome":"ok","start":3,"time":4}`,
		`{"type":"read","process":"r","topic":"t","partition":0,"offset":1,"value":"b"}`,
		`{"type":"fault","partition":0,"offset":0,"value":"pg-failover","time":10}`,
		`{"type":"send","topic":"t","partition":0,"offset":1,"value":"c","outcome":"ok","start":11,"time":12}`,
		`{"type":"read","process":"final","final":true,"topic":"t","partition":0,"offset":0,"value":"a"}`,
		`{"type":"read","process":"final","final":true,"topic":"t","partition":0,"offset":1,"value":"c"}`,
		`{"type":"final","topic":"t","partition":0,"offset":2}`)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"check", clean}, 0, "anomaly     none"},
		{[]string{"check", clean, lost}, 1, "lost t/0@0 value a"},
		{[]string{"check", bad}, 2, "line 1"},
		{[]string{"check", async}, 1, "inconsistent-offset t/0@1"},
		{[]string{"check", "-async-loss", async}, 0, "async-loss: acknowledged sends lost (allowed: asynchronous replication)  1"},
		{[]string{"frob"}, 2, "unknown command"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String()+stderr.String(), c.out) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.out, stdout.String(), stderr.String())
		}
		if code == 2 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: stderr is not one line: %q", c.args, stderr.String())
		}
	}
}
