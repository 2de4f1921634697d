package metadatatest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metafault"
)

// commitFilesTests are the conformance tests of CommitFiles.
var commitFilesTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"CommitFilesOrder", testCommitFilesOrder},
	{"CommitFilesReplay", testCommitFilesReplay},
	{"CommitFilesFaults", testCommitFilesFaults},
	{"CommitFilesLimits", testCommitFilesLimits},
	{"CommitFilesConcurrent", testCommitFilesConcurrent},
	{"CommitFilesClosed", testCommitFilesClosed},
}

// commitFiles commits files in one call or fails the test, checking the
// result counts.
func commitFiles(t *testing.T, s metadata.Store, files ...metadata.FileCommit) [][]metadata.BatchResult {
	t.Helper()
	res, err := s.CommitFiles(ctx(t), files)
	if err != nil {
		t.Fatalf("CommitFiles(%d files): %v", len(files), err)
	}
	checkCounts(t, files, res)
	return res
}

func checkCounts(t *testing.T, files []metadata.FileCommit, res [][]metadata.BatchResult) {
	t.Helper()
	if len(res) != len(files) {
		t.Fatalf("CommitFiles: %d answers for %d files", len(res), len(files))
	}
	for i := range files {
		if len(res[i]) != len(files[i].Batches) {
			t.Fatalf("CommitFiles: file %d (%s): %d results for %d batches", i, files[i].Key, len(res[i]), len(files[i].Batches))
		}
	}
}

// testCommitFilesOrder: files of one call are sequenced in the order
// given: per partition, the batches of a file follow those of the files
// before it, densely; an idempotent producer's batches may continue from
// one file to the next, and a retry of an earlier file's batch in a later
// one is a duplicate of it. Every batch reads back in its own file.
func testCommitFilesOrder(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "files-order", 4)
	other := createTopic(t, s, "files-order-other", 1)
	pid := producers(t, s, 1)
	files := []metadata.FileCommit{
		file(key(), plain(tp.ID, 3, 2), plain(tp.ID, 0, 1), idem(tp.ID, 1, pid, 0, 0, 2)),
		file(key(), plain(tp.ID, 0, 3), plain(other.ID, 0, 4), plain(tp.ID, 3, 1)),
		file(key(), idem(tp.ID, 1, pid, 0, 2, 3), plain(tp.ID, 2, 1), plain(tp.ID, 0, 2)),
		file(key(), idem(tp.ID, 1, pid, 0, 0, 2), plain(tp.ID, 3, 5)), // a retry of file 0's batch
		file(key(), plain(tp.ID, 0, 1)),
	}
	res := commitFiles(t, s, files...)
	wantAccepted(t, "file 0 p3", res[0][0], 0)
	wantAccepted(t, "file 0 p0", res[0][1], 0)
	wantAccepted(t, "file 0 idempotent p1", res[0][2], 0)
	wantAccepted(t, "file 1 p0", res[1][0], 1)
	wantAccepted(t, "file 1 other topic", res[1][1], 0)
	wantAccepted(t, "file 1 p3", res[1][2], 2)
	wantAccepted(t, "file 2 idempotent p1, next sequence", res[2][0], 2)
	wantAccepted(t, "file 2 p2", res[2][1], 0)
	wantAccepted(t, "file 2 p0", res[2][2], 4)
	wantDuplicate(t, "file 3 retry of file 0's batch", res[3][0], 0)
	wantAccepted(t, "file 3 p3", res[3][1], 3)
	wantAccepted(t, "file 4 p0", res[4][0], 6)
	for i, r := range res {
		for j := range r {
			if r[j].LogAppendTime != r[0].LogAppendTime {
				t.Errorf("file %d: batches got append times %d and %d", i, r[0].LogAppendTime, r[j].LogAppendTime)
			}
		}
	}
	want := []int64{7, 5, 1, 8}
	for p := range int32(4) {
		if got := hw(t, s, tp.ID, p); got != want[p] {
			t.Errorf("partition %d high watermark %d, want %d", p, got, want[p])
		}
		for _, ref := range allBatches(t, s, tp.ID, p) {
			found := false
			for i, f := range files {
				for j, b := range f.Batches {
					r := res[i][j]
					if b.TopicID == tp.ID && b.Partition == p && r.Err == nil && !r.Duplicate && r.BaseOffset == ref.BaseOffset {
						found = ref.FileKey == f.Key && ref.ByteOffset == b.ByteOffset && ref.RecordCount == b.RecordCount &&
							ref.LogAppendTime == r.LogAppendTime
					}
				}
			}
			if !found {
				t.Errorf("partition %d batch %+v is not where the commit put it", p, ref)
			}
		}
	}
	// The next call follows on, and so does the producer.
	res = commitFiles(t, s, file(key(), plain(tp.ID, 0, 1)), file(key(), idem(tp.ID, 1, pid, 0, 5, 1), plain(tp.ID, 0, 1)))
	wantAccepted(t, "next call p0", res[0][0], 7)
	wantAccepted(t, "next call producer", res[1][0], 5)
	wantAccepted(t, "next call p0 again", res[1][1], 8)
}

// testCommitFilesReplay: a call retried whole writes nothing and answers
// as the first did; a call mixing files already committed (in any earlier
// call, in another order) with new ones answers the old files with their
// stored results and commits only the new ones, after everything before.
// A key committed earlier with another batch count refuses that file's
// batches (ErrInvalidCommit) and lets the rest commit.
func testCommitFilesReplay(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "files-replay", 2)
	pid := producers(t, s, 1)
	set := []metadata.FileCommit{
		file(key(), plain(tp.ID, 0, 2), idem(tp.ID, 1, pid, 0, 0, 1)),
		file(key(), plain(tp.ID, 1, 3), plain(tp.ID, 0, 1)),
		file(key(), idem(tp.ID, 1, pid, 0, 1, 2), idem(tp.ID, 1, pid, 0, 9, 1)), // the second out of order
	}
	first := commitFiles(t, s, set...)
	wantRefused(t, "out of order", first[2][1], metadata.ErrOutOfOrderSequence)
	before := logState(t, s, tp.ID, 2)
	for i := range 2 {
		again := commitFiles(t, s, set...)
		for j := range set {
			sameResults(t, fmt.Sprintf("retry %d of the set, file %d", i, j), again[j], first[j])
		}
		if after := logState(t, s, tp.ID, 2); !reflect.DeepEqual(after, before) {
			t.Fatalf("retry %d of the set changed the log: %v, was %v", i, after, before)
		}
	}
	// Committed files mixed with new ones, and one file by CommitFile.
	sameResults(t, "one file of the set by CommitFile", commit(t, s, set[1]), first[1])
	fresh := file(key(), plain(tp.ID, 0, 4), idem(tp.ID, 1, pid, 0, 3, 1))
	mixed := commitFiles(t, s, set[2], fresh, set[0])
	sameResults(t, "landed file 2 in a mixed call", mixed[0], first[2])
	sameResults(t, "landed file 0 in a mixed call", mixed[2], first[0])
	wantAccepted(t, "new file after the landed ones", mixed[1][0], before[0][0])
	wantAccepted(t, "producer's next batch", mixed[1][1], before[1][0])
	// A file committed earlier, now with another number of batches.
	late := file(key(), plain(tp.ID, 0, 1))
	bad := file(set[0].Key, plain(tp.ID, 0, 1))
	res := commitFiles(t, s, late, bad)
	wantAccepted(t, "new file beside a mistaken key", res[0][0], before[0][0]+4)
	for j, r := range res[1] {
		if !errors.Is(r.Err, metadata.ErrInvalidCommit) {
			t.Errorf("batch %d of a key committed with another batch count: %+v, want ErrInvalidCommit", j, r)
		}
	}
	// The same mistake alone in a call.
	for j, r := range commitFiles(t, s, file(set[1].Key, plain(tp.ID, 0, 1)))[0] {
		if !errors.Is(r.Err, metadata.ErrInvalidCommit) {
			t.Errorf("batch %d of a key committed with another batch count, alone: %+v, want ErrInvalidCommit", j, r)
		}
	}
	if got := hw(t, s, tp.ID, 0); got != before[0][0]+5 {
		t.Errorf("partition 0 high watermark %d, want %d: the mistaken file wrote", got, before[0][0]+5)
	}
	allBatches(t, s, tp.ID, 0)
	allBatches(t, s, tp.ID, 1)
}

// testCommitFilesFaults: the answer of a call lost after it was applied:
// its retry (the same set) answers every file with its real results, and
// the log holds each file once; a refused call is NotApplied and wrote
// nothing; a hung one is ambiguous and wrote nothing.
func testCommitFilesFaults(t *testing.T, s metadata.Store) {
	fs := metafault.Wrap(s)
	tp := createTopic(t, fs, "files-faults", 2)
	pid := producers(t, fs, 1)
	set := []metadata.FileCommit{
		file(key(), plain(tp.ID, 0, 3), idem(tp.ID, 1, pid, 0, 0, 2)),
		file(key(), plain(tp.ID, 1, 1), plain(tp.ID, 0, 2)),
		file(key(), idem(tp.ID, 1, pid, 0, 2, 1)),
	}
	fs.Next(metafault.OpCommit, 2, metafault.Fault{Mode: metafault.AnswerLost})
	for i := range 2 {
		if _, err := fs.CommitFiles(ctx(t), set); err == nil || metadata.NotApplied(err) || !errors.Is(err, metafault.ErrInjected) {
			t.Fatalf("try %d with the answer lost: %v, want an ambiguous injected error", i, err)
		}
	}
	wantAccepted(t, "another file in between", commitOne(t, fs, plain(tp.ID, 0, 5)), 5)
	res := commitFiles(t, fs, set...)
	wantAccepted(t, "file 0 plain", res[0][0], 0)
	wantAccepted(t, "file 0 idempotent", res[0][1], 0)
	wantAccepted(t, "file 1 p1", res[1][0], 2)
	wantAccepted(t, "file 1 p0", res[1][1], 3)
	wantAccepted(t, "file 2 idempotent", res[2][0], 3)
	if h0, h1 := hw(t, s, tp.ID, 0), hw(t, s, tp.ID, 1); h0 != 10 || h1 != 4 {
		t.Fatalf("high watermarks %d, %d after lost answers and a retry, want 10, 4 (committed once)", h0, h1)
	}

	next := []metadata.FileCommit{file(key(), plain(tp.ID, 0, 1)), file(key(), plain(tp.ID, 1, 1))}
	fs.Next(metafault.OpCommit, 1, metafault.Fault{Mode: metafault.Refused})
	fs.Next(metafault.OpCommit, 1, metafault.Fault{Mode: metafault.Hung})
	if _, err := fs.CommitFiles(ctx(t), next); !metadata.NotApplied(err) {
		t.Fatalf("refused call: %v, want NotApplied", err)
	}
	short, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	_, err := fs.CommitFiles(short, next)
	cancel()
	if err == nil || metadata.NotApplied(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: %v, want an ambiguous DeadlineExceeded", err)
	}
	if h0, h1 := hw(t, s, tp.ID, 0), hw(t, s, tp.ID, 1); h0 != 10 || h1 != 4 {
		t.Fatalf("high watermarks %d, %d after refused and hung calls, want 10, 4", h0, h1)
	}
	res = commitFiles(t, fs, next...)
	wantAccepted(t, "after the faults p0", res[0][0], 10)
	wantAccepted(t, "after the faults p1", res[1][0], 4)
	if calls := fs.Calls(metafault.OpCommit); calls != 7 {
		t.Errorf("%d commit calls through the wrapper, want 7 (one per CommitFiles call)", calls)
	}
}

// testCommitFilesLimits: no file is no call and no result; one file
// answers as CommitFile would; MaxCommitFiles files commit in one call;
// more, a duplicate key or one invalid file refuse the whole call
// (ErrInvalidCommit, NotApplied) and write nothing.
func testCommitFilesLimits(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "files-limits", 3)
	res, err := s.CommitFiles(ctx(t), nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("CommitFiles of no file: %v, %v; want nothing", res, err)
	}
	one := file(key(), plain(tp.ID, 0, 2), plain(tp.ID, 1, 1))
	res = commitFiles(t, s, one)
	wantAccepted(t, "one file", res[0][0], 0)
	wantAccepted(t, "one file p1", res[0][1], 0)
	sameResults(t, "CommitFile of the key committed by CommitFiles", commit(t, s, one), res[0])

	var full []metadata.FileCommit
	for i := range metadata.MaxCommitFiles {
		full = append(full, file(key(), plain(tp.ID, int32(i%3), 1)))
	}
	res = commitFiles(t, s, full...)
	next := map[int32]int64{0: 2, 1: 1}
	for i, r := range res {
		p := int32(i % 3)
		wantAccepted(t, fmt.Sprintf("file %d of the largest call", i), r[0], next[p])
		next[p]++
	}
	before := logState(t, s, tp.ID, 3)
	refused := map[string][]metadata.FileCommit{
		"one file too many": append(append([]metadata.FileCommit(nil), full[1:]...),
			file(key(), plain(tp.ID, 0, 1)), file(key(), plain(tp.ID, 0, 1))),
		"duplicate key": func() []metadata.FileCommit {
			f := file(key(), plain(tp.ID, 0, 1))
			return []metadata.FileCommit{f, file(key(), plain(tp.ID, 1, 1)), f}
		}(),
		"one invalid file": {file(key(), plain(tp.ID, 0, 1)), file(key(), plain(tp.ID, 1, 0))},
		"one without key":  {file(key(), plain(tp.ID, 0, 1)), file("", plain(tp.ID, 1, 1))},
	}
	for name, files := range refused {
		_, err := s.CommitFiles(ctx(t), files)
		if !errors.Is(err, metadata.ErrInvalidCommit) || !metadata.NotApplied(err) {
			t.Errorf("%s: %v, want ErrInvalidCommit", name, err)
		}
	}
	if after := logState(t, s, tp.ID, 3); !reflect.DeepEqual(after, before) {
		t.Fatalf("refused calls changed the log: %v, was %v", after, before)
	}
}

// testCommitFilesConcurrent has committers send calls of several files
// whose partitions come in different orders from file to file and call to
// call (file A names partition 5 then B names 2, while another call's A
// names 2 and B 5): the partitions must be locked across the whole call
// in one order, so no call deadlocks or fails, and every partition's
// offsets come out dense, each file's batches after its call's earlier
// files'.
func testCommitFilesConcurrent(t *testing.T, s metadata.Store) {
	const (
		committers = 8
		calls      = 20
		partitions = 6
	)
	tp := createTopic(t, s, "files-concurrent", partitions)
	var (
		mu   sync.Mutex
		want = map[int32]int64{}
	)
	concurrently(t, committers, "concurrent multi-file commits", func(c context.Context, g int) error {
		rng := rand.New(rand.NewPCG(uint64(g), 23))
		for i := range calls {
			perm := rng.Perm(partitions)
			var files []metadata.FileCommit
			for j := range 2 + rng.IntN(3) {
				// Each file names one or two partitions, the files of a
				// call walking the permutation from both ends.
				p := int32(perm[len(perm)-1-j])
				batches := []metadata.BatchCommit{plain(tp.ID, p, int32(1+rng.IntN(3)))}
				if rng.IntN(2) == 0 {
					batches = append(batches, plain(tp.ID, int32(perm[j]), 1))
				}
				files = append(files, file(fmt.Sprintf("files-concurrent/%d/%d/%d", g, i, j), batches...))
			}
			res, err := s.CommitFiles(c, files)
			if err != nil {
				return fmt.Errorf("committer %d call %d: %w", g, i, err)
			}
			mu.Lock()
			last := map[int32]int64{}
			for fi, r := range res {
				for j, br := range r {
					b := files[fi].Batches[j]
					if br.Err != nil || br.BaseOffset < last[b.Partition] {
						mu.Unlock()
						return fmt.Errorf("committer %d call %d file %d batch %d: %+v after offset %d", g, i, fi, j, br, last[b.Partition])
					}
					last[b.Partition] = br.BaseOffset + int64(b.RecordCount)
					want[b.Partition] += int64(b.RecordCount)
				}
			}
			mu.Unlock()
		}
		return nil
	})
	denseTo(t, s, tp.ID, partitions, want)
}

// testCommitFilesClosed: a call after Close is NotApplied and ErrClosed.
func testCommitFilesClosed(t *testing.T, s metadata.Store) {
	tp := createTopic(t, s, "files-closed", 1)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := s.CommitFiles(ctx(t), []metadata.FileCommit{file(key(), plain(tp.ID, 0, 1)), file(key(), plain(tp.ID, 0, 1))})
	if !errors.Is(err, metadata.ErrClosed) || !metadata.NotApplied(err) {
		t.Errorf("CommitFiles after Close = %v, want ErrClosed", err)
	}
}
