package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmpChildEnv tells the copy of the test binary TestTempRemovedAtExit runs
// how to end.
const tmpChildEnv = "FLOE_TESTENV_TMP_CHILD"

// TestTempRemovedAtExit runs this test binary again with its own TMPDIR;
// the child leaves a file (and, when it panics, a running PostgreSQL
// cluster) in its temporary folder, then passes, fails or panics. However
// it ended, nothing of it is left in TMPDIR afterwards: at once when Main
// ran, within seconds (the reaper) when it did not.
func TestTempRemovedAtExit(t *testing.T) {
	if mode := os.Getenv(tmpChildEnv); mode != "" {
		tmpChild(t, mode)
		return
	}
	for _, mode := range []string{"pass", "fail", "panic"} {
		t.Run(mode, func(t *testing.T) {
			// Not t.TempDir: its folders are private to this user, and the
			// child's PostgreSQL runs as the postgres user when we are root.
			tmp, err := os.MkdirTemp("", "t-") // short: PostgreSQL's socket path is at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(tmp)
			if err := os.Chmod(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTempRemovedAtExit$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "FLOE_TESTENV_TMP_PARENT="+tmp, tmpChildEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			if (err == nil) != (mode == "pass") || !strings.Contains(string(out), "CHILD left ") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			wait := time.Duration(0)
			if mode == "panic" {
				wait = 20 * time.Second // the reaper's turn
			}
			deadline := time.Now().Add(wait)
			for {
				left, err := filepath.Glob(filepath.Join(tmp, "*"))
				if err != nil {
					t.Fatal(err)
				}
				if len(left) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("left in TMPDIR after the child (%s): %v\n%s", mode, left, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// tmpChild is TestTempRemovedAtExit in the child.
func tmpChild(t *testing.T, mode string) {
	if os.TempDir() != tmpRoot || filepath.Dir(tmpRoot) != os.Getenv("FLOE_TESTENV_TMP_PARENT") {
		t.Fatalf("os.TempDir() = %s, want the process's folder %s inside %s", os.TempDir(), tmpRoot, os.Getenv("FLOE_TESTENV_TMP_PARENT"))
	}
	if mode == "panic" {
		Postgres(t) // a cluster folder, with a server writing into it
	}
	f := filepath.Join(os.TempDir(), "left-by-the-child.log")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("CHILD left %s", f)
	switch mode {
	case "fail":
		t.Fatal("failing on purpose")
	case "panic":
		panic("panicking on purpose")
	}
}
