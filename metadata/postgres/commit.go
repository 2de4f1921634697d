package postgres

import (
	"context"
	"fmt"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

const commitSQL = `SELECT base_offset, append_time, duplicate, error_code
	FROM floe_commit_file($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// Error codes of floe_commit_file.
var commitErrors = [...]error{
	0: nil,
	1: metadata.ErrTopicNotFound,
	2: metadata.ErrPartitionNotFound,
	3: metadata.ErrOutOfOrderSequence,
	4: metadata.ErrProducerFenced,
}

// CommitFile records f and sequences its batches with one call of
// floe_commit_file: one round trip, one implicit transaction.
func (s *Store) CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error) {
	if err := validate.Commit(f); err != nil {
		return nil, err
	}
	n := len(f.Batches)
	var (
		topic   = make([]int64, n)
		part    = make([]int32, n)
		byteOff = make([]int64, n)
		byteLen = make([]int64, n)
		count   = make([]int32, n)
		maxTS   = make([]int64, n)
		pid     = make([]int64, n)
		epoch   = make([]int16, n)
		seq     = make([]int32, n)
	)
	for i, b := range f.Batches {
		topic[i], part[i], byteOff[i], byteLen[i] = b.TopicID, b.Partition, b.ByteOffset, b.ByteLength
		count[i], maxTS[i] = b.RecordCount, b.MaxTimestamp
		pid[i], epoch[i], seq[i] = -1, -1, metadata.NoSequence
		if validate.Idempotent(b) {
			pid[i], epoch[i], seq[i] = b.ProducerID, b.ProducerEpoch, b.BaseSequence
		}
	}
	rows, err := s.pool.Query(ctx, commitSQL, f.Key, f.Size, topic, part, byteOff, byteLen, count, maxTS,
		pid, epoch, seq, s.opts.NotifyChannel)
	if err != nil {
		return nil, s.commitErr(f.Key, err)
	}
	defer rows.Close()
	results := make([]metadata.BatchResult, 0, n)
	for rows.Next() {
		var (
			r    metadata.BatchResult
			code int16
		)
		if err := rows.Scan(&r.BaseOffset, &r.LogAppendTime, &r.Duplicate, &code); err != nil {
			return nil, s.commitErr(f.Key, err)
		}
		if code < 0 || int(code) >= len(commitErrors) {
			return nil, fmt.Errorf("metadata: commit file %s: unknown error code %d", f.Key, code)
		}
		if code != 0 {
			r.BaseOffset, r.Err = -1, commitErrors[code]
		}
		results = append(results, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.commitErr(f.Key, err)
	}
	if len(results) != n {
		return nil, fmt.Errorf("metadata: commit file %s: %d results for %d batches", f.Key, len(results), n)
	}
	return results, nil
}

func (s *Store) commitErr(key string, err error) error {
	if code, constraint := pgCode(err); code == "23505" && constraint == "files_key_key" {
		return fmt.Errorf("%w: file %s is already committed", metadata.ErrInvalidCommit, key)
	}
	return s.wrap("commit file "+key, err)
}
