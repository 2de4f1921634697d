package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// CommitFiles commits files in one write transaction, in the order given:
// each file is sequenced as CommitFile does, seeing the files before it.
// SQLite has one writer, so the lock order question does not arise. A key
// committed earlier with another number of batches gets ErrInvalidCommit in
// each of its results and writes nothing; the other files commit.
//
// Errors: as CommitFile's, for the whole call.
func (s *Store) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	if err := validate.Commits(files); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, nil
	}
	op := validate.CommitsOp(files)
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("metadata: %s: %w", op, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.notApplied(op, ctxErr(ctx, err))
	}
	out := make([][]metadata.BatchResult, len(files))
	touched := make([]map[partKey]*partState, 0, len(files))
	for i, f := range files {
		results, parts, err := commitTx(ctx, tx, f)
		if errors.Is(err, metadata.ErrInvalidCommit) { // a replay with another batch count
			results, err = validate.RefuseAll(len(f.Batches), fmt.Errorf("metadata: commit file %s: %w", f.Key, err)), nil
		}
		if err != nil {
			_ = tx.Rollback()
			return nil, s.notApplied(op, ctxErr(ctx, err))
		}
		out[i] = results
		touched = append(touched, parts)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("metadata: %s: outcome unknown: %w", op, ctxErr(ctx, err))
	}
	s.publish(touched...)
	return out, nil
}
