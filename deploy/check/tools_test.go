package check

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// HelmModule is the helm the checks render the chart with; `make tools`
// installs it into .tools.
const HelmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

var helmTool struct {
	once sync.Once
	bin  string
	err  error
}

// helmBin returns helm v3: $FLOE_TOOLS_DIR/helm or the repository's
// .tools/helm, else one on $PATH, else it installs HelmModule into the
// tools folder with `go install` (minutes on first use; concurrent runs
// serialise on a file lock, as internal/services does for its tools).
func helmBin(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	helmTool.once.Do(func() { helmTool.bin, helmTool.err = findHelm(root) })
	if helmTool.err != nil {
		t.Fatal(helmTool.err)
	}
	return helmTool.bin
}

func findHelm(root string) (string, error) {
	tools := os.Getenv("FLOE_TOOLS_DIR")
	if tools == "" {
		tools = filepath.Join(root, ".tools")
	}
	bin := filepath.Join(tools, "helm")
	if isExec(bin) {
		return bin, nil
	}
	if p, err := exec.LookPath("helm"); err == nil {
		if out, err := exec.Command(p, "version", "--short").Output(); err == nil && strings.HasPrefix(string(out), "v3.") {
			return p, nil
		}
	}
	if err := os.MkdirAll(tools, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", tools, err)
	}
	lock, err := os.OpenFile(filepath.Join(tools, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("open build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("take build lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if isExec(bin) {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", HelmModule)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOBIN="+tools)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %w\n%s", HelmModule, err, out)
	}
	if !isExec(bin) {
		return "", fmt.Errorf("go install %s did not make %s", HelmModule, bin)
	}
	return bin, nil
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
