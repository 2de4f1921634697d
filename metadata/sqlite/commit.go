package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

type partKey struct {
	topic int64
	part  int32
}

type prodKey struct {
	partKey
	pid int64
}

// partState is a partition as a commit sees it.
type partState struct {
	found    bool
	logStart int64
	hw       int64
	start    int64 // hw before the commit
}

// CommitFile records f and sequences its batches in one write transaction.
func (s *Store) CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error) {
	if err := validate.Commit(f); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var (
		results []metadata.BatchResult
		parts   map[partKey]*partState
	)
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		results, parts, err = commitTx(ctx, tx, f)
		return err
	})
	if err != nil {
		return nil, s.wrap("commit file "+f.Key, err)
	}
	var n metadata.Notice
	for k, p := range parts {
		if p.hw != p.start {
			n.Partitions = append(n.Partitions, metadata.PartitionNotice{TopicID: k.topic, Partition: k.part, HighWatermark: p.hw})
		}
	}
	if len(n.Partitions) > 0 {
		slices.SortFunc(n.Partitions, func(a, b metadata.PartitionNotice) int {
			return cmp.Or(cmp.Compare(a.TopicID, b.TopicID), cmp.Compare(a.Partition, b.Partition))
		})
		s.hub.Publish(n)
	}
	return results, nil
}

func commitTx(ctx context.Context, tx *sql.Tx, f metadata.FileCommit) ([]metadata.BatchResult, map[partKey]*partState, error) {
	now := time.Now().UnixMilli()
	var exists bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM files WHERE key = ?)", f.Key).Scan(&exists); err != nil {
		return nil, nil, err
	}
	if exists {
		return nil, nil, fmt.Errorf("%w: file %s is already committed", metadata.ErrInvalidCommit, f.Key)
	}
	var fileID int64
	if err := tx.QueryRowContext(ctx, "INSERT INTO files (key, size, created_at) VALUES (?, ?, ?) RETURNING id",
		f.Key, f.Size, now).Scan(&fileID); err != nil {
		return nil, nil, err
	}

	parts, err := loadPartitions(ctx, tx, f.Batches)
	if err != nil {
		return nil, nil, err
	}
	liveTopics := map[int64]bool{}
	producers := map[prodKey]*producerState{}
	getState, err := tx.PrepareContext(ctx, "SELECT epoch, batches FROM producer_state WHERE topic_id = ? AND partition = ? AND producer_id = ?")
	if err != nil {
		return nil, nil, err
	}
	defer getState.Close()

	results := make([]metadata.BatchResult, len(f.Batches))
	accepted := make([]bool, len(f.Batches))
	for i, b := range f.Batches {
		r := &results[i]
		r.BaseOffset, r.LogAppendTime = -1, now
		pk := partKey{b.TopicID, b.Partition}
		p := parts[pk]
		if !p.found {
			live, ok := liveTopics[b.TopicID]
			if !ok {
				if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = ? AND deleted_at IS NULL)",
					b.TopicID).Scan(&live); err != nil {
					return nil, nil, err
				}
				liveTopics[b.TopicID] = live
			}
			r.Err = metadata.ErrTopicNotFound
			if live {
				r.Err = metadata.ErrPartitionNotFound
			}
			continue
		}
		var st *producerState
		if validate.Idempotent(b) {
			key := prodKey{pk, b.ProducerID}
			if st = producers[key]; st == nil {
				if st, err = loadProducer(ctx, getState, key); err != nil {
					return nil, nil, err
				}
				producers[key] = st
			}
			v := st.check(b, p.logStart)
			if v.err != nil {
				r.Err = v.err
				continue
			}
			if v.duplicate {
				r.BaseOffset, r.Duplicate = v.dupOffset, true
				continue
			}
		}
		r.BaseOffset = p.hw
		p.hw += int64(b.RecordCount)
		accepted[i] = true
		if st != nil {
			st.accept(b, r.BaseOffset)
		}
	}

	if err := writeCommit(ctx, tx, f, fileID, now, results, accepted, parts, producers); err != nil {
		return nil, nil, err
	}
	return results, parts, nil
}

// loadPartitions reads the state of every partition the batches name, in
// one statement.
func loadPartitions(ctx context.Context, tx *sql.Tx, batches []metadata.BatchCommit) (map[partKey]*partState, error) {
	parts := map[partKey]*partState{}
	keys := jsonRows{}
	for _, b := range batches {
		k := partKey{b.TopicID, b.Partition}
		if parts[k] == nil {
			parts[k] = &partState{}
			keys.add(k.topic, int64(k.part))
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT p.topic_id, p.partition, p.log_start_offset, p.high_watermark
		FROM json_each(?) j CROSS JOIN partitions p ON p.topic_id = j.value->>0 AND p.partition = j.value->>1`, keys.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k partKey
			p partState
		)
		if err := rows.Scan(&k.topic, &k.part, &p.logStart, &p.hw); err != nil {
			return nil, err
		}
		p.found, p.start = true, p.hw
		*parts[k] = p
	}
	return parts, rows.Err()
}

func loadProducer(ctx context.Context, stmt *sql.Stmt, k prodKey) (*producerState, error) {
	st := &producerState{}
	var entries string
	err := stmt.QueryRowContext(ctx, k.topic, k.part, k.pid).Scan(&st.epoch, &entries)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	st.known = true
	if err := json.Unmarshal([]byte(entries), &st.entries); err != nil {
		return nil, fmt.Errorf("producer %d state on %d/%d: %w", k.pid, k.topic, k.part, err)
	}
	return st, nil
}

// writeCommit stores the accepted batches, the new high watermarks and the
// changed producer states, one statement each.
func writeCommit(ctx context.Context, tx *sql.Tx, f metadata.FileCommit, fileID, now int64, results []metadata.BatchResult,
	accepted []bool, parts map[partKey]*partState, producers map[prodKey]*producerState) error {
	var rows jsonRows
	for i, b := range f.Batches {
		if accepted[i] {
			base := results[i].BaseOffset
			rows.add(b.TopicID, int64(b.Partition), base, base+int64(b.RecordCount)-1, b.ByteOffset, b.ByteLength,
				int64(b.RecordCount), b.MaxTimestamp)
		}
	}
	if rows.n > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (topic_id, partition, base_offset, last_offset, file_id,
				byte_offset, byte_length, record_count, max_timestamp, append_time)
			SELECT j.value->>0, j.value->>1, j.value->>2, j.value->>3, ?, j.value->>4, j.value->>5, j.value->>6, j.value->>7, ?
			  FROM json_each(?) j`, fileID, now, rows.String()); err != nil {
			return err
		}
	}
	rows = jsonRows{}
	for k, p := range parts {
		if p.found && p.hw != p.start {
			rows.add(k.topic, int64(k.part), p.hw)
		}
	}
	if rows.n > 0 {
		// An upsert of rows that all exist: driven by the JSON rows, one
		// primary key probe each.
		if _, err := tx.ExecContext(ctx, `INSERT INTO partitions (topic_id, partition, high_watermark)
			SELECT j.value->>0, j.value->>1, j.value->>2 FROM json_each(?) j WHERE true
			ON CONFLICT (topic_id, partition) DO UPDATE SET high_watermark = excluded.high_watermark`, rows.String()); err != nil {
			return err
		}
	}
	var states []string
	rows = jsonRows{}
	for k, st := range producers {
		if st.dirty {
			entries, err := json.Marshal(st.entries)
			if err != nil {
				return err
			}
			rows.add(k.topic, int64(k.part), k.pid, int64(st.epoch), int64(len(states)))
			states = append(states, string(entries))
		}
	}
	if rows.n > 0 {
		all, err := json.Marshal(states)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO producer_state (topic_id, partition, producer_id, epoch, batches)
			SELECT j.value->>0, j.value->>1, j.value->>2, j.value->>3, json_extract(?2, '$[' || (j.value->>4) || ']')
			  FROM json_each(?1) j WHERE true
			ON CONFLICT (topic_id, partition, producer_id) DO UPDATE SET epoch = excluded.epoch, batches = excluded.batches`,
			rows.String(), string(all)); err != nil {
			return err
		}
	}
	return nil
}

// jsonRows builds a JSON array of arrays of integers, the way whole sets
// of rows are passed to SQLite in one parameter (read with json_each).
type jsonRows struct {
	buf []byte
	n   int
}

func (r *jsonRows) add(values ...int64) {
	if r.n == 0 {
		r.buf = append(r.buf, '[')
	} else {
		r.buf = append(r.buf, ',')
	}
	r.n++
	r.buf = append(r.buf, '[')
	for i, v := range values {
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		r.buf = strconv.AppendInt(r.buf, v, 10)
	}
	r.buf = append(r.buf, ']')
}

func (r *jsonRows) String() string {
	if r.n == 0 {
		return "[]"
	}
	return string(r.buf) + "]"
}
