package check

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

func parseDockerfile(text string) []instruction {
	var out []instruction
	var pending string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if pending == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		full := pending + trimmed
		pending = ""
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	return out
}

// isFloeBuild reports whether words are a `go build` of ./cmd/floe.
func isFloeBuild(words []string) bool {
	i := slices.Index(words, "build")
	return i > 0 && (words[i-1] == "go" || words[i-1] == "$(GO)") && slices.Contains(words, "./cmd/floe")
}

// dockerfileBuild returns the words of the Dockerfile's RUN that builds
// ./cmd/floe.
func dockerfileBuild(root string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		return nil, err
	}
	var found [][]string
	for _, in := range parseDockerfile(string(text)) {
		if in.cmd != "RUN" {
			continue
		}
		w, err := shellWords(in.args)
		if err != nil {
			return nil, err
		}
		if isFloeBuild(w) {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("deploy/Dockerfile: %d RUN lines build ./cmd/floe, want 1", len(found))
	}
	return found[0], nil
}

// makefileBuild returns the words of the Makefile's recipe line that builds
// ./cmd/floe in target build.
func makefileBuild(root string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	inBuild := false
	var found [][]string
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, "build:"):
			inBuild = true
		case strings.HasPrefix(line, "\t") && inBuild:
			w, err := shellWords(strings.TrimSpace(line))
			if err != nil {
				return nil, err
			}
			if isFloeBuild(w) {
				found = append(found, w)
			}
		case !strings.HasPrefix(line, "\t"):
			inBuild = false
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("Makefile: %d recipe lines of target build build ./cmd/floe, want 1", len(found))
	}
	return found[0], nil
}

// comparable returns words with variables normalised, $(GO) as go, and the
// -o argument (the output path differs) removed; the output is returned
// apart.
func comparable(words []string) (norm []string, out string) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "-o" && i+1 < len(words) {
			out = words[i+1]
			i++
			continue
		}
		if w == "$(GO)" {
			w = "go"
		}
		norm = append(norm, normVars(w))
	}
	return norm, out
}

// Test values of the build arguments, checked in the built binary.
const (
	testVersion = "v0.0.0-deploycheck"
	testCommit  = "c0ffee1"
)

// buildLikeDockerfile runs the Dockerfile's build command from the
// repository root, with -o set to out and VERSION and COMMIT set to test
// values.
func buildLikeDockerfile(root, out string) (string, error) {
	words, err := dockerfileBuild(root)
	if err != nil {
		return "", err
	}
	env := os.Environ()
	vars := map[string]string{"VERSION": testVersion, "COMMIT": testCommit}
	expand := func(s string) string { return os.Expand(normVars(s), func(k string) string { return vars[k] }) }
	var argv []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if len(argv) == 0 && strings.Contains(w, "=") && !strings.HasPrefix(w, "-") {
			env = append(env, expand(w)) // NAME=VALUE before the command
			continue
		}
		if w == "-o" && i+1 < len(words) {
			argv = append(argv, "-o", out)
			i++
			continue
		}
		argv = append(argv, expand(w))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, b)
	}
	return out, nil
}

// TestDockerfileBuildMatchesMakefile: the build stage of deploy/Dockerfile
// runs the Makefile's `go build` of bin/floe (same environment, flags and
// package; only the output path differs), and that command, run here, makes
// a static binary stamped with the version and commit it is given.
func TestDockerfileBuildMatchesMakefile(t *testing.T) {
	root := repoRoot(t)
	dw, err := dockerfileBuild(root)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := makefileBuild(root)
	if err != nil {
		t.Fatal(err)
	}
	dn, dout := comparable(dw)
	mn, _ := comparable(mw)
	if !slices.Equal(dn, mn) {
		t.Fatalf("build commands differ:\n Dockerfile: %q\n Makefile:   %q", dn, mn)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
		if !slices.Contains(dn, want) {
			t.Errorf("build command lacks %s: %q", want, dn)
		}
	}
	ldflags := dn[slices.Index(dn, "-ldflags")+1]
	for _, want := range []string{"-X main.version=$VERSION", "-X main.commit=$COMMIT"} {
		if !strings.Contains(ldflags, want) {
			t.Errorf("ldflags %q lack %q", ldflags, want)
		}
	}

	// The final stage copies what the build wrote.
	text, _ := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	copied := false
	for _, in := range parseDockerfile(string(text)) {
		if in.cmd == "COPY" && strings.Contains(in.args, "--from=build") && strings.Fields(in.args)[1] == dout {
			copied = true
		}
	}
	if !copied {
		t.Errorf("no COPY --from=build of the build's output %s", dout)
	}

	bin := floeBin(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary needs shared libraries %v", libs)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("floe version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), testVersion) || !strings.Contains(string(out), testCommit) {
		t.Errorf("floe version = %q, want version %s and commit %s", out, testVersion, testCommit)
	}
}

// TestDockerfileRuntimeStage: the final stage is a pinned distroless image
// run as a numeric non-root user, exposing floe's ports, with floe as the
// exec-form entrypoint; every base image is pinned to a tag.
func TestDockerfileRuntimeStage(t *testing.T) {
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(string(text))
	last := -1
	for i, in := range ins {
		if in.cmd == "FROM" {
			image := strings.Fields(in.args)[0]
			if err := pinned(image); err != nil {
				t.Errorf("FROM %s: %v", image, err)
			}
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no FROM")
	}
	final := ins[last:]
	if img := strings.Fields(final[0].args)[0]; !strings.HasPrefix(img, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want distroless static", img)
	}
	var user, entry string
	var exposed []string
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "ENTRYPOINT":
			entry = in.args
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || strings.Trim(uid, "0123456789") != "" {
		t.Errorf("USER %q: want a numeric non-root uid (Kubernetes' runAsNonRoot checks it)", user)
	}
	for _, p := range []string{"7070", "7071", "9092"} {
		if !slices.Contains(exposed, p) {
			t.Errorf("EXPOSE %v lacks %s", exposed, p)
		}
	}
	var argv []string
	if err := json.Unmarshal([]byte(entry), &argv); err != nil || len(argv) == 0 || path.Base(argv[0]) != "floe" {
		t.Errorf("ENTRYPOINT %s: want exec form running floe (%v)", entry, err)
	}
}

// imageFiles returns the destinations of the final stage's COPY lines.
func imageFiles(root string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, in := range parseDockerfile(string(text)) {
		switch in.cmd {
		case "FROM":
			files = nil
		case "COPY":
			f := strings.Fields(in.args)
			files = append(files, f[len(f)-1])
		}
	}
	return files, nil
}

// pinned checks that an image reference names a tag other than latest (or
// a digest).
func pinned(image string) error {
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	switch {
	case !ok || tag == "":
		return fmt.Errorf("no tag")
	case tag == "latest":
		return fmt.Errorf("tag latest")
	}
	return nil
}
