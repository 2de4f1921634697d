package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// MergeCandidates returns the live batches of the oldest small files.
func (s *Store) MergeCandidates(ctx context.Context, maxSize int64, minAge time.Duration, maxFiles int) ([]metadata.MergeBatch, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []metadata.MergeBatch
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `
			WITH f AS (
				SELECT id, key, size FROM files
				 WHERE state = 'committed' AND size < ? AND created_at < ?
				 ORDER BY id LIMIT ?)
			SELECT b.topic_id, b.partition, b.base_offset, f.id, f.key, f.size, b.byte_offset, b.byte_length
			  FROM f JOIN batches b ON b.file_id = f.id
			  JOIN partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition
			 WHERE b.last_offset >= p.log_start_offset
			 ORDER BY f.id, b.byte_offset`, maxSize, time.Now().UnixMilli()-minAge.Milliseconds(), maxFiles)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m metadata.MergeBatch
			if err := rows.Scan(&m.TopicID, &m.Partition, &m.BaseOffset, &m.FileID, &m.FileKey, &m.FileSize, &m.ByteOffset, &m.ByteLength); err != nil {
				return err
			}
			out = append(out, m)
		}
		return rows.Err()
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
	if err := s.checkOpen(); err != nil {
		return res, err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res = metadata.MergeResult{}
		now := time.Now().UnixMilli()
		var id int64
		err := tx.QueryRowContext(ctx, `INSERT INTO files (key, size, created_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING RETURNING id`, m.Key, m.Size, now).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // committed before
		}
		if err != nil {
			return err
		}
		files := map[int64]bool{id: true}
		for _, mv := range m.Moves {
			r, err := tx.ExecContext(ctx, `UPDATE batches SET file_id = ?, byte_offset = ?
				WHERE topic_id = ? AND partition = ? AND base_offset = ? AND file_id = ? AND byte_offset = ?`,
				id, mv.ByteOffset, mv.TopicID, mv.Partition, mv.BaseOffset, mv.FromFileID, mv.FromByteOffset)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			res.Moved += int(k)
			files[mv.FromFileID] = true
		}
		for f := range files {
			r, err := tx.ExecContext(ctx, `UPDATE files SET state = 'deleting', marked_for_deletion_at = ?
				WHERE id = ? AND state = 'committed' AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = files.id)`, now, f)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			res.FilesMarked += int(k)
		}
		return nil
	})
	if err != nil {
		return metadata.MergeResult{}, s.wrap("commit merge", err)
	}
	return res, nil
}
