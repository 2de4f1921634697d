package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// retentionScan bounds the batches one time-retention query reads.
const retentionScan = 10000

// AlterTopicConfig updates the topic's config.
func (s *Store) AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) (metadata.Topic, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return metadata.Topic{}, err
	}
	if err := metadata.CheckConfigChange(set, remove); err != nil {
		return metadata.Topic{}, err
	}
	if err := s.checkOpen(); err != nil {
		return metadata.Topic{}, err
	}
	var t metadata.Topic
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = scanTopic(tx.QueryRowContext(ctx, `SELECT id, name, partitions, config, created_at FROM topics
			WHERE name = ? AND deleted_at IS NULL`, name))
		if errors.Is(err, sql.ErrNoRows) {
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
		cfg, err := json.Marshal(t.Config)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE topics SET config = ? WHERE id = ?", string(cfg), t.ID)
		return err
	})
	if err != nil {
		return metadata.Topic{}, s.wrap("alter topic config "+name, err)
	}
	return t, nil
}

// DeleteRecords moves the log start offset forward, never past the high
// watermark.
func (s *Store) DeleteRecords(ctx context.Context, topicID int64, partition int32, offset int64) (metadata.PartitionState, error) {
	st := metadata.PartitionState{Partition: partition}
	if offset < metadata.DeleteToHighWatermark {
		return st, fmt.Errorf("%w: %d", metadata.ErrInvalidDeleteOffset, offset)
	}
	if err := s.checkOpen(); err != nil {
		return st, err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		cur, err := partitionState(ctx, tx, topicID, partition)
		if err != nil {
			return err
		}
		st = cur
		if offset > cur.HighWatermark {
			return fmt.Errorf("%w: %d is past the high watermark %d (log start %d)",
				metadata.ErrInvalidDeleteOffset, offset, cur.HighWatermark, cur.LogStartOffset)
		}
		target := offset
		if offset == metadata.DeleteToHighWatermark {
			target = cur.HighWatermark
		}
		if target <= cur.LogStartOffset {
			return nil
		}
		st.LogStartOffset = target
		_, err = tx.ExecContext(ctx, "UPDATE partitions SET log_start_offset = ? WHERE topic_id = ? AND partition = ?",
			target, topicID, partition)
		return err
	})
	if err != nil {
		return st, s.wrap("delete records", err)
	}
	return st, nil
}

const (
	retentionTimeSQL = `
SELECT min(x.base_offset) FILTER (WHERE x.append_time >= ?5), max(x.last_offset), count(*)
  FROM (SELECT b.base_offset, b.last_offset, b.append_time FROM batches b
         WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.last_offset >= ?3 AND b.base_offset < ?4
           AND b.base_offset >= coalesce((SELECT max(b2.base_offset) FROM batches b2
                                           WHERE b2.topic_id = ?1 AND b2.partition = ?2 AND b2.base_offset <= ?3), 0)
         ORDER BY b.base_offset
         LIMIT ?6) x`
	retentionBytesSQL = `
SELECT x.last_offset + 1
  FROM (SELECT b.last_offset, sum(b.byte_length) OVER (ORDER BY b.base_offset DESC) AS s
          FROM batches b
         WHERE b.topic_id = ?1 AND b.partition = ?2 AND b.last_offset >= ?3 AND b.base_offset < ?4) x
 WHERE x.s > ?5
 LIMIT 1`
)

// ApplyRetention advances each partition's log start offset in its own
// transaction.
func (s *Store) ApplyRetention(ctx context.Context, topicID int64, r metadata.Retention) ([]metadata.PartitionState, error) {
	states, err := s.PartitionStates(ctx, topicID)
	if err != nil {
		return nil, err
	}
	var moved []metadata.PartitionState
	for _, p := range states {
		if p.LogStartOffset >= p.HighWatermark {
			// Nothing to trim (as the PostgreSQL store skips it): an idle
			// partition costs no write transaction (10 idle topics of
			// 100,000 partitions kept floe dev's compactor busy).
			continue
		}
		var ns metadata.PartitionState
		advanced := false
		err := s.write(ctx, func(tx *sql.Tx) error {
			st, err := partitionState(ctx, tx, topicID, p.Partition)
			if err != nil || st.LogStartOffset >= st.HighWatermark {
				return err
			}
			target := st.LogStartOffset
			if r.Ms >= 0 {
				var (
					first, last sql.NullInt64
					n           int64
				)
				if err := tx.QueryRowContext(ctx, retentionTimeSQL, topicID, p.Partition, st.LogStartOffset, st.HighWatermark,
					time.Now().UnixMilli()-r.Ms, retentionScan).Scan(&first, &last, &n); err != nil {
					return err
				}
				target = max(target, metadata.TimeRetentionCursor(nullPtr(first), nullPtr(last), n, retentionScan, st.HighWatermark))
			}
			if r.Bytes >= 0 {
				var cut int64
				err := tx.QueryRowContext(ctx, retentionBytesSQL, topicID, p.Partition, st.LogStartOffset, st.HighWatermark, r.Bytes).Scan(&cut)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				target = max(target, cut)
			}
			target = metadata.HoldLogStart(min(target, st.HighWatermark), st.Partition, r.Hold)
			if target <= st.LogStartOffset {
				return nil
			}
			ns, advanced = metadata.PartitionState{Partition: p.Partition, LogStartOffset: target, HighWatermark: st.HighWatermark}, true
			_, err = tx.ExecContext(ctx, "UPDATE partitions SET log_start_offset = ? WHERE topic_id = ? AND partition = ?",
				target, topicID, p.Partition)
			return err
		})
		if errors.Is(err, metadata.ErrTopicNotFound) || errors.Is(err, metadata.ErrPartitionNotFound) {
			return moved, nil // deleted meanwhile
		}
		if err != nil {
			return moved, s.wrap("apply retention", err)
		}
		if advanced {
			moved = append(moved, ns)
		}
	}
	return moved, nil
}

func nullPtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// CollectDeadBatches removes up to limit unreachable batches and marks
// their files that have none left, in one transaction.
func (s *Store) CollectDeadBatches(ctx context.Context, limit int) (metadata.CollectResult, error) {
	var res metadata.CollectResult
	if limit < 1 {
		return res, fmt.Errorf("metadata: collect dead batches: limit %d, want >= 1", limit)
	}
	if err := s.checkOpen(); err != nil {
		return res, err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res = metadata.CollectResult{}
		files := map[int64]bool{}
		for _, q := range []string{
			`SELECT b.topic_id, b.partition, b.base_offset, b.file_id FROM partitions p
			   JOIN batches b ON b.topic_id = p.topic_id AND b.partition = p.partition
			  WHERE p.log_start_offset > 0 AND b.base_offset < p.log_start_offset AND b.last_offset < p.log_start_offset
			  LIMIT ?`,
			`SELECT b.topic_id, b.partition, b.base_offset, b.file_id FROM topics t
			   JOIN batches b ON b.topic_id = t.id
			  WHERE t.deleted_at IS NOT NULL
			  LIMIT ?`,
		} {
			if res.Batches >= limit {
				break
			}
			type victim struct {
				t, base, file int64
				p             int32
			}
			rows, err := tx.QueryContext(ctx, q, limit-res.Batches)
			if err != nil {
				return err
			}
			var vs []victim
			for rows.Next() {
				var v victim
				if err := rows.Scan(&v.t, &v.p, &v.base, &v.file); err != nil {
					rows.Close()
					return err
				}
				vs = append(vs, v)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, v := range vs {
				if _, err := tx.ExecContext(ctx, "DELETE FROM batches WHERE topic_id = ? AND partition = ? AND base_offset = ?",
					v.t, v.p, v.base); err != nil {
					return err
				}
				files[v.file] = true
			}
			res.Batches += len(vs)
		}
		now := time.Now().UnixMilli()
		for id := range files {
			r, err := tx.ExecContext(ctx, `UPDATE files SET state = 'deleting', marked_for_deletion_at = ?
				WHERE id = ? AND state = 'committed' AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = files.id)`, now, id)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			res.FilesMarked += int(n)
		}
		return nil
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
	if err := s.checkOpen(); err != nil {
		return 0, 0, err
	}
	var (
		marked, scanned int
		last            sql.NullInt64
	)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, "SELECT count(*), max(id) FROM (SELECT id FROM files WHERE id > ? ORDER BY id LIMIT ?)",
			afterID, limit).Scan(&scanned, &last); err != nil {
			return err
		}
		if !last.Valid {
			return nil
		}
		now := time.Now().UnixMilli()
		r, err := tx.ExecContext(ctx, `UPDATE files SET state = 'deleting', marked_for_deletion_at = ?
			WHERE id > ? AND id <= ? AND state = 'committed' AND created_at < ?
			  AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = files.id)`,
			now, afterID, last.Int64, now-minAge.Milliseconds())
		if err != nil {
			return err
		}
		n, _ := r.RowsAffected()
		marked = int(n)
		return nil
	})
	if err != nil {
		return 0, 0, s.wrap("mark empty files", err)
	}
	if scanned < limit || !last.Valid {
		return marked, 0, nil
	}
	return marked, last.Int64, nil
}

// DeletableFiles lists files marked at least grace ago.
func (s *Store) DeletableFiles(ctx context.Context, grace time.Duration, limit int) ([]metadata.DeadFile, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var files []metadata.DeadFile
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, key, size, marked_for_deletion_at FROM files
			WHERE state = 'deleting' AND marked_for_deletion_at <= ? ORDER BY marked_for_deletion_at, id LIMIT ?`,
			time.Now().UnixMilli()-grace.Milliseconds(), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				f  metadata.DeadFile
				ms int64
			)
			if err := rows.Scan(&f.ID, &f.Key, &f.Size, &ms); err != nil {
				return err
			}
			f.MarkedAt = time.UnixMilli(ms).UTC()
			files = append(files, f)
		}
		return rows.Err()
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
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	n := 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			r, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id = ? AND state = 'deleting'
				AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.file_id = files.id)`, id)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			n += int(k)
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap("forget files", err)
	}
	return n, nil
}

// UnknownKeys returns the keys no file row has.
func (s *Store) UnknownKeys(ctx context.Context, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []string
	err := s.read(ctx, func(tx *sql.Tx) error {
		known := map[string]bool{}
		for start := 0; start < len(keys); start += 500 {
			part := keys[start:min(start+500, len(keys))]
			args := make([]any, len(part))
			for i, k := range part {
				args[i] = k
			}
			rows, err := tx.QueryContext(ctx, "SELECT key FROM files WHERE key IN (?"+strings.Repeat(",?", len(part)-1)+")", args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					rows.Close()
					return err
				}
				known[k] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, k := range keys {
			if !known[k] {
				out = append(out, k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("unknown keys", err)
	}
	return out, nil
}

// Now is Go's clock: SQLite's store runs in one process.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := s.checkOpen(); err != nil {
		return time.Time{}, err
	}
	return time.Now().UTC(), nil
}

// AcquireLease takes the job's lease when it is free or expired, or renews
// owner's. (One process uses a SQLite store, so leases are trivially held;
// they behave as on PostgreSQL all the same.)
func (s *Store) AcquireLease(ctx context.Context, job, owner string, ttl time.Duration) (bool, error) {
	if job == "" || owner == "" || ttl <= 0 {
		return false, fmt.Errorf("metadata: acquire lease: job %q, owner %q, ttl %v: want non-empty names and a positive ttl", job, owner, ttl)
	}
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	var got bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		r, err := tx.ExecContext(ctx, `INSERT INTO compactor_leases (job, owner, expires_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (job) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			 WHERE compactor_leases.owner = excluded.owner OR compactor_leases.expires_at < ?4`,
			job, owner, now+ttl.Milliseconds(), now)
		if err != nil {
			return err
		}
		n, _ := r.RowsAffected()
		got = n == 1
		return nil
	})
	if err != nil {
		return false, s.wrap("acquire lease", err)
	}
	return got, nil
}

// ReleaseLease expires owner's lease, keeping the job's cursor.
func (s *Store) ReleaseLease(ctx context.Context, job, owner string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE compactor_leases SET expires_at = ? WHERE job = ? AND owner = ?",
			time.Now().UnixMilli()-1, job, owner)
		return err
	})
	return s.wrap("release lease", err)
}

// JobCursor reads the job's saved cursor.
func (s *Store) JobCursor(ctx context.Context, job string) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	var c string
	err := s.read(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "SELECT cursor FROM compactor_leases WHERE job = ?", job).Scan(&c)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", s.wrap("job cursor", err)
	}
	return c, nil
}

// SetJobCursor saves the cursor while owner holds the lease.
func (s *Store) SetJobCursor(ctx context.Context, job, owner, cursor string) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	var ok bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, "UPDATE compactor_leases SET cursor = ? WHERE job = ? AND owner = ? AND expires_at > ?",
			cursor, job, owner, time.Now().UnixMilli())
		if err != nil {
			return err
		}
		n, _ := r.RowsAffected()
		ok = n == 1
		return nil
	})
	if err != nil {
		return false, s.wrap("set job cursor", err)
	}
	return ok, nil
}

// TopicStorage sums the topic's batches and the files holding them.
func (s *Store) TopicStorage(ctx context.Context, topicID int64) (metadata.TopicStorage, error) {
	if err := s.checkOpen(); err != nil {
		return metadata.TopicStorage{}, err
	}
	var st metadata.TopicStorage
	err := s.read(ctx, func(tx *sql.Tx) error {
		var live bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = ? AND deleted_at IS NULL)", topicID).Scan(&live); err != nil {
			return err
		}
		if !live {
			return fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*),
				coalesce(sum(CASE WHEN b.last_offset >= p.log_start_offset THEN b.byte_length END), 0),
				coalesce(sum(CASE WHEN b.last_offset < p.log_start_offset OR p.log_start_offset IS NULL THEN b.byte_length END), 0)
			  FROM batches b LEFT JOIN partitions p ON p.topic_id = b.topic_id AND p.partition = b.partition
			 WHERE b.topic_id = ?`, topicID).Scan(&st.Batches, &st.LiveBytes, &st.DeadBytes); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM files
			WHERE id IN (SELECT file_id FROM batches WHERE topic_id = ?)`, topicID).Scan(&st.Files, &st.FileBytes)
	})
	if err != nil {
		return metadata.TopicStorage{}, s.wrap("topic storage", err)
	}
	return st, nil
}

// DeletionQueue sums the files marked 'deleting'.
func (s *Store) DeletionQueue(ctx context.Context) (metadata.DeletionQueue, error) {
	if err := s.checkOpen(); err != nil {
		return metadata.DeletionQueue{}, err
	}
	var (
		q      metadata.DeletionQueue
		oldest sql.NullInt64
	)
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0), min(marked_for_deletion_at)
			FROM files WHERE state = 'deleting'`).Scan(&q.Files, &q.Bytes, &oldest)
	})
	if err != nil {
		return q, s.wrap("deletion queue", err)
	}
	if oldest.Valid {
		q.Oldest = time.UnixMilli(oldest.Int64).UTC()
	}
	return q, nil
}
