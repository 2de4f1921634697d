package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// AlterTopicConfig updates the topic's config under its row lock.
func (s *Store) AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) (metadata.Topic, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return metadata.Topic{}, err
	}
	if err := metadata.CheckConfigChange(set, remove); err != nil {
		return metadata.Topic{}, err
	}
	var t metadata.Topic
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id, name, partitions, config, created_at FROM topics
			WHERE name = $1 AND deleted_at IS NULL FOR UPDATE`, name).Scan(&t.ID, &t.Name, &t.Partitions, &t.Config, &t.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", metadata.ErrTopicNotFound, name)
		}
		if err != nil {
			return err
		}
		old := t.Config
		t.Config = metadata.ApplyConfigChange(t.Config, set, remove)
		if err := metadata.ValidateConfigChange(old, t.Config); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE topics SET config = $2 WHERE id = $1", t.ID, t.Config)
		return err
	})
	if errors.Is(err, metadata.ErrTopicNotFound) || errors.Is(err, metadata.ErrInvalidConfig) {
		return metadata.Topic{}, err
	}
	if err != nil {
		return metadata.Topic{}, s.wrap("alter topic config "+name, err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// DeleteRecords moves the log start offset forward, never past the high
// watermark.
func (s *Store) DeleteRecords(ctx context.Context, topicID int64, partition int32, offset int64) (metadata.PartitionState, error) {
	st := metadata.PartitionState{Partition: partition}
	if offset < metadata.DeleteToHighWatermark {
		return st, fmt.Errorf("%w: %d", metadata.ErrInvalidDeleteOffset, offset)
	}
	err := s.pool.QueryRow(ctx, `UPDATE partitions
		   SET log_start_offset = greatest(log_start_offset, CASE WHEN $3 < 0 THEN high_watermark ELSE $3 END)
		 WHERE topic_id = $1 AND partition = $2 AND $3 <= high_watermark
		RETURNING log_start_offset, high_watermark`, topicID, partition, offset).Scan(&st.LogStartOffset, &st.HighWatermark)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := s.partitionState(ctx, topicID, partition)
		if err != nil {
			return st, err
		}
		return cur, fmt.Errorf("%w: %d is past the high watermark %d (log start %d)",
			metadata.ErrInvalidDeleteOffset, offset, cur.HighWatermark, cur.LogStartOffset)
	}
	if err != nil {
		return st, s.wrap("delete records", err)
	}
	return st, nil
}

// Batches no reader can reach: below their partition's log start offset,
// then those of deleted topics (whose partitions are gone).
const (
	deadBelowStartSQL = `
WITH v AS (
	SELECT d.topic_id, d.partition, d.base_offset
	  FROM partitions p
	  CROSS JOIN LATERAL (
		SELECT b.topic_id, b.partition, b.base_offset FROM batches b
		 WHERE b.topic_id = p.topic_id AND b.partition = p.partition
		   AND b.base_offset < p.log_start_offset AND b.last_offset < p.log_start_offset
		 ORDER BY b.base_offset LIMIT $1) d
	 WHERE p.log_start_offset > 0
	 LIMIT $1
)
DELETE FROM batches b USING v
 WHERE b.topic_id = v.topic_id AND b.partition = v.partition AND b.base_offset = v.base_offset
RETURNING b.file_id`
	deadOfDeletedSQL = `
WITH v AS (
	SELECT d.topic_id, d.partition, d.base_offset
	  FROM topics t
	  CROSS JOIN LATERAL (
		SELECT b.topic_id, b.partition, b.base_offset FROM batches b
		 WHERE b.topic_id = t.id
		 ORDER BY b.topic_id, b.partition, b.base_offset LIMIT $1) d
	 WHERE t.deleted_at IS NOT NULL
	 LIMIT $1
)
DELETE FROM batches b USING v
 WHERE b.topic_id = v.topic_id AND b.partition = v.partition AND b.base_offset = v.base_offset
RETURNING b.file_id`
	markEmptySQL = `
UPDATE files f SET state = 'deleting', marked_for_deletion_at = now()
 WHERE f.id = ANY($1) AND f.state = 'committed'
   AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = f.id)`
)

// CollectDeadBatches removes up to limit unreachable batches and marks
// their files that have none left, in one transaction.
func (s *Store) CollectDeadBatches(ctx context.Context, limit int) (metadata.CollectResult, error) {
	var res metadata.CollectResult
	if limit < 1 {
		return res, fmt.Errorf("metadata: collect dead batches: limit %d, want >= 1", limit)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = metadata.CollectResult{}
		seen := map[int64]bool{}
		var files []int64
		for _, q := range []string{deadBelowStartSQL, deadOfDeletedSQL} {
			if res.Batches >= limit {
				break
			}
			rows, err := tx.Query(ctx, q, limit-res.Batches)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			res.Batches += len(ids)
			for _, id := range ids {
				if !seen[id] {
					seen[id] = true
					files = append(files, id)
				}
			}
		}
		if len(files) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, markEmptySQL, files)
		res.FilesMarked = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return metadata.CollectResult{}, s.wrap("collect dead batches", err)
	}
	return res, nil
}

// MarkEmptyFiles sweeps files by id.
func (s *Store) MarkEmptyFiles(ctx context.Context, afterID int64, limit int, minAge time.Duration) (int, int64, error) {
	if limit < 1 {
		return 0, 0, fmt.Errorf("metadata: mark empty files: limit %d, want >= 1", limit)
	}
	var marked, scanned int
	var last *int64
	err := s.pool.QueryRow(ctx, `
		WITH c AS (SELECT id, created_at FROM files WHERE id > $1 ORDER BY id LIMIT $2),
		m AS (
			UPDATE files f SET state = 'deleting', marked_for_deletion_at = now()
			  FROM c
			 WHERE f.id = c.id AND f.state = 'committed' AND c.created_at < now() - $3 * interval '1 millisecond'
			   AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = f.id)
			RETURNING f.id)
		SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM c), (SELECT max(id) FROM c)`,
		afterID, limit, minAge.Milliseconds()).Scan(&marked, &scanned, &last)
	if err != nil {
		return 0, 0, s.wrap("mark empty files", err)
	}
	if scanned < limit || last == nil {
		return marked, 0, nil
	}
	return marked, *last, nil
}

// DeletableFiles lists files marked at least grace ago.
func (s *Store) DeletableFiles(ctx context.Context, grace time.Duration, limit int) ([]metadata.DeadFile, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, key, size, marked_for_deletion_at FROM files
		WHERE state = 'deleting' AND marked_for_deletion_at <= now() - $1 * interval '1 millisecond'
		ORDER BY marked_for_deletion_at, id LIMIT $2`, grace.Milliseconds(), limit)
	if err != nil {
		return nil, s.wrap("deletable files", err)
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.DeadFile, error) {
		var f metadata.DeadFile
		err := r.Scan(&f.ID, &f.Key, &f.Size, &f.MarkedAt)
		f.MarkedAt = f.MarkedAt.UTC()
		return f, err
	})
	if err != nil {
		return nil, s.wrap("deletable files", err)
	}
	return files, nil
}

// ForgetFiles removes rows of files marked 'deleting' that no batch
// references.
func (s *Store) ForgetFiles(ctx context.Context, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM files f WHERE f.id = ANY($1) AND f.state = 'deleting'
		AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = f.id)`, ids)
	if err != nil {
		return 0, s.wrap("forget files", err)
	}
	return int(tag.RowsAffected()), nil
}

// UnknownKeys returns the keys no file row has.
func (s *Store) UnknownKeys(ctx context.Context, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT k FROM unnest($1::text[]) AS u(k)
		WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.key = u.k) ORDER BY k`, keys)
	if err != nil {
		return nil, s.wrap("unknown keys", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap("unknown keys", err)
	}
	return out, nil
}

// Now returns PostgreSQL's now().
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, "SELECT now()").Scan(&t); err != nil {
		return t, s.wrap("now", err)
	}
	return t.UTC(), nil
}

// AcquireLease takes the job's lease when it is free or expired, or renews
// owner's.
func (s *Store) AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error) {
	if job == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("metadata: acquire lease: job %q, owner %q, ttl %v: want non-empty names and a positive ttl", job, owner, ttl)
	}
	rows, err := s.pool.Query(ctx, `
		INSERT INTO compactor_leases AS l (job, owner, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
		ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		 WHERE l.owner = excluded.owner OR l.expires_at < now()
		RETURNING owner`, job, owner, ttl.Milliseconds())
	if err != nil {
		return false, s.wrap("acquire lease", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, s.wrap("acquire lease", err)
	}
	return len(got) == 1, nil
}

// ReleaseLease expires owner's lease, keeping the job's cursor.
func (s *Store) ReleaseLease(ctx context.Context, job, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE compactor_leases SET expires_at = now() - interval '1 millisecond'
		WHERE job = $1 AND owner = $2`, job, owner)
	if err != nil {
		return s.wrap("release lease", err)
	}
	return nil
}

// JobCursor reads the job's saved cursor.
func (s *Store) JobCursor(ctx context.Context, job string) (string, error) {
	var c string
	err := s.pool.QueryRow(ctx, "SELECT cursor FROM compactor_leases WHERE job = $1", job).Scan(&c)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.wrap("job cursor", err)
	}
	return c, nil
}

// SetJobCursor saves the cursor while owner holds the lease.
func (s *Store) SetJobCursor(ctx context.Context, job, owner, cursor string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE compactor_leases SET cursor = $3
		WHERE job = $1 AND owner = $2 AND expires_at > now()`, job, owner, cursor)
	if err != nil {
		return false, s.wrap("set job cursor", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TopicStorage sums the topic's batches and the files holding them.
func (s *Store) TopicStorage(ctx context.Context, topicID int64) (metadata.TopicStorage, error) {
	var (
		st   metadata.TopicStorage
		live bool
	)
	err := s.pool.QueryRow(ctx, `
		WITH b AS (
			SELECT b.file_id, b.byte_length, b.last_offset < coalesce(p.log_start_offset, 9223372036854775807) AS dead
			  FROM batches b LEFT JOIN partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition
			 WHERE b.topic_id = $1)
		SELECT EXISTS (SELECT 1 FROM topics WHERE id = $1 AND deleted_at IS NULL),
		       (SELECT count(*) FROM b),
		       (SELECT coalesce(sum(byte_length) FILTER (WHERE NOT dead), 0) FROM b),
		       (SELECT coalesce(sum(byte_length) FILTER (WHERE dead), 0) FROM b),
		       (SELECT count(*) FROM files f WHERE f.id IN (SELECT file_id FROM b)),
		       (SELECT coalesce(sum(f.size), 0) FROM files f WHERE f.id IN (SELECT file_id FROM b))`,
		topicID).Scan(&live, &st.Batches, &st.LiveBytes, &st.DeadBytes, &st.Files, &st.FileBytes)
	if err != nil {
		return st, s.wrap("topic storage", err)
	}
	if !live {
		return metadata.TopicStorage{}, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
	}
	return st, nil
}

// DeletionQueue sums the files marked 'deleting'.
func (s *Store) DeletionQueue(ctx context.Context) (metadata.DeletionQueue, error) {
	var (
		q      metadata.DeletionQueue
		oldest *time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(size), 0), min(marked_for_deletion_at)
		FROM files WHERE state = 'deleting'`).Scan(&q.Files, &q.Bytes, &oldest)
	if err != nil {
		return q, s.wrap("deletion queue", err)
	}
	if oldest != nil {
		q.Oldest = oldest.UTC()
	}
	return q, nil
}
