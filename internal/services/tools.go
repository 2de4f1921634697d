package services

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// ToolsDirEnv names a directory to hold built tools, overriding ToolsDir's
// search.
const ToolsDirEnv = "FLOE_TOOLS_DIR"

// Modules of the tools built on demand.
const (
	VersitygwModule  = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"
	NATSServerModule = "github.com/nats-io/nats-server/v2@v2.15.3"
)

// ToolsDir returns where built tools live: $FLOE_TOOLS_DIR, else the
// ".tools" folder of the floe repository holding the working directory (the
// folder with go.mod), else floe/tools in the user's cache directory.
func ToolsDir() string {
	if d := os.Getenv(ToolsDirEnv); d != "" {
		return d
	}
	if root := RepoRoot(); root != "" {
		return filepath.Join(root, ".tools")
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "floe", "tools")
	}
	return filepath.Join(os.TempDir(), "floe-tools")
}

// RepoRoot returns the closest folder at or above the working directory
// holding a go.mod, or "" when there is none.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Tool returns the path of the executable name: ToolsDir()/name if present,
// else name on $PATH, else it builds module into ToolsDir with `go install`
// (minutes on first use; concurrent processes serialise on a file lock).
func Tool(ctx context.Context, name, module string, log *slog.Logger) (string, error) {
	tools := ToolsDir()
	bin := filepath.Join(tools, name)
	if executable(bin) {
		return bin, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return "", fmt.Errorf("services: create %s: %w", tools, err)
	}
	lock, err := os.OpenFile(filepath.Join(tools, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("services: open build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("services: take build lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if executable(bin) { // built by another process while we waited
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if log != nil {
		log.Info("building tool (first use)", "tool", name, "module", module, "into", tools)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", module)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOBIN="+tools)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("services: build %s (go install %s): %w\n%s", name, module, err, out)
	}
	if !executable(bin) {
		return "", fmt.Errorf("services: go install %s did not produce %s", module, bin)
	}
	return bin, nil
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
