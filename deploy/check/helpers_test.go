package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the floe repository: two folders above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "module github.com/floe-broker/floe\n") {
		t.Fatalf("%s is not the floe repository (go.mod: %v)", root, err)
	}
	return root
}

// shellWords splits a command line into words as sh would for the simple
// lines of a Makefile recipe or a Dockerfile RUN: blanks separate words,
// single and double quotes group, backslash escapes. Variables are kept.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	esc := false
	for _, r := range line {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' {
				esc = true
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			esc, inWord = true, true
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || esc {
		return nil, fmt.Errorf("unterminated quote or escape in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var (
	makeVar   = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	dockerVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// normVars writes $(X) (make) and ${X} (Dockerfile, sh) as $X.
func normVars(s string) string {
	return dockerVar.ReplaceAllString(makeVar.ReplaceAllString(s, "$$$1"), "$$$1")
}

// floeHelp caches the usage text of floe's commands, from the binary the
// Dockerfile's build command makes (TestDockerfileBuildMatchesMakefile
// builds it; other tests build it on first use).
var floeBuild struct {
	once sync.Once
	bin  string
	err  error
}

// floeBin returns bin/floe built by the Dockerfile's own build command into
// a temporary folder, with VERSION and COMMIT set to test values.
func floeBin(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	floeBuild.once.Do(func() {
		floeBuild.bin, floeBuild.err = buildLikeDockerfile(root, filepath.Join(tmpDir, "floe"))
	})
	if floeBuild.err != nil {
		t.Fatalf("build floe as deploy/Dockerfile does: %v", floeBuild.err)
	}
	return floeBuild.bin
}

// floeUsage returns the output of `floe ARGS... -h`.
func floeUsage(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(floeBin(t), append(args, "-h")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("floe %s -h: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	envName  = regexp.MustCompile(`\b(?:FLOE|AWS)_[A-Z0-9_]+\b`)
	flagName = regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`)
)

// usageNames returns the environment variables (FLOE_*, AWS_*) and the
// flags a usage text names.
func usageNames(usage string) (env, flags map[string]bool) {
	env, flags = map[string]bool{}, map[string]bool{}
	for _, m := range envName.FindAllString(usage, -1) {
		env[m] = true
	}
	for _, m := range flagName.FindAllStringSubmatch(usage, -1) {
		flags[m[1]] = true
	}
	return env, flags
}

// flagOf returns the name of a command-line flag argument ("-s3-bucket=x"
// gives "s3-bucket"), or "" for a word that is not a flag.
func flagOf(arg string) string {
	if !strings.HasPrefix(arg, "-") {
		return ""
	}
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	return name
}

var tmpDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "floe-deploy-check-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}
