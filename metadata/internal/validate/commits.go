package validate

import (
	"fmt"

	"github.com/floe-broker/floe/metadata"
)

// Commits checks the files of one CommitFiles call: at most
// metadata.MaxCommitFiles, each a valid commit, with distinct keys.
func Commits(files []metadata.FileCommit) error {
	if len(files) > metadata.MaxCommitFiles {
		return fmt.Errorf("%w: %d files in one commit, limit %d", metadata.ErrInvalidCommit, len(files), metadata.MaxCommitFiles)
	}
	seen := make(map[string]int, len(files))
	for i, f := range files {
		if err := Commit(f); err != nil {
			return fmt.Errorf("file %d of %d: %w", i, len(files), err)
		}
		if j, ok := seen[f.Key]; ok {
			return fmt.Errorf("%w: files %d and %d have the same key %s", metadata.ErrInvalidCommit, j, i, f.Key)
		}
		seen[f.Key] = i
	}
	return nil
}

// CommitsOp names a CommitFiles call of files (at least one) in errors.
func CommitsOp(files []metadata.FileCommit) string {
	return fmt.Sprintf("commit %d files (first %s)", len(files), files[0].Key)
}

// ReplayMismatch is the results of a file of n batches whose key was
// committed earlier with another number of batches (stored): a caller's
// mistake, each batch refused with ErrInvalidCommit, nothing written.
func ReplayMismatch(key string, n, stored int) []metadata.BatchResult {
	return RefuseAll(n, fmt.Errorf("%w: file %s was committed with %d batches, not %d", metadata.ErrInvalidCommit, key, stored, n))
}

// RefuseAll is the results of a file of n batches each refused with err.
func RefuseAll(n int, err error) []metadata.BatchResult {
	res := make([]metadata.BatchResult, n)
	for i := range res {
		res[i] = metadata.BatchResult{BaseOffset: -1, Err: err}
	}
	return res
}
