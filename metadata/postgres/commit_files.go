package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// lockPartitionsSQL locks the partitions of every file of a CommitFiles
// call in (topic id, partition) order before any file is committed: each
// floe_commit_file_v2 call then finds its partitions locked already, so
// two calls naming the same partitions in other file orders cannot each
// hold one the other waits for. The locking runs above the sort, as in
// floe_commit_file_v2, whatever the plan.
const lockPartitionsSQL = `SELECT count(*) FROM (SELECT p.topic_id
	  FROM partitions p
	 WHERE (p.topic_id, p.partition) IN (SELECT u.t, u.q FROM unnest($1::bigint[], $2::integer[]) AS u(t, q))
	 ORDER BY p.topic_id, p.partition
	   FOR UPDATE) x`

// CommitFiles commits files in one transaction and one round trip. One
// file is CommitFile's one statement; several are a pgx batch (one
// pipeline, one Sync, so one implicit transaction) of the partition lock
// (lockPartitionsSQL) and one floe_commit_file_v2 call per file, in the
// order given. An ERROR from any statement rolls back the
// whole call (ErrNotApplied); the results count only once the batch has
// ended cleanly (the commit happens at its Sync), so a connection lost
// before then is ambiguous even after every row was read.
func (s *Store) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	if err := validate.Commits(files); err != nil {
		return nil, err
	}
	switch len(files) {
	case 0:
		return nil, nil
	case 1: // one statement: CommitFile's
		res, err := s.CommitFile(ctx, files[0])
		if errors.Is(err, metadata.ErrInvalidCommit) { // a replay with another batch count (the file is valid)
			return [][]metadata.BatchResult{validate.RefuseAll(len(files[0].Batches), err)}, nil
		}
		if err != nil {
			return nil, err
		}
		return [][]metadata.BatchResult{res}, nil
	}
	op := validate.CommitsOp(files)
	if s.isClosed() {
		return nil, fmt.Errorf("metadata: %s: %w", op, metadata.ErrClosed)
	}
	var lockTopic []int64
	var lockPart []int32
	seen := map[[2]int64]bool{}
	for _, f := range files {
		for _, b := range f.Batches {
			if k := [2]int64{b.TopicID, int64(b.Partition)}; !seen[k] {
				seen[k] = true
				lockTopic, lockPart = append(lockTopic, b.TopicID), append(lockPart, b.Partition)
			}
		}
	}
	batch := &pgx.Batch{}
	batch.Queue(lockPartitionsSQL, lockTopic, lockPart)
	for _, f := range files {
		batch.Queue(commitSQL, s.commitArgs(f)...)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil { // nothing was sent
		return nil, s.notApplied(op, err)
	}
	defer conn.Release()
	br := conn.SendBatch(ctx, batch)
	rows, err := readCommitRows(br, len(files))
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, s.statementErr(op, err)
	}
	// Past this point every file is committed: errors say so and are
	// never ErrNotApplied.
	out := make([][]metadata.BatchResult, len(files))
	var errs []error
	for i, f := range files {
		results, stored, err := rows[i].results(f)
		s.announce(rows[i].notice, f, results)
		switch {
		case err != nil:
			errs = append(errs, err)
		case stored >= 0:
			results = validate.ReplayMismatch(f.Key, len(f.Batches), stored)
		}
		out[i] = results
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// readCommitRows reads the answers of a CommitFiles batch: the lock
// statement's, then one floe_commit_file_v2 row per file.
func readCommitRows(br pgx.BatchResults, n int) ([]commitRow, error) {
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows := make([]commitRow, n)
	for i := range rows {
		if err := br.QueryRow().Scan(rows[i].dest()...); err != nil {
			return nil, err
		}
	}
	return rows, nil
}
