package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// MergeCandidates returns the live batches of the oldest small files.
func (s *Store) MergeCandidates(ctx context.Context, maxSize int64, minAge time.Duration, maxFiles int) ([]metadata.MergeBatch, error) {
	rows, err := s.pool.Query(ctx, `
		WITH f AS (
			SELECT id, key, size FROM files
			 WHERE state = 'committed' AND size < $1 AND created_at < now() - $2 * interval '1 millisecond'
			 ORDER BY id LIMIT $3)
		SELECT b.topic_id, b.partition, b.base_offset, f.id, f.key, f.size, b.byte_offset, b.byte_length
		  FROM f JOIN batches b ON b.file_id = f.id
		  JOIN partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition
		 WHERE b.last_offset >= p.log_start_offset
		 ORDER BY f.id, b.byte_offset`, maxSize, minAge.Milliseconds(), maxFiles)
	if err != nil {
		return nil, s.wrap("merge candidates", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.MergeBatch, error) {
		var m metadata.MergeBatch
		err := r.Scan(&m.TopicID, &m.Partition, &m.BaseOffset, &m.FileID, &m.FileKey, &m.FileSize, &m.ByteOffset, &m.ByteLength)
		return m, err
	})
	if err != nil {
		return nil, s.wrap("merge candidates", err)
	}
	return out, nil
}

// CommitMerge records the merged file and repoints the batches in one
// transaction.
func (s *Store) CommitMerge(ctx context.Context, m metadata.MergeCommit) (metadata.MergeResult, error) {
	var res metadata.MergeResult
	if m.Key == "" || m.Size <= 0 {
		return res, fmt.Errorf("%w: merge: key %q, size %d", metadata.ErrInvalidCommit, m.Key, m.Size)
	}
	n := len(m.Moves)
	topic, part, base := make([]int64, n), make([]int32, n), make([]int64, n)
	from, fromOff, off := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, mv := range m.Moves {
		topic[i], part[i], base[i], from[i], fromOff[i], off[i] = mv.TopicID, mv.Partition, mv.BaseOffset, mv.FromFileID, mv.FromByteOffset, mv.ByteOffset
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = metadata.MergeResult{}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO files (key, size) VALUES ($1, $2)
			ON CONFLICT (key) DO NOTHING RETURNING id`, m.Key, m.Size).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // committed before
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE batches b SET file_id = $1, byte_offset = u.off
			  FROM unnest($2::bigint[], $3::integer[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
			       AS u(t, q, base, src, src_off, off)
			 WHERE b.topic_id = u.t AND b.partition = u.q AND b.base_offset = u.base
			   AND b.file_id = u.src AND b.byte_offset = u.src_off`,
			id, topic, part, base, from, fromOff, off)
		if err != nil {
			return err
		}
		res.Moved = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, markEmptySQL, append(uniq(from), id))
		res.FilesMarked = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return metadata.MergeResult{}, s.wrap("commit merge", err)
	}
	return res, nil
}

func uniq(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
