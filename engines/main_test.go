//go:build engines

package engines

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var (
	floeBin string // built by TestMain
	cache   string // the engines' cache (engines/setup.sh)
)

// TestMain builds bin/floe into a temporary folder and finds the engines'
// cache: FLOE_ENGINES_CACHE, else ~/.cache/floe/engines.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "floe-engines-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	floeBin = filepath.Join(dir, "floe")
	build := exec.Command("go", "build", "-o", floeBin, "../cmd/floe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "engines: build floe: %v\n%s", err, out)
		return 1
	}
	cache = os.Getenv("FLOE_ENGINES_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "floe", "engines")
	}
	return m.Run()
}

// need returns path under the cache, or ends the test when it is missing:
// a failure under CI=true, a skip elsewhere.
func need(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(cache, rel)
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("engine not installed: %s (run engines/setup.sh, or make test-engines)", p)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}
