package chaos

import "testing"

// TestCommitDue: a member commits every commitEvery records and when idle
// with records uncommitted; a failed commit keeps them due, so the next
// idle poll commits them (the drain of seed 2281 waited a minute for a
// member whose idle commit failed once after its last record).
func TestCommitDue(t *testing.T) {
	var c commitDue
	if c.idle() {
		t.Fatal("idle with nothing read: commit due")
	}
	for i := 1; i < commitEvery; i++ {
		if c.read() {
			t.Fatalf("commit due after %d records", i)
		}
	}
	if !c.read() {
		t.Fatalf("no commit due after %d records", commitEvery)
	}
	c.committed(false)
	if !c.idle() {
		t.Fatal("a failed commit: the records are no longer due")
	}
	c.committed(false)
	if !c.idle() || !c.read() {
		t.Fatal("after two failed commits: not due")
	}
	c.committed(true)
	if c.idle() {
		t.Fatal("after a commit: still due")
	}
}
