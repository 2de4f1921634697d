package main_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every admin command takes -o json (one JSON object a line); text tables
// have headers; lag fits 100 columns.
func TestAdminJSONAndTables(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "orders", "-partitions", "3"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("a\nb\nc\n", "produce", "orders"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("", "consume", "orders", "-group", "billing-service-with-a-long-name"); code != 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		args []string
		key  string // a field the object has
	}{
		{[]string{"topic", "list"}, "topics"},
		{[]string{"topic", "describe", "orders"}, "partitions"},
		{[]string{"group", "list"}, "groups"},
		{[]string{"group", "describe", "billing-service-with-a-long-name"}, "partitions"},
		{[]string{"lag"}, "partitions"},
	} {
		out, errs, code := floe("", append(tc.args, "-o", "json")...)
		var m map[string]any
		if code != 0 || json.Unmarshal([]byte(strings.TrimSpace(out)), &m) != nil || m[tc.key] == nil {
			t.Errorf("floe %v -o json: exit %d, %q %s; want a JSON object with %q", tc.args, code, out, errs, tc.key)
		}
	}
	if out, _, _ := floe("", "topic", "list"); !strings.HasPrefix(out, "TOPIC") || !strings.Contains(out, "PARTITIONS") {
		t.Errorf("topic list has no header:\n%s", out)
	}
	out, errs, code := floe("", "lag")
	if code != 0 || !strings.Contains(out, "LAG") {
		t.Fatalf("lag: %d %s", code, errs)
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("lag line of %d columns, over 100: %q", n, l)
		}
	}
	if _, errs, code := floe("", "topic", "list", "-o", "yaml"); code != 1 || !strings.Contains(errs, `flag -o: "yaml" is neither text nor json`) {
		t.Errorf("-o yaml: exit %d, %q", code, errs)
	}
}
