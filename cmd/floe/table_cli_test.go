package main_test

import (
	"strings"
	"testing"
)

// floe table: -h of each subcommand exits 0 with its usage; bad command
// lines are one line on stderr, exit 1, and contact nothing.
func TestTableCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table"}, "usage: floe table describe|scan TOPIC"},
		{[]string{"table", "describe"}, "usage: floe table describe TOPIC [flags]"},
		{[]string{"table", "scan"}, "usage: floe table scan TOPIC [flags]"},
	} {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, c.args...), h)
			out, errs, code := runFloe(t, "", args...)
			if code != 0 || !strings.HasPrefix(out, c.want) || errs != "" {
				t.Errorf("floe %v: exit %d, stdout %.80q, stderr %q; want exit 0 and usage %q", args, code, out, errs, c.want)
			}
		}
	}
	if out, _, _ := runFloe(t, "", "table", "scan", "-h"); !strings.Contains(out, "-limit") || !strings.Contains(out, "-data") ||
		!strings.Contains(out, "-postgres-url") || !strings.Contains(out, "-iceberg-namespace") {
		t.Errorf("table scan -h does not name -limit, -data and the compactor's catalog flags:\n%s", out)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "frob", "a"}, `unknown subcommand "frob"`},
		{[]string{"table", "describe"}, "missing argument TOPIC"},
		{[]string{"table", "describe", "a", "b"}, `unexpected argument "b"`},
		{[]string{"table", "scan", "a", "-limit", "0", "-data", dir}, "-limit 0 must be at least 1"},
		{[]string{"table", "describe", "a", "-data", dir}, "no floe dev catalog in"},
		{[]string{"table", "describe", "a", "-postgres-url", "postgres://x/y"}, "s3.bucket: is required"},
		{[]string{"table", "describe", "a"}, "no catalog given: for floe dev's tables pass -data DIR"}, // floe dev is the likely case
	} {
		out, errs, code := runFloe(t, "", c.args...)
		if code != 1 || out != "" || strings.Count(strings.TrimSuffix(errs, "\n"), "\n") != 0 ||
			!strings.HasPrefix(errs, "floe: ") || !strings.Contains(errs, c.want) {
			t.Errorf("floe %v: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", c.args, code, out, errs, c.want)
		}
	}
}
