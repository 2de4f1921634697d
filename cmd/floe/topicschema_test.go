package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `floe topic create|alter -schema FILE` sets a topic's value schema;
// describe summarises it; a bad file or an incompatible change fails in
// one line naming why; produce refuses an invalid value.
func TestTopicValueSchemaCLI(t *testing.T) {
	dir := t.TempDir()
	dev := startFloe(t, "dev", "-data", filepath.Join(dir, "data"), "-iceberg=false")
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(stdin string, args ...string) (string, string, error) {
		cmd := exec.Command(floeBin, append(args, "-addr", dev.addr)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	v1 := file("v1.json", `{"type":"object","required":["id"],"properties":{
		"id":{"type":"integer"},"user":{"type":"object","properties":{"name":{"type":"string"}}},
		"tags":{"type":"array","items":{"type":"string"}}}}`)
	bad := file("bad.json", `{"type":"object","properties":{"id":{"type":"int"}}}`)
	if _, errs, err := run("", "topic", "create", "ev", "-schema", bad); err == nil || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, `$.id: type "int" is not supported`) {
		t.Fatalf("create with a bad schema file: %v, stderr %q", err, errs)
	}
	if out, errs, err := run("", "topic", "create", "ev", "-schema", v1); err != nil {
		t.Fatalf("topic create -schema: %v %s %s", err, out, errs)
	}
	out, errs, err := run("", "topic", "describe", "ev")
	if err != nil || !strings.Contains(out, "config value.schema=set (") ||
		!strings.Contains(out, "id* long, user struct<name string>, tags list<string>") {
		t.Fatalf("describe: %v %s\n%s", err, errs, out)
	}
	if _, errs, err := run(`{"id":"x"}`+"\n", "produce", "ev"); err == nil || !strings.Contains(errs, "$.id: want integer, got string") {
		t.Fatalf("produce an invalid value: %v, stderr %q", err, errs)
	}
	if _, errs, err := run(`{"id":1,"tags":["a"]}`+"\n", "produce", "ev"); err != nil {
		t.Fatalf("produce a valid value: %v %s", err, errs)
	}
	incompatible := file("v2bad.json", `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},
		"user":{"type":"object","properties":{"name":{"type":"string"}}},"tags":{"type":"array","items":{"type":"string"}}}}`)
	if _, errs, err := run("", "topic", "alter", "ev", "-schema", incompatible); err == nil || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, "$.id: type changed from integer to string") {
		t.Fatalf("incompatible alter: %v, stderr %q", err, errs)
	}
	v2 := file("v2.json", `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},
		"user":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}}},
		"tags":{"type":"array","items":{"type":"string"}},"at":{"type":"string","format":"date-time"}}}`)
	if out, errs, err := run("", "topic", "alter", "ev", "-schema", v2); err != nil ||
		!strings.Contains(out, "user struct<name string, age long>, tags list<string>, at timestamptz") {
		t.Fatalf("compatible alter: %v %s\n%s", err, errs, out)
	}
	if _, errs, err := run("", "topic", "alter", "ev", "-schema", v2, "-set", "value.schema={}"); err == nil ||
		!strings.Contains(errs, "also given") {
		t.Fatalf("-schema and -set value.schema: %v, stderr %q", err, errs)
	}
}
