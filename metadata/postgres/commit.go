package postgres

import (
	"context"
	"fmt"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

const commitSQL = `SELECT o_base, o_dup, o_err, o_append_time
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
	idempotent := false
	for i, b := range f.Batches {
		topic[i], part[i], byteOff[i], byteLen[i] = b.TopicID, b.Partition, b.ByteOffset, b.ByteLength
		count[i], maxTS[i] = b.RecordCount, b.MaxTimestamp
		pid[i], epoch[i], seq[i] = -1, -1, metadata.NoSequence
		if validate.Idempotent(b) {
			pid[i], epoch[i], seq[i] = b.ProducerID, b.ProducerEpoch, b.BaseSequence
			idempotent = true
		}
	}
	if !idempotent { // NULL arrays: less to send
		pid, epoch, seq = nil, nil, nil
	}
	var (
		base       []*int64
		dup        []*int64
		codes      []int16
		appendTime int64
	)
	err := s.pool.QueryRow(ctx, commitSQL, f.Key, f.Size, topic, part, byteOff, byteLen, count, maxTS,
		pid, epoch, seq, s.opts.NotifyChannel).Scan(&base, &dup, &codes, &appendTime)
	if err != nil {
		return nil, s.commitErr(f.Key, err)
	}
	if len(base) != n || len(codes) != n || (dup != nil && len(dup) != n) {
		return nil, fmt.Errorf("metadata: commit file %s: %d, %d, %d results for %d batches", f.Key, len(base), len(dup), len(codes), n)
	}
	results := make([]metadata.BatchResult, n)
	for i := range results {
		r := &results[i]
		r.BaseOffset, r.LogAppendTime = -1, appendTime
		code := codes[i]
		switch {
		case code < 0 || int(code) >= len(commitErrors):
			return nil, fmt.Errorf("metadata: commit file %s: unknown error code %d", f.Key, code)
		case code != 0:
			r.Err = commitErrors[code]
		case dup != nil && dup[i] != nil:
			r.Duplicate, r.BaseOffset = true, *dup[i]
			if j := -*dup[i] - 1; j >= 0 { // a repeat of batch j of this file
				if j >= int64(i) || base[j] == nil {
					return nil, fmt.Errorf("metadata: commit file %s: batch %d repeats batch %d, not committed before it", f.Key, i, j)
				}
				r.BaseOffset = *base[j]
			}
		case base[i] == nil:
			return nil, fmt.Errorf("metadata: commit file %s: batch %d has neither offset nor error", f.Key, i)
		default:
			r.BaseOffset = *base[i]
		}
	}
	return results, nil
}

func (s *Store) commitErr(key string, err error) error {
	if code, constraint := pgCode(err); code == "23505" && constraint == "files_key_key" {
		return fmt.Errorf("%w: file %s is already committed", metadata.ErrInvalidCommit, key)
	}
	return s.wrap("commit file "+key, err)
}
