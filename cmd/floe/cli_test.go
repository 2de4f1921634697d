package main_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// runFloe runs the binary with args and stdin and returns its outputs and
// exit code.
func runFloe(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(floeBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run floe %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// Every command and subcommand prints its own usage, with its arguments,
// on -h, -help and --help, to stdout, and exits 0.
func TestHelpOfEveryCommand(t *testing.T) {
	cases := []struct {
		args []string
		want string // start of the usage
	}{
		{[]string{}, "floe — a diskless log broker"},
		{[]string{"dev"}, "usage: floe dev [flags]"},
		{[]string{"agent"}, "usage: floe agent [flags]"},
		{[]string{"topic"}, "usage: floe topic create|list|describe|delete"},
		{[]string{"topic", "create"}, "usage: floe topic create NAME [flags]"},
		{[]string{"topic", "list"}, "usage: floe topic list [flags]"},
		{[]string{"topic", "describe"}, "usage: floe topic describe NAME [flags]"},
		{[]string{"topic", "delete"}, "usage: floe topic delete NAME [flags]"},
		{[]string{"produce"}, "usage: floe produce TOPIC [flags]"},
		{[]string{"consume"}, "usage: floe consume TOPIC [flags]"},
		{[]string{"version"}, "usage: floe version [flags]"},
		{[]string{"topic", "alter"}, "usage: floe topic alter NAME [flags]"},
		{[]string{"topic", "delete-records"}, "usage: floe topic delete-records NAME [flags]"},
		{[]string{"group", "reset"}, "usage: floe group reset GROUP [flags]"},
		{[]string{"group", "copy"}, "usage: floe group copy FROM TO [flags]"},
		{[]string{"lag"}, "usage: floe lag [GROUP] [flags]"},
		{[]string{"table", "describe"}, "usage: floe table describe TOPIC [flags]"},
		{[]string{"config", "print"}, "usage: floe config print"},
		{[]string{"token"}, "usage: floe token create|list|revoke"},
		{[]string{"token", "create"}, "usage: floe token create [flags]"},
		{[]string{"token", "revoke"}, "usage: floe token revoke ID [flags]"},
		{[]string{"user", "create"}, "usage: floe user create NAME [flags]"},
		{[]string{"acl"}, "usage: floe acl add|list|remove"},
		{[]string{"acl", "remove"}, "usage: floe acl remove [flags]"},
	}
	for _, c := range cases {
		for _, h := range []string{"-h", "-help", "--help"} {
			args := append(append([]string{}, c.args...), h)
			out, errs, code := runFloe(t, "", args...)
			if code != 0 || !strings.HasPrefix(out, c.want) || errs != "" {
				t.Errorf("floe %v: exit %d, stdout %.80q, stderr %q; want exit 0 and usage %q", args, code, out, errs, c.want)
			}
			// The same shape everywhere: no bare "Usage of", no source file names.
			if strings.Contains(out, "Usage of") || regexp.MustCompile(`\w\.go\b`).MatchString(out) {
				t.Errorf("floe %v: usage has \"Usage of\" or a source file name:\n%s", args, out)
			}
		}
	}
	// A command's usage names its own flags.
	out, _, _ := runFloe(t, "", "consume", "-h")
	for _, f := range []string{"-follow", "-o ", "-print-headers", "-print-timestamp", "-partition"} {
		if !strings.Contains(out, f) {
			t.Errorf("consume -h does not mention %s", f)
		}
	}
	// Only the flags that apply: -o json on admin commands, not on create.
	if out, _, _ := runFloe(t, "", "topic", "create", "-h"); strings.Contains(out, "  -o ") || !strings.Contains(out, "retention.ms") {
		t.Errorf("topic create -h: want its config keys and no -o:\n%s", out)
	}
	if out, _, _ := runFloe(t, "", "group", "copy", "-h"); strings.Contains(out, "-execute") || !strings.Contains(out, "-force") {
		t.Errorf("group copy -h: want -force and no -execute:\n%s", out)
	}
	out, _, _ = runFloe(t, "", "agent", "-h")
	for _, f := range []string{"-fail-fast", "-max-record-bytes", "-max-request-bytes", "-max-fetch-bytes", "-commit-timeout", "-ready-interval", "-postgres-url"} {
		if !strings.Contains(out, f) {
			t.Errorf("agent -h does not mention %s", f)
		}
	}
	out, _, _ = runFloe(t, "", "dev", "-h")
	if !strings.Contains(out, "-max-fetch-bytes") || strings.Contains(out, "-fail-fast") {
		t.Errorf("dev -h: want the limit flags and no -fail-fast:\n%s", out)
	}
}

// Bad command lines: one line on stderr, exit 1, and nothing is contacted
// (no agent runs at the default address in these tests).
func TestBadArgumentsAreOneLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "a command is required"},
		{[]string{"nonsense"}, `unknown command "nonsense"`},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"dev", "extra"}, `unexpected argument "extra"`},
		{[]string{"agent", "-s3-bucket", "b", "extra"}, `unexpected argument "extra"`},
		{[]string{"topic"}, "a subcommand is required"},
		{[]string{"topic", "frob"}, `unknown subcommand "frob"`},
		{[]string{"topic", "create"}, "missing argument NAME"},
		{[]string{"topic", "create", "a", "b"}, `unexpected argument "b"`},
		{[]string{"topic", "list", "a"}, `unexpected argument "a"`},
		{[]string{"topic", "create", "a", "-partitions", "0"}, "-partitions: 0 is out of range"},
		{[]string{"topic", "create", "a", "-partitions", "4294967297"}, "-partitions: 4294967297 is out of range"},
		{[]string{"produce"}, "missing argument TOPIC"},
		{[]string{"produce", "a", "b"}, `unexpected argument "b"`},
		{[]string{"produce", "a", "-partition", "-2"}, "-2 is out of range"},
		{[]string{"produce", "a", "-partition", "4294967296"}, "4294967296 is out of range"},
		{[]string{"produce", "a", "-partition", "x"}, `"x" is not a number`},
		{[]string{"produce", "a", "-batch-bytes", "0"}, "-batch-bytes: 0 must be positive"},
		{[]string{"produce", "a", "-whole", "-key-separator", ":"}, "exclude each other"},
		{[]string{"produce", "a", "-nope"}, "flag provided but not defined: -nope"},
		{[]string{"consume"}, "missing argument TOPIC"},
		{[]string{"consume", "a", "b"}, `unexpected argument "b"`},
		{[]string{"consume", "a", "-partition", "-3"}, "-3 is out of range"},
		{[]string{"consume", "a", "-partition", "2147483648"}, "2147483648 is out of range"},
		{[]string{"consume", "a", "-o", "xml"}, `"xml" is neither an output format`},
		{[]string{"consume", "a", "-from", "soon"}, `"soon" is not earliest`},
		{[]string{"consume", "a", "-addr", "x,,y"}, "empty address"},
		{[]string{"token"}, "a subcommand is required"},
		{[]string{"user", "frob"}, `unknown subcommand "frob"`},
		{[]string{"user", "delete"}, "missing argument NAME"},
		{[]string{"token", "create", "-principal", "User:a", "-ttl", "-1h"}, "is negative"},
		{[]string{"acl", "list", "-prefixed", "-literal"}, "exclude each other"},
		{[]string{"dev", "-ready-interval", "0s"}, "server.ready_interval: 0s must be positive (set by flag -ready-interval)"},
	}
	for _, c := range cases {
		out, errs, code := runFloe(t, "", c.args...)
		if code != 1 || out != "" || strings.Count(strings.TrimSuffix(errs, "\n"), "\n") != 0 ||
			!strings.HasPrefix(errs, "floe: ") || !strings.Contains(errs, c.want) {
			t.Errorf("floe %v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", c.args, code, out, errs, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	goVersion := regexp.QuoteMeta(runtime.Version())
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := runFloe(t, "", args...)
		if code != 0 || errs != "" || !regexp.MustCompile(`^floe \S+ \(commit \S+.*\) `+goVersion+` `).MatchString(out) {
			t.Fatalf("floe %v: exit %d, %q, stderr %q", args, code, out, errs)
		}
	}
	// Where the toolchain stamps the VCS revision, it is the commit.
	info, err := exec.Command("go", "version", "-m", floeBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`vcs\.revision=(\S+)`).FindSubmatch(info); m != nil {
		if out, _, _ := runFloe(t, "", "version"); !strings.Contains(out, "commit "+string(m[1])) {
			t.Fatalf("version %q does not name the commit %s", out, m[1])
		}
	}
	// Link-time values override the build info.
	bin := filepath.Join(t.TempDir(), "floe")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.0.0 -X main.commit=abc123", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "floe v1.0.0 (commit abc123) " + runtime.Version(); !strings.HasPrefix(string(out), want) {
		t.Fatalf("version %q, want prefix %q", out, want)
	}
}
