package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// A test process importing testenv keeps all its temporary data — the
// PostgreSQL cluster, the S3 server's folder, their logs, binaries built by
// a TestMain, t.TempDir — in one folder of its own, and that folder is
// removed when the process ends, however it ends:
//
//   - init creates the folder and points TMPDIR (os.TempDir) at it, before
//     any TestMain runs;
//   - Main removes it after the tests, passed or failed, before os.Exit;
//   - a reaper (a shell waiting on a pipe from this process) removes it
//     when the process dies without reaching that point: a panic, a test
//     timeout, os.Exit in a test, a signal. Services started by the tests
//     die with the process (services.Start's parent-death signal).

// reaperScript ignores the terminal's signals (Ctrl-C reaches the whole
// foreground group), waits for end of file on stdin — this process's
// exit — and removes the folder, retrying while services that were just
// killed finish writing.
const reaperScript = `trap '' HUP INT QUIT
cat >/dev/null
i=0
while [ -e "$1" ] && [ "$i" -lt 100 ]; do
	rm -rf -- "$1" 2>/dev/null || sleep 0.1
	i=$((i+1))
done`

var (
	tmpRoot string    // this process's temporary folder
	tmpErr  error     // why there is none; Main fails the run with it
	reaper  *exec.Cmd // removes tmpRoot when this process dies
	// reaperPipe is the write end of the reaper's stdin. Nothing writes to
	// it; the kernel closes it when this process ends, whatever the cause.
	reaperPipe *os.File
)

func init() { tmpRoot, tmpErr = makeTempRoot() }

// makeTempRoot creates the process's folder, starts its reaper and points
// TMPDIR at it.
func makeTempRoot() (string, error) {
	dir, err := os.MkdirTemp("", "floe-test-")
	if err != nil {
		return "", fmt.Errorf("testenv: temporary folder: %w", err)
	}
	// PostgreSQL runs as the postgres user when the tests run as root: it
	// must be able to reach its own folder inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("testenv: temporary folder: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("testenv: reaper pipe: %w", err)
	}
	defer r.Close() // the reaper holds its own copy
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "floe-testenv-reaper", dir)
	cmd.Stdin = r // an *os.File: no copying goroutine
	// Its own process group: signals to the test's group do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("testenv: start the reaper of %s: %w", dir, err)
	}
	reaper, reaperPipe = cmd, w
	if err := os.Setenv("TMPDIR", dir); err != nil {
		removeTempRoot()
		return "", fmt.Errorf("testenv: set TMPDIR: %w", err)
	}
	return dir, nil
}

// removeTempRoot removes the folder now and lets the reaper end.
func removeTempRoot() {
	if reaper == nil {
		return
	}
	err := os.RemoveAll(tmpRoot)
	_ = reaperPipe.Close()
	_ = reaper.Wait() // the reaper retries what RemoveAll could not remove
	reaper = nil
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: remove %s: %v\n", tmpRoot, err)
	}
}
