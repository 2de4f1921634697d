package main_test

import (
	"strings"
	"testing"
)

// floe group reset previews unless -execute, says which positions it
// clamped and counts only those that move; a missing group is NotFound
// (and is not created); group copy refuses to overwrite positions
// without -force.
func TestGroupResetPreviewClampAndRefusals(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "t", "-partitions", "2"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("a\nb\nc\nd\n", "produce", "t", "-partition", "0"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("e\n", "produce", "t", "-partition", "1"); code != 0 {
		t.Fatal(errs)
	}
	// A missing group: NotFound, in one line that says what to do, and
	// still missing afterwards.
	_, errs, code := floe("", "group", "reset", "nosuch", "-to", "earliest", "-execute")
	if code != 1 || !strings.Contains(errs, `group "nosuch" not found`) || strings.Contains(errs, "metadata:") ||
		strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("reset of a missing group: exit %d, %q", code, errs)
	}
	if out, _, _ := floe("", "group", "list"); strings.Contains(out, "nosuch") {
		t.Fatalf("the reset created the group:\n%s", out)
	}
	if _, errs, code := floe("", "consume", "t", "-group", "g"); code != 0 {
		t.Fatal(errs)
	}
	// Without -execute: a preview. Partition 0 is at 4 (its end), 1 at 1.
	out, errs, code := floe("", "group", "reset", "g", "-to", "2", "-topic", "t")
	if code != 0 || !strings.Contains(out, "preview: 1 of 2 positions would move") || !strings.Contains(out, "-execute") {
		t.Fatalf("preview: exit %d, %q %s", code, out, errs)
	}
	if out, _, _ := floe("", "consume", "t", "-group", "g"); out != "" {
		t.Fatalf("a preview changed the positions: consumed %q", out)
	}
	// Partition 1 holds one record: offset 2 is clamped to its end, 1,
	// and does not move; partition 0 moves from 4 to 2.
	out, errs, code = floe("", "group", "reset", "g", "-to", "2", "-topic", "t", "-execute")
	if code != 0 || !strings.Contains(out, "clamped to the log end") || !strings.Contains(out, "moved 1 position of group g (1 unchanged)") {
		t.Fatalf("reset: exit %d, %q %s", code, out, errs)
	}
	if out, _, _ := floe("", "consume", "t", "-group", "g"); out != "c\nd\n" {
		t.Fatalf("after the reset to 2, consumed %q, want c and d", out)
	}
	// Copy onto a group that has positions: refused without -force.
	if _, errs, code := floe("", "group", "copy", "g", "g2"); code != 0 {
		t.Fatal(errs)
	}
	_, errs, code = floe("", "group", "copy", "g", "g2")
	if code != 1 || !strings.Contains(errs, `group "g2" already has 2 committed positions`) || !strings.Contains(errs, "-force") {
		t.Fatalf("copy onto positions: exit %d, %q", code, errs)
	}
	if out, errs, code := floe("", "group", "copy", "g", "g2", "-force"); code != 0 || !strings.Contains(out, "copied 2 positions") {
		t.Fatalf("copy -force: exit %d, %q %s", code, out, errs)
	}
}
