package batcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// fileState is where a file handed to the commit goroutine stands when
// the next commit is chosen.
type fileState int

const (
	fileUploading    fileState = iota // its upload has not returned
	fileUploadFailed                  // its upload failed or missed its deadline
	fileLate                          // uploaded, but its commit deadline passed before its commit started
	fileReady                         // uploaded, to be committed
)

// live is 1 for a file that may still be committed, else 0.
func (s fileState) live() int {
	if s == fileUploading || s == fileReady {
		return 1
	}
	return 0
}

// nextCommit chooses the next commit among the waiting files, given in
// seal order: it returns how many of them, from the first, are settled now
// (settled), and among those the positions of the files to commit together
// (commit, ready files in seal order, at most max). The other settled files
// failed (upload failed, or late): they are answered without holding up
// the files after them. It stops at the first file still uploading, so
// that no file is committed before one sealed earlier (a partition's
// batches keep their order across files), and before a ready file that
// would be the max+1-th.
func nextCommit(states []fileState, max int) (settled int, commit []int) {
	for i, st := range states {
		switch st {
		case fileUploading:
			return i, commit
		case fileReady:
			if len(commit) == max {
				return i, commit
			}
			commit = append(commit, i)
		}
	}
	return len(states), commit
}

// commitLoop commits uploaded files in seal order, those that are waiting
// together (nextCommit), and answers their producers.
func (b *Batcher) commitLoop() {
	defer close(b.commDone)
	var waiting []*file // handed over by run, in seal order, not yet settled
	open := true        // commitQ is not closed
	for {
		if len(waiting) == 0 {
			f, ok := <-b.commitQ
			if !ok {
				return
			}
			waiting = append(waiting, f)
		}
		b.awaitUpload(waiting[0]) // the first file's upload, until its deadline
		now := time.Now()
		states := make([]fileState, 0, len(waiting))
		live := 0 // files that may go into the commit: neither failed nor late
		for _, f := range waiting {
			states = append(states, b.fileState(f, now))
			live += states[len(states)-1].live()
		}
		// Then whatever else has been handed over, without waiting.
	drain:
		for open && live < b.cfg.MaxFilesPerCommit {
			select {
			case f, ok := <-b.commitQ:
				if !ok {
					open = false
					break drain
				}
				waiting = append(waiting, f)
				states = append(states, b.fileState(f, now))
				live += states[len(states)-1].live()
			default:
				break drain
			}
		}
		settled, commit := nextCommit(states, b.cfg.MaxFilesPerCommit)
		b.settle(waiting[:settled], states[:settled], commit)
		waiting = waiting[settled:]
	}
}

// fileState polls f's upload (without waiting) and says where f stands.
func (b *Batcher) fileState(f *file, now time.Time) fileState {
	if f.up == nil {
		select {
		case up := <-f.uploaded:
			f.up = &up
		default:
			return fileUploading
		}
	}
	switch {
	case f.up.err != nil:
		return fileUploadFailed
	case !now.Before(f.up.at.Add(b.cfg.CommitTimeout)):
		return fileLate
	}
	return fileReady
}

// settle answers the settled files, in seal order: the failed ones at
// once, the others once their commit, one for all, has an outcome.
func (b *Batcher) settle(files []*file, states []fileState, commit []int) {
	var set []*file // the files committed together, with batches left
	var fcs []metadata.FileCommit
	deadline := time.Time{}
	for _, i := range commit {
		f := files[i]
		f.commits, f.runs = buildCommits(f.order)
		if len(f.commits) == 0 {
			b.log.Debug("file not committed: every batch withdrawn or refused", "key", f.key)
			continue
		}
		set = append(set, f)
		fcs = append(fcs, metadata.FileCommit{Key: f.key, Size: int64(len(f.data)), Batches: f.commits})
		if d := f.up.at.Add(b.cfg.CommitTimeout); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	var (
		results   [][]metadata.BatchResult
		ambiguous bool
		err       error
	)
	if len(set) > 0 {
		b.m.commitFiles(len(set))
		results, ambiguous, err = b.commit(fcs, deadline)
	}
	at := 0 // position of the next committed file in set
	for i, f := range files {
		handed := false
		switch {
		case states[i] == fileUploadFailed:
			b.log.Error("file upload failed", "key", f.key, "batches", len(f.waiters), "err", f.up.err)
			b.failAll(f, &FlushError{Stage: StageUpload, Err: f.up.err})
		case states[i] == fileLate:
			// The files before it took the whole deadline: nothing was sent.
			err := fmt.Errorf("batcher: commit deadline (%v) passed before the commit started", b.cfg.CommitTimeout)
			b.log.Error("file commit failed", "key", f.key, "batches", len(f.waiters), "err", err)
			b.failAll(f, &FlushError{Stage: StageCommit, Err: err})
		case at < len(set) && set[at] == f:
			if err != nil {
				b.log.Error("file commit failed", "key", f.key, "runs", len(f.commits), "files_in_commit", len(set),
					"outcome_unknown", ambiguous, "err", err)
				b.failAll(f, &FlushError{Stage: StageCommit, Ambiguous: ambiguous, Err: err})
			} else {
				handed = b.answerFile(f, results[at])
			}
			at++
		}
		b.finish(f, handed)
	}
}

// answerFile answers f's producers with its commit's results and hands
// the file to OnCommit; it reports whether it did (OnCommit then holds
// the file's buffer).
func (b *Batcher) answerFile(f *file, results []metadata.BatchResult) bool {
	b.m.flush(len(f.data), len(f.waiters), len(f.parts), time.Since(f.sealedAt))
	for i, run := range f.runs {
		res := results[i]
		next := res.BaseOffset
		for _, w := range run {
			wr := res
			wr.BaseOffset = next
			w.answer(wr, res.Err)
			next += int64(w.records)
		}
	}
	if b.opts.OnCommit == nil {
		return false
	}
	b.opts.OnCommit(CommittedFile{Key: f.key, Data: f.data, Commits: f.commits, Results: results, Release: f.buf.releaseOnce()})
	return true
}

// finish lets f's buffer go (unless OnCommit holds it), its bytes count
// no more, and its producers hear their answers.
func (b *Batcher) finish(f *file, handed bool) {
	if !handed {
		f.buf.release()
	}
	for _, w := range f.waiters {
		b.release(w.size)
		close(w.done)
	}
}

// awaitUpload waits for the file's upload until its deadline, even if the
// store does not honour its context: past the deadline the file has failed
// and will never be committed, whenever its PUT returns. f.up holds the
// outcome after.
func (b *Batcher) awaitUpload(f *file) {
	if f.up != nil {
		return
	}
	t := time.NewTimer(time.Until(f.sealedAt.Add(b.cfg.UploadTimeout)))
	defer t.Stop()
	var up uploadResult
	select {
	case up = <-f.uploaded:
	case <-t.C:
		select {
		case up = <-f.uploaded: // it ended with the deadline
		default:
			up = uploadResult{err: fmt.Errorf("batcher: upload deadline (%v) passed: the store had not returned", b.cfg.UploadTimeout), at: time.Now()}
		}
	}
	f.up = &up
}

// Commit retry pacing: the first pause, its cap, and the share of the
// commit deadline one attempt may use (so a hung connection leaves time
// for a retry on another).
const (
	commitBackoff    = 10 * time.Millisecond
	commitMaxBackoff = 500 * time.Millisecond
	commitAttemptDiv = 2
)

// commit commits the files together, retrying the same set (CommitFiles is
// idempotent by every file key: a retry after a commit that landed answers
// with its results) while the outcome is unknown, until deadline. It
// returns whether an error leaves the outcome unknown: false when every
// attempt surely did nothing (metadata.NotApplied), which is answered at
// once.
func (b *Batcher) commit(fcs []metadata.FileCommit, deadline time.Time) (_ [][]metadata.BatchResult, ambiguous bool, _ error) {
	ctx, cancel := context.WithDeadline(b.ctx, deadline)
	defer cancel()
	pause := commitBackoff
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, b.cfg.CommitTimeout/commitAttemptDiv)
		start := time.Now()
		results, err := b.committer.CommitFiles(actx, fcs)
		acancel()
		b.m.commit(time.Since(start), err)
		if err == nil {
			if err := checkResults(fcs, results); err != nil {
				// Committed, but the answer cannot be mapped to the batches.
				return nil, true, err
			}
			return results, false, nil
		}
		definite := metadata.NotApplied(err)
		ambiguous = ambiguous || !definite
		b.log.Debug("commit attempt failed", "key", fcs[0].Key, "files", len(fcs), "attempt", attempt, "outcome_unknown", !definite, "err", err)
		if !ambiguous || errors.Is(err, metadata.ErrInvalidCommit) || errors.Is(err, metadata.ErrClosed) {
			return nil, ambiguous, fmt.Errorf("batcher: commit: %w", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			if b.ctx.Err() == nil {
				return nil, true, fmt.Errorf("batcher: commit deadline (%v) passed after %d attempts: %w", b.cfg.CommitTimeout, attempt, err)
			}
			return nil, true, fmt.Errorf("batcher: commit aborted by close after %d attempts: %w", attempt, err)
		}
		pause = min(2*pause, commitMaxBackoff)
	}
}

// checkResults checks that a commit's answer has one result per run of
// every file.
func checkResults(fcs []metadata.FileCommit, results [][]metadata.BatchResult) error {
	if len(results) != len(fcs) {
		return fmt.Errorf("batcher: commit returned results for %d files, not %d", len(results), len(fcs))
	}
	for i, fc := range fcs {
		if len(results[i]) != len(fc.Batches) {
			return fmt.Errorf("batcher: commit returned %d results for %d runs of file %s", len(results[i]), len(fc.Batches), fc.Key)
		}
	}
	return nil
}

// failAll answers every batch of f still unanswered with err.
func (b *Batcher) failAll(f *file, err error) {
	for _, w := range f.waiters {
		w.mu.Lock()
		if w.state == statePending || w.state == stateCommitting {
			w.state, w.err = stateAnswered, err
		}
		w.mu.Unlock()
	}
}

// buildCommits moves the file's pending batches into its commit (batches
// withdrawn before are left out) and groups them into runs, one metadata
// row each: consecutive batches of a partition without idempotence that
// are adjacent in the file form one run; an idempotent batch is a run of
// its own (its sequence is checked alone). A withdrawn batch between two
// others splits their run, so no run covers its bytes.
func buildCommits(order []*waiter) (commits []metadata.BatchCommit, runs [][]*waiter) {
	open := false // the last run may take more batches
	for _, w := range order {
		if !w.freeze() {
			open = false
			continue
		}
		e := w.entry
		if n := len(commits); open && !w.idem {
			c := &commits[n-1]
			if c.TopicID == e.TopicID && c.Partition == e.Partition && c.ByteOffset+c.ByteLength == e.ByteOffset {
				c.ByteLength += e.ByteLength
				c.RecordCount += e.RecordCount
				c.MaxTimestamp = max(c.MaxTimestamp, e.MaxTimestamp)
				runs[n-1] = append(runs[n-1], w)
				continue
			}
		}
		commits = append(commits, e)
		runs = append(runs, []*waiter{w})
		open = !w.idem
	}
	return commits, runs
}
