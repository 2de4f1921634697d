package metadatatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
)

// testFaultAnswerLost: a commit whose answer is lost (it was applied) and
// that is retried with the same FileCommit gets its real offsets, once: the
// high watermarks advance exactly once, for the plain and the idempotent
// producer alike, even when other files were committed in between.
func testFaultAnswerLost(t *testing.T, s metadata.Store) {
	fs := metafault.Wrap(s)
	tp := createTopic(t, fs, "lost", 2)
	pid := producers(t, fs, 1)
	f := file(key(), plain(tp.ID, 0, 3), idem(tp.ID, 1, pid, 0, 0, 2), plain(tp.ID, 0, 1))

	fs.Next(metafault.OpCommit, 2, metafault.Fault{Mode: metafault.AnswerLost})
	for i := range 2 {
		_, err := fs.CommitFile(ctx(t), f)
		if err == nil || metadata.NotApplied(err) || !errors.Is(err, metafault.ErrInjected) {
			t.Fatalf("try %d with the answer lost: %v, want an ambiguous injected error", i, err)
		}
	}
	// Someone else commits after the first, applied, try.
	wantAccepted(t, "another file", commitOne(t, fs, plain(tp.ID, 0, 5)), 4)
	res := commit(t, fs, f)
	wantAccepted(t, "plain batch", res[0], 0)
	wantAccepted(t, "idempotent batch", res[1], 0)
	wantAccepted(t, "second plain batch", res[2], 3)
	if h0, h1 := hw(t, s, tp.ID, 0), hw(t, s, tp.ID, 1); h0 != 9 || h1 != 2 {
		t.Fatalf("high watermarks %d, %d after a lost answer and retries, want 9, 2 (committed once)", h0, h1)
	}
	if got := fs.Injected(metafault.OpCommit, metafault.AnswerLost); got != 2 {
		t.Errorf("%d answers lost, want 2", got)
	}
	// The producer's next batch follows the one committed once.
	wantAccepted(t, "producer's next batch", commitOne(t, fs, idem(tp.ID, 1, pid, 0, 2, 1)), 2)
	allBatches(t, s, tp.ID, 0)
	allBatches(t, s, tp.ID, 1)
}

// testFaultRefusedAndHung: a refused commit is NotApplied and wrote
// nothing; a hung one fails when its context ends, ambiguous, and wrote
// nothing; latency past the deadline fails not applied; reads fail the
// same ways. Retries then commit once.
func testFaultRefusedAndHung(t *testing.T, s metadata.Store) {
	fs := metafault.Wrap(s)
	tp := createTopic(t, fs, "refused", 1)
	f := file(key(), plain(tp.ID, 0, 2))

	fs.Next(metafault.OpCommit, 1, metafault.Fault{Mode: metafault.Refused})
	fs.Next(metafault.OpCommit, 1, metafault.Fault{Mode: metafault.Hung})
	fs.Next(metafault.OpCommit, 1, metafault.Fault{Latency: time.Minute})
	if _, err := fs.CommitFile(ctx(t), f); !metadata.NotApplied(err) {
		t.Fatalf("refused commit: %v, want NotApplied", err)
	}
	short, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	_, err := fs.CommitFile(short, f)
	cancel()
	if err == nil || metadata.NotApplied(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung commit: %v, want an ambiguous DeadlineExceeded", err)
	}
	short, cancel = context.WithTimeout(ctx(t), 50*time.Millisecond)
	_, err = fs.CommitFile(short, f)
	cancel()
	if !metadata.NotApplied(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("commit slower than its deadline: %v, want NotApplied and DeadlineExceeded", err)
	}
	if got := hw(t, s, tp.ID, 0); got != 0 {
		t.Fatalf("high watermark %d after refused, hung and late commits, want 0", got)
	}
	wantAccepted(t, "retry", commit(t, fs, f)[0], 0)
	wantAccepted(t, "retry again", commit(t, fs, f)[0], 0)
	if got := hw(t, s, tp.ID, 0); got != 2 {
		t.Fatalf("high watermark %d, want 2", got)
	}
	if calls, pending := fs.Calls(metafault.OpCommit), fs.Pending(metafault.OpCommit); calls != 5 || pending != 0 {
		t.Errorf("%d commit calls, %d faults pending; want 5, 0", calls, pending)
	}

	fs.Next(metafault.OpRead, 1, metafault.Fault{Mode: metafault.Refused})
	fs.Next(metafault.OpRead, 1, metafault.Fault{Mode: metafault.Hung})
	if _, _, err := fs.FindBatches(ctx(t), tp.ID, 0, 0, 1<<20); !metadata.NotApplied(err) {
		t.Errorf("refused read: %v, want NotApplied", err)
	}
	short, cancel = context.WithTimeout(ctx(t), 50*time.Millisecond)
	_, err = fs.ListOffset(short, tp.ID, 0, metadata.OffsetLatest, 0)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung read: %v, want DeadlineExceeded", err)
	}
	fs.Always(metafault.OpRead, metafault.Fault{Latency: time.Millisecond})
	if refs, _, err := fs.FindBatches(ctx(t), tp.ID, 0, 0, 1<<20); err != nil || len(refs) != 1 {
		t.Errorf("slow read: %v, %v; want the one batch", refs, err)
	}
}
