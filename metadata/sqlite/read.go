package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/floe-broker/floe/metadata"
)

// partitionState reads one partition's offsets inside tx, telling a
// missing topic from a missing partition.
func partitionState(ctx context.Context, tx *sql.Tx, topicID int64, partition int32) (metadata.PartitionState, error) {
	st := metadata.PartitionState{Partition: partition}
	err := tx.QueryRowContext(ctx, "SELECT log_start_offset, high_watermark FROM partitions WHERE topic_id = ? AND partition = ?",
		topicID, partition).Scan(&st.LogStartOffset, &st.HighWatermark)
	if !errors.Is(err, sql.ErrNoRows) {
		return st, err
	}
	var live bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = ? AND deleted_at IS NULL)", topicID).Scan(&live); err != nil {
		return st, err
	}
	if live {
		return st, fmt.Errorf("%w: topic %d partition %d", metadata.ErrPartitionNotFound, topicID, partition)
	}
	return st, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
}

// FindBatches returns the batches from the one holding offset on, until
// their lengths reach maxBytes, read in one snapshot.
func (s *Store) FindBatches(ctx context.Context, topicID int64, partition int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	if err := s.checkOpen(); err != nil {
		return nil, metadata.PartitionState{Partition: partition}, err
	}
	var (
		refs []metadata.BatchRef
		st   metadata.PartitionState
	)
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		if st, err = partitionState(ctx, tx, topicID, partition); err != nil {
			return err
		}
		if offset < st.LogStartOffset || offset > st.HighWatermark {
			return &metadata.OffsetOutOfRangeError{Offset: offset, LogStartOffset: st.LogStartOffset, HighWatermark: st.HighWatermark}
		}
		if offset == st.HighWatermark {
			return nil
		}
		// SQLite steps lazily: rows past the budget are never read.
		rows, err := tx.QueryContext(ctx, `
			SELECT b.base_offset, b.last_offset, f.key, f.size, b.byte_offset, b.byte_length,
			       b.record_count, b.max_timestamp, b.append_time
			  FROM batches b JOIN files f ON f.id = b.file_id
			 WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.base_offset < ?4
			   AND b.last_offset >= ?3
			   AND b.base_offset >= coalesce((SELECT max(b2.base_offset) FROM batches b2
			                          WHERE b2.topic_id = ?1 AND b2.partition = ?2 AND b2.base_offset <= ?3), -1)
			 ORDER BY b.base_offset`, topicID, partition, offset, st.HighWatermark)
		if err != nil {
			return err
		}
		defer rows.Close()
		var total int64
		for rows.Next() && (len(refs) == 0 || total < maxBytes) {
			r := metadata.BatchRef{TopicID: topicID, Partition: partition}
			if err := rows.Scan(&r.BaseOffset, &r.LastOffset, &r.FileKey, &r.FileSize, &r.ByteOffset, &r.ByteLength,
				&r.RecordCount, &r.MaxTimestamp, &r.LogAppendTime); err != nil {
				return err
			}
			refs = append(refs, r)
			total += r.ByteLength
		}
		return rows.Err()
	})
	if err != nil {
		return nil, st, s.wrap("find batches", err)
	}
	return refs, st, nil
}

// ListOffset resolves spec against the partition.
func (s *Store) ListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var off int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		st, err := partitionState(ctx, tx, topicID, partition)
		if err != nil {
			return err
		}
		switch spec {
		case metadata.OffsetEarliest:
			off = st.LogStartOffset
		case metadata.OffsetLatest:
			off = st.HighWatermark
		case metadata.OffsetTimestamp:
			err := tx.QueryRowContext(ctx, `SELECT base_offset FROM batches
				WHERE topic_id = ? AND partition = ? AND max_timestamp >= ? AND last_offset >= ? AND base_offset < ?
				ORDER BY base_offset LIMIT 1`, topicID, partition, ts, st.LogStartOffset, st.HighWatermark).Scan(&off)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				off = st.HighWatermark
			case err != nil:
				return err
			default:
				off = max(off, st.LogStartOffset)
			}
		case metadata.OffsetMaxTimestamp:
			err := tx.QueryRowContext(ctx, `SELECT base_offset FROM batches
				WHERE topic_id = ? AND partition = ? AND last_offset >= ? AND base_offset < ?
				ORDER BY max_timestamp DESC, base_offset LIMIT 1`, topicID, partition, st.LogStartOffset, st.HighWatermark).Scan(&off)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				off = st.HighWatermark
			case err != nil:
				return err
			default:
				off = max(off, st.LogStartOffset)
			}
		default:
			return fmt.Errorf("unknown offset spec %d", spec)
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap("list offset", err)
	}
	return off, nil
}
