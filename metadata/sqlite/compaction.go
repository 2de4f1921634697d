package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// compactSectionRows bounds the batches one CompactionSection lists.
const compactSectionRows = 10000

// CompactionSection lists the partition's live batches below its cleaning
// point, in one snapshot.
func (s *Store) CompactionSection(ctx context.Context, topicID int64, partition int32, minLag time.Duration, maxBytes int64) (metadata.CompactSection, error) {
	if err := s.checkOpen(); err != nil {
		return metadata.CompactSection{}, err
	}
	var sec metadata.CompactSection
	err := s.read(ctx, func(tx *sql.Tx) error {
		st, err := partitionState(ctx, tx, topicID, partition)
		if err != nil {
			return err
		}
		sec = metadata.CompactSection{State: st, Now: time.Now().UTC()}
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT max(base_offset) FROM batches
			WHERE topic_id = ? AND partition = ? AND base_offset < ?`, topicID, partition, st.HighWatermark).Scan(&last); err != nil {
			return err
		}
		if !last.Valid || last.Int64 <= st.LogStartOffset {
			sec.CleaningPoint = st.LogStartOffset
			return nil
		}
		sec.CleaningPoint = last.Int64 // the active tail is never compacted
		rows, err := tx.QueryContext(ctx, `
			SELECT b.base_offset, b.last_offset, b.record_count, f.id, f.key, f.size, b.byte_offset, b.byte_length, b.append_time
			  FROM batches b JOIN files f ON f.id = b.file_id
			 WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.base_offset < ?4 AND b.last_offset >= ?3
			   AND b.base_offset >= coalesce((SELECT max(b2.base_offset) FROM batches b2
			                                   WHERE b2.topic_id = ?1 AND b2.partition = ?2 AND b2.base_offset <= ?3), -1)
			 ORDER BY b.base_offset LIMIT ?5`, topicID, partition, st.LogStartOffset, last.Int64, compactSectionRows)
		if err != nil {
			return err
		}
		defer rows.Close()
		var all []metadata.CompactBatch
		for rows.Next() {
			var b metadata.CompactBatch
			if err := rows.Scan(&b.BaseOffset, &b.LastOffset, &b.RecordCount, &b.FileID, &b.FileKey, &b.FileSize, &b.ByteOffset, &b.ByteLength, &b.AppendTime); err != nil {
				return err
			}
			all = append(all, b)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		metadata.CutSection(&sec, all, len(all) >= compactSectionRows, minLag, maxBytes)
		return nil
	})
	if err != nil {
		return metadata.CompactSection{}, s.wrap("compaction section", err)
	}
	return sec, nil
}

// CommitCompaction records the new file and replaces the rewritten rows
// that are still as they were read, in one transaction.
func (s *Store) CommitCompaction(ctx context.Context, c metadata.CompactionCommit) (metadata.CompactionResult, error) {
	var res metadata.CompactionResult
	if err := c.Check(); err != nil {
		return res, err
	}
	if err := s.checkOpen(); err != nil {
		return res, err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res = metadata.CompactionResult{}
		now := time.Now().UnixMilli()
		var id int64
		files := map[int64]bool{}
		if c.Key != "" {
			err := tx.QueryRowContext(ctx, `INSERT INTO files (key, size, created_at) VALUES (?, ?, ?)
				ON CONFLICT (key) DO NOTHING RETURNING id`, c.Key, c.Size, now).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // committed before
			}
			if err != nil {
				return err
			}
			files[id] = true
		}
		for _, rw := range c.Rewrites {
			files[rw.FromFileID] = true
			var at int64
			err := tx.QueryRowContext(ctx, `DELETE FROM batches
				WHERE topic_id = ? AND partition = ? AND base_offset = ? AND last_offset = ? AND file_id = ? AND byte_offset = ?
				RETURNING append_time`, rw.TopicID, rw.Partition, rw.BaseOffset, rw.LastOffset, rw.FromFileID, rw.FromByteOffset).Scan(&at)
			if errors.Is(err, sql.ErrNoRows) {
				continue // gone or moved meanwhile
			}
			if err != nil {
				return err
			}
			res.Replaced++
			for _, b := range rw.Into {
				if _, err := tx.ExecContext(ctx, `INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
					    byte_offset, byte_length, record_count, max_timestamp, append_time)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rw.TopicID, rw.Partition, b.BaseOffset, b.LastOffset, id,
					b.ByteOffset, b.ByteLength, b.RecordCount, b.MaxTimestamp, at); err != nil {
					return err
				}
				res.Rows++
			}
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
		return metadata.CompactionResult{}, s.wrap("commit compaction", err)
	}
	return res, nil
}
