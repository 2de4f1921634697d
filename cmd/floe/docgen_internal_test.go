package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errDocStale is a generated table of a doc that differs from the code.
var errDocStale = errors.New("the generated table differs from the code")

// checkGeneratedDoc compares the table between begin and end in the doc
// at path with want. With FLOE_UPDATE_DOCS=1 (and not under CI, where a
// test that rewrites its own expectation would pass whatever the code
// does) it rewrites a stale table instead and returns nil; under CI=true
// the variable is refused, stale table or not.
func checkGeneratedDoc(path, begin, end, want string, getenv func(string) string) error {
	update := getenv("FLOE_UPDATE_DOCS") == "1"
	if update && getenv("CI") == "true" {
		return fmt.Errorf("FLOE_UPDATE_DOCS=1 is refused under CI=true: the test would rewrite %s instead of checking it", path)
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no generated table between the markers", path)
	}
	if text[i+len(begin):j] == want {
		return nil
	}
	if update {
		return os.WriteFile(path, []byte(text[:i+len(begin)]+want+text[j:]), 0o644)
	}
	return fmt.Errorf("%w: %s", errDocStale, path)
}

// TestUpdateDocsRefusedUnderCI: FLOE_UPDATE_DOCS=1 rewrites a stale
// table on a developer's machine, and fails the test under CI, leaving
// the doc as it was.
func TestUpdateDocsRefusedUnderCI(t *testing.T) {
	const begin, end = "<!-- begin -->\n", "<!-- end -->\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	stale := "intro\n" + begin + "old\n" + end + "outro\n"
	env := func(vars ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(vars); i += 2 {
				if vars[i] == k {
					return vars[i+1]
				}
			}
			return ""
		}
	}
	write := func() {
		if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	write()
	if err := checkGeneratedDoc(path, begin, end, "new\n", env()); !errors.Is(err, errDocStale) {
		t.Errorf("stale table, no variable: %v, want errDocStale", err)
	}
	write()
	ci := env("CI", "true", "FLOE_UPDATE_DOCS", "1")
	if err := checkGeneratedDoc(path, begin, end, "new\n", ci); err == nil || !strings.Contains(err.Error(), "refused under CI") {
		t.Errorf("CI=true FLOE_UPDATE_DOCS=1: %v, want refused", err)
	}
	if got := read(); got != stale {
		t.Errorf("CI=true FLOE_UPDATE_DOCS=1 rewrote the doc:\n%s", got)
	}
	if err := checkGeneratedDoc(path, begin, end, "old\n", ci); err == nil {
		t.Errorf("CI=true FLOE_UPDATE_DOCS=1 with the table up to date: passed, want refused")
	}
	write()
	if err := checkGeneratedDoc(path, begin, end, "new\n", env("FLOE_UPDATE_DOCS", "1")); err != nil {
		t.Fatalf("FLOE_UPDATE_DOCS=1 off CI: %v", err)
	}
	if got, want := read(), "intro\n"+begin+"new\n"+end+"outro\n"; got != want {
		t.Errorf("rewritten doc:\n%s\nwant\n%s", got, want)
	}
}
