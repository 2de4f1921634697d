package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// PausePostgres freezes the test PostgreSQL server with SIGSTOP, as a hung
// server: the postmaster first (no new connections, no new backends),
// then each of its children, the backends of open connections among
// them; connections stay open and statements get no answer. It returns a
// function that resumes them with SIGCONT (the children first); the
// server is also resumed when t ends. It fails t for a server named by
// FLOE_TEST_POSTGRES_URL, which is not ours to pause.
//
// The server is shared by every test of the process: a test that pauses
// it must not run in parallel with tests that use it.
func PausePostgres(t testing.TB) (resume func()) {
	t.Helper()
	pg := sharedPostgres(t)
	pid := pg.Pid()
	if pgRemote || pid <= 0 {
		t.Fatalf("testenv: cannot pause the PostgreSQL server of %s", PostgresURLEnv)
	}
	// Each backend leads its own session (PostgreSQL calls setsid in
	// every child), so the children are found by their parent.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: pause postgres (pid %d): %v", pid, err)
	}
	children, err := childrenOf(pid)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("testenv: pause postgres: %v", err)
	}
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGSTOP) // one that exited meanwhile is gone
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			for _, c := range children {
				_ = syscall.Kill(c, syscall.SIGCONT)
			}
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("testenv: resume postgres (pid %d): %v", pid, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out, nil
}
