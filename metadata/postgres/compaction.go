package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// compactSectionRows bounds the batches one CompactionSection lists.
const compactSectionRows = 10000

// CompactionSection lists the partition's live batches below its cleaning
// point, in one snapshot.
func (s *Store) CompactionSection(ctx context.Context, topicID int64, partition int32, minLag time.Duration, maxBytes int64) (metadata.CompactSection, error) {
	var sec metadata.CompactSection
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		sec = metadata.CompactSection{State: metadata.PartitionState{Partition: partition}}
		var last *int64
		err := tx.QueryRow(ctx, `
			SELECT p.log_start_offset, p.high_watermark, now(),
			       (SELECT max(b.base_offset) FROM batches b
			         WHERE b.topic_id = $1 AND b.partition = $2 AND b.base_offset < p.high_watermark)
			  FROM partitions p WHERE p.topic_id = $1 AND p.partition = $2`, topicID, partition).
			Scan(&sec.State.LogStartOffset, &sec.State.HighWatermark, &sec.Now, &last)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.missingPartition(ctx, topicID, partition)
		}
		if err != nil {
			return err
		}
		sec.Now = sec.Now.UTC()
		if last == nil || *last <= sec.State.LogStartOffset {
			sec.CleaningPoint = sec.State.LogStartOffset
			return nil
		}
		sec.CleaningPoint = *last // the active tail is never compacted
		rows, err := tx.Query(ctx, `
			SELECT b.base_offset, b.last_offset, b.record_count, f.id, f.key, f.size, b.byte_offset, b.byte_length, b.append_time
			  FROM batches b JOIN files f ON f.id = b.file_id
			 WHERE b.topic_id = $1 AND b.partition = $2 AND b.base_offset < $4 AND b.last_offset >= $3
			   AND b.base_offset >= coalesce((SELECT max(b2.base_offset) FROM batches b2
			                                   WHERE b2.topic_id = $1 AND b2.partition = $2 AND b2.base_offset <= $3), -1)
			 ORDER BY b.base_offset LIMIT $5`, topicID, partition, sec.State.LogStartOffset, *last, compactSectionRows)
		if err != nil {
			return err
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.CompactBatch, error) {
			var b metadata.CompactBatch
			err := r.Scan(&b.BaseOffset, &b.LastOffset, &b.RecordCount, &b.FileID, &b.FileKey, &b.FileSize, &b.ByteOffset, &b.ByteLength, &b.AppendTime)
			return b, err
		})
		if err != nil {
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
	n := len(c.Rewrites)
	topic, part, base, last := make([]int64, n), make([]int32, n), make([]int64, n), make([]int64, n)
	from, fromOff := make([]int64, n), make([]int64, n)
	for i, rw := range c.Rewrites {
		topic[i], part[i], base[i], last[i], from[i], fromOff[i] = rw.TopicID, rw.Partition, rw.BaseOffset, rw.LastOffset, rw.FromFileID, rw.FromByteOffset
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = metadata.CompactionResult{}
		var id int64
		files := uniq(from)
		if c.Key != "" {
			err := tx.QueryRow(ctx, `INSERT INTO files (key, size) VALUES ($1, $2)
				ON CONFLICT (key) DO NOTHING RETURNING id`, c.Key, c.Size).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // committed before
			}
			if err != nil {
				return err
			}
			files = append(files, id)
		}
		rows, err := tx.Query(ctx, `DELETE FROM batches b
			 USING unnest($1::bigint[], $2::integer[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
			       AS u(t, q, base, last, src, src_off)
			 WHERE b.topic_id = u.t AND b.partition = u.q AND b.base_offset = u.base AND b.last_offset = u.last
			   AND b.file_id = u.src AND b.byte_offset = u.src_off
			RETURNING b.topic_id, b.partition, b.base_offset, b.append_time`, topic, part, base, last, from, fromOff)
		if err != nil {
			return err
		}
		type rowKey struct {
			t    int64
			q    int32
			base int64
		}
		gone := map[rowKey]int64{} // replaced row -> its append time
		var k rowKey
		var at int64
		if _, err := pgx.ForEachRow(rows, []any{&k.t, &k.q, &k.base, &at}, func() error { gone[k] = at; return nil }); err != nil {
			return err
		}
		res.Replaced = len(gone)
		var (
			nt, nbase, nlast, noff, nlen, nmax, nat []int64
			nq, ncount                              []int32
		)
		for _, rw := range c.Rewrites {
			at, ok := gone[rowKey{rw.TopicID, rw.Partition, rw.BaseOffset}]
			if !ok {
				continue // gone or moved meanwhile
			}
			for _, b := range rw.Into {
				nt, nq, nbase, nlast = append(nt, rw.TopicID), append(nq, rw.Partition), append(nbase, b.BaseOffset), append(nlast, b.LastOffset)
				noff, nlen, ncount = append(noff, b.ByteOffset), append(nlen, b.ByteLength), append(ncount, b.RecordCount)
				nmax, nat = append(nmax, b.MaxTimestamp), append(nat, at)
			}
		}
		if len(nt) > 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
				    byte_offset, byte_length, record_count, max_timestamp, append_time)
				SELECT t, q, base, last, $1, off, len, cnt, mx, at
				  FROM unnest($2::bigint[], $3::integer[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
				              $8::integer[], $9::bigint[], $10::bigint[]) AS n(t, q, base, last, off, len, cnt, mx, at)`,
				id, nt, nq, nbase, nlast, noff, nlen, ncount, nmax, nat)
			if err != nil {
				return err
			}
			res.Rows = int(tag.RowsAffected())
		}
		tag, err := tx.Exec(ctx, markEmptySQL, files)
		res.FilesMarked = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return metadata.CompactionResult{}, s.wrap("commit compaction", err)
	}
	return res, nil
}
