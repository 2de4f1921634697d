package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// findChunk bounds the batches one FindBatches query scans.
const findChunk = 1000

// findSQL reads the partition's state and, when offset is in range, up to
// $4 batches from the one holding offset on (or, when offset fell into a
// gap a keyed compaction left, from the next one), cut where the byte budget $5
// is reached (the first batch always comes), in one snapshot. The partition row comes back even when no
// batch does (batch columns NULL).
const findSQL = `
WITH p AS (
	SELECT log_start_offset, high_watermark FROM partitions WHERE topic_id = $1 AND partition = $2
)
SELECT p.log_start_offset, p.high_watermark,
       w.base_offset, w.last_offset, w.key, w.size, w.byte_offset, w.byte_length,
       w.record_count, w.max_timestamp, w.append_time
  FROM p LEFT JOIN LATERAL (
	SELECT c.*, sum(c.byte_length) OVER (ORDER BY c.base_offset) - c.byte_length AS before
	  FROM (SELECT b.base_offset, b.last_offset, f.key, f.size, b.byte_offset, b.byte_length,
	               b.record_count, b.max_timestamp, b.append_time
	          FROM batches b JOIN files f ON f.id = b.file_id
	         WHERE b.topic_id = $1 AND b.partition = $2
	           AND $3 >= p.log_start_offset AND $3 < p.high_watermark
	           AND b.base_offset < p.high_watermark
	           AND b.last_offset >= $3
	           AND b.base_offset >= coalesce((SELECT max(b2.base_offset) FROM batches b2
	                                  WHERE b2.topic_id = $1 AND b2.partition = $2 AND b2.base_offset <= $3), -1)
	         ORDER BY b.base_offset
	         LIMIT $4) c
  ) w ON w.before < greatest($5::bigint, 1)
 ORDER BY w.base_offset`

// FindBatches returns the batches from the one holding offset on, until
// their lengths reach maxBytes.
func (s *Store) FindBatches(ctx context.Context, topicID int64, partition int32, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, error) {
	state := metadata.PartitionState{Partition: partition}
	var refs []metadata.BatchRef
	budget := maxBytes
	first := true
	for {
		chunk, st, found, err := s.findChunk(ctx, topicID, partition, offset, budget)
		if err != nil {
			return nil, state, err
		}
		if !found {
			return nil, state, s.missingPartition(ctx, topicID, partition)
		}
		if first {
			state = st
			if offset < st.LogStartOffset || offset > st.HighWatermark {
				return nil, state, &metadata.OffsetOutOfRangeError{Offset: offset, LogStartOffset: st.LogStartOffset, HighWatermark: st.HighWatermark}
			}
			first = false
		}
		for _, r := range chunk {
			if r.BaseOffset >= state.HighWatermark {
				return refs, state, nil // committed after the first chunk's snapshot
			}
			r.TopicID, r.Partition = topicID, partition
			refs = append(refs, r)
			budget -= r.ByteLength
		}
		if len(chunk) < findChunk || budget <= 0 {
			return refs, state, nil
		}
		offset = chunk[len(chunk)-1].LastOffset + 1
	}
}

// findChunk runs findSQL. found is false when the partition does not exist.
func (s *Store) findChunk(ctx context.Context, topicID int64, partition int32, offset, budget int64) (refs []metadata.BatchRef, st metadata.PartitionState, found bool, err error) {
	rows, err := s.pool.Query(ctx, findSQL, topicID, partition, offset, findChunk, budget)
	if err != nil {
		return nil, st, false, s.wrap("find batches", err)
	}
	defer rows.Close()
	st.Partition = partition
	for rows.Next() {
		found = true
		var (
			base, last, size, byteOff, byteLen, maxTS, appendTime *int64
			count                                                 *int32
			key                                                   *string
		)
		if err := rows.Scan(&st.LogStartOffset, &st.HighWatermark, &base, &last, &key, &size, &byteOff, &byteLen,
			&count, &maxTS, &appendTime); err != nil {
			return nil, st, false, s.wrap("find batches", err)
		}
		if base == nil {
			continue
		}
		refs = append(refs, metadata.BatchRef{
			BaseOffset: *base, LastOffset: *last, FileKey: *key, FileSize: *size,
			ByteOffset: *byteOff, ByteLength: *byteLen, RecordCount: *count,
			MaxTimestamp: *maxTS, LogAppendTime: *appendTime,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, st, false, s.wrap("find batches", err)
	}
	return refs, st, found, nil
}

// missingPartition tells ErrTopicNotFound from ErrPartitionNotFound.
func (s *Store) missingPartition(ctx context.Context, topicID int64, partition int32) error {
	var live bool
	err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = $1 AND deleted_at IS NULL)", topicID).Scan(&live)
	if err != nil {
		return s.wrap("find topic", err)
	}
	if live {
		return fmt.Errorf("%w: topic %d partition %d", metadata.ErrPartitionNotFound, topicID, partition)
	}
	return fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
}

// partitionState reads one partition's offsets.
func (s *Store) partitionState(ctx context.Context, topicID int64, partition int32) (metadata.PartitionState, error) {
	st := metadata.PartitionState{Partition: partition}
	err := s.pool.QueryRow(ctx, `SELECT log_start_offset, high_watermark FROM partitions
		WHERE topic_id = $1 AND partition = $2`, topicID, partition).Scan(&st.LogStartOffset, &st.HighWatermark)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, s.missingPartition(ctx, topicID, partition)
	}
	if err != nil {
		return st, s.wrap("partition state", err)
	}
	return st, nil
}

// ListOffset resolves spec against the partition.
func (s *Store) ListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	st, err := s.partitionState(ctx, topicID, partition)
	if err != nil {
		return 0, err
	}
	switch spec {
	case metadata.OffsetEarliest:
		return st.LogStartOffset, nil
	case metadata.OffsetLatest:
		return st.HighWatermark, nil
	case metadata.OffsetTimestamp:
		var off int64
		err := s.pool.QueryRow(ctx, `SELECT base_offset FROM batches
			WHERE topic_id = $1 AND partition = $2 AND max_timestamp >= $3
			  AND last_offset >= $4 AND base_offset < $5
			ORDER BY base_offset LIMIT 1`, topicID, partition, ts, st.LogStartOffset, st.HighWatermark).Scan(&off)
		if errors.Is(err, pgx.ErrNoRows) {
			return st.HighWatermark, nil
		}
		if err != nil {
			return 0, s.wrap("list offset", err)
		}
		return max(off, st.LogStartOffset), nil
	case metadata.OffsetMaxTimestamp:
		var off int64
		err := s.pool.QueryRow(ctx, `SELECT base_offset FROM batches
			WHERE topic_id = $1 AND partition = $2 AND last_offset >= $3 AND base_offset < $4
			ORDER BY max_timestamp DESC, base_offset LIMIT 1`, topicID, partition, st.LogStartOffset, st.HighWatermark).Scan(&off)
		if errors.Is(err, pgx.ErrNoRows) {
			return st.HighWatermark, nil
		}
		if err != nil {
			return 0, s.wrap("list offset", err)
		}
		return max(off, st.LogStartOffset), nil
	default:
		return 0, fmt.Errorf("metadata: list offset: unknown offset spec %d", spec)
	}
}

// PartitionStates returns the states of the topic's partitions, ordered by
// partition.
func (s *Store) PartitionStates(ctx context.Context, topicID int64) ([]metadata.PartitionState, error) {
	rows, err := s.pool.Query(ctx, `SELECT partition, log_start_offset, high_watermark FROM partitions
		WHERE topic_id = $1 ORDER BY partition`, topicID)
	if err != nil {
		return nil, s.wrap("partition states", err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.PartitionState, error) {
		var st metadata.PartitionState
		err := row.Scan(&st.Partition, &st.LogStartOffset, &st.HighWatermark)
		return st, err
	})
	if err != nil {
		return nil, s.wrap("partition states", err)
	}
	if len(states) == 0 { // a live topic has at least one partition
		return nil, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
	}
	return states, nil
}

// InitProducer allocates a producer id from the producer_ids sequence.
func (s *Store) InitProducer(ctx context.Context) (int64, int16, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, "SELECT nextval('producer_ids')").Scan(&id); err != nil {
		return 0, 0, s.wrap("init producer", err)
	}
	return id, 0, nil
}
