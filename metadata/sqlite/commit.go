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
// A key already committed answers with the results stored by its first
// commit, and writes nothing.
// (A commit of a committed key with another number of batches is a
// caller's mistake: ErrInvalidCommit, and nothing written.)
//
// Errors: ErrNotApplied wraps every failure before COMMIT (the transaction
// could not begin, or failed and rolled back); a failing COMMIT is
// ambiguous.
func (s *Store) CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error) {
	if err := validate.Commit(f); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, fmt.Errorf("metadata: commit file %s: %w", f.Key, err)
	}
	op := "commit file " + f.Key
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.notApplied(op, ctxErr(ctx, err))
	}
	results, parts, err := commitTx(ctx, tx, f)
	if err != nil {
		_ = tx.Rollback()
		return nil, s.notApplied(op, ctxErr(ctx, err))
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("metadata: %s: outcome unknown: %w", op, ctxErr(ctx, err))
	}
	s.publish(parts)
	return results, nil
}

// publish announces the new high watermarks of the partitions a commit
// advanced (a later commit's map overrides an earlier one's).
func (s *Store) publish(commits ...map[partKey]*partState) {
	hws := map[partKey]int64{}
	for _, parts := range commits {
		for k, p := range parts {
			if p.hw != p.start {
				hws[k] = p.hw
			}
		}
	}
	var n metadata.Notice
	for k, hw := range hws {
		n.Partitions = append(n.Partitions, metadata.PartitionNotice{TopicID: k.topic, Partition: k.part, HighWatermark: hw})
	}
	if len(n.Partitions) > 0 {
		slices.SortFunc(n.Partitions, func(a, b metadata.PartitionNotice) int {
			return cmp.Or(cmp.Compare(a.TopicID, b.TopicID), cmp.Compare(a.Partition, b.Partition))
		})
		s.hub.Publish(n)
	}
}

// notApplied wraps err, a failure that surely left the database unchanged,
// with ErrNotApplied (and ErrClosed once the store is closed).
func (s *Store) notApplied(op string, err error) error {
	if s.checkOpen() != nil {
		return fmt.Errorf("metadata: %s: %w: %w", op, metadata.ErrNotApplied, metadata.ErrClosed)
	}
	return fmt.Errorf("metadata: %s: %w: %w", op, metadata.ErrNotApplied, err)
}

// errNoStoredResults: the file was committed by a release that did not
// store results.
var errNoStoredResults = errors.New("metadata: file committed earlier, without stored results (by a previous release)")

// commitTx runs a commit in tx. For a key already committed it returns the
// stored results and no partitions.
func commitTx(ctx context.Context, tx *sql.Tx, f metadata.FileCommit) ([]metadata.BatchResult, map[partKey]*partState, error) {
	now := time.Now().UnixMilli()
	var stored sql.NullString
	err := tx.QueryRowContext(ctx, "SELECT results FROM files WHERE key = ?", f.Key).Scan(&stored)
	switch {
	case err == nil && !stored.Valid:
		return nil, nil, errNoStoredResults
	case err == nil:
		results, err := decodeResults(stored.String, len(f.Batches))
		return results, nil, err
	case !errors.Is(err, sql.ErrNoRows):
		return nil, nil, err
	}

	parts, err := loadPartitions(ctx, tx, f.Batches)
	if err != nil {
		return nil, nil, err
	}
	liveTopics := map[int64]bool{}
	producers, err := loadProducers(ctx, tx, f.Batches)
	if err != nil {
		return nil, nil, err
	}
	maxPID := int64(-1) // the last producer id issued; -1: not read yet

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
			if maxPID < 0 {
				if err := tx.QueryRowContext(ctx, "SELECT value FROM sequences WHERE name = 'producer_id'").Scan(&maxPID); err != nil {
					return nil, nil, err
				}
			}
			if b.ProducerID > maxPID {
				r.Err = metadata.ErrUnknownProducer
				continue
			}
			key := prodKey{pk, b.ProducerID}
			if st = producers[key]; st == nil {
				st = &producerState{} // no state yet
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

	encoded, err := encodeResults(results, now)
	if err != nil {
		return nil, nil, err
	}
	var fileID int64
	if err := tx.QueryRowContext(ctx, "INSERT INTO files (key, size, created_at, results) VALUES (?, ?, ?, ?) RETURNING id",
		f.Key, f.Size, now, encoded).Scan(&fileID); err != nil {
		return nil, nil, err
	}
	if err := writeCommit(ctx, tx, f, fileID, now, results, accepted, parts, producers); err != nil {
		return nil, nil, err
	}
	return results, parts, nil
}

// encodeResults is the files.results JSON of a commit's results.
func encodeResults(results []metadata.BatchResult, appendTime int64) (string, error) {
	var rows jsonRows
	for i, r := range results {
		code, ok := validate.RefusalCode(r.Err)
		if !ok {
			return "", fmt.Errorf("batch %d: %v is no refusal", i, r.Err)
		}
		dup := int64(0)
		if r.Duplicate {
			dup = 1
		}
		rows.add(r.BaseOffset, dup, int64(code))
	}
	return "[" + strconv.FormatInt(appendTime, 10) + "," + rows.String() + "]", nil
}

// decodeResults reads files.results for a file of n batches.
func decodeResults(stored string, n int) ([]metadata.BatchResult, error) {
	var doc []json.RawMessage
	var appendTime int64
	var rows [][3]int64
	if err := json.Unmarshal([]byte(stored), &doc); err != nil || len(doc) != 2 {
		return nil, fmt.Errorf("stored results %.40q: not [time, rows]: %v", stored, err)
	}
	if err := errors.Join(json.Unmarshal(doc[0], &appendTime), json.Unmarshal(doc[1], &rows)); err != nil {
		return nil, fmt.Errorf("stored results %.40q: %w", stored, err)
	}
	if len(rows) != n {
		return nil, fmt.Errorf("%w: the file was committed with %d batches, not %d", metadata.ErrInvalidCommit, len(rows), n)
	}
	results := make([]metadata.BatchResult, n)
	for i, row := range rows {
		refusal, ok := validate.RefusalError(int16(row[2]))
		if !ok {
			return nil, fmt.Errorf("stored results: batch %d: unknown refusal code %d", i, row[2])
		}
		results[i] = metadata.BatchResult{BaseOffset: row[0], LogAppendTime: appendTime, Duplicate: row[1] == 1, Err: refusal}
	}
	return results, nil
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
		FROM jsonb_each(?) j CROSS JOIN partitions p ON p.topic_id = j.value->>0 AND p.partition = j.value->>1`, keys.String())
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

// loadProducers reads the state of every idempotent producer the batches
// name, per partition, in one statement; producers with no state yet are
// missing from the map.
func loadProducers(ctx context.Context, tx *sql.Tx, batches []metadata.BatchCommit) (map[prodKey]*producerState, error) {
	producers := map[prodKey]*producerState{}
	seen := map[prodKey]bool{}
	keys := jsonRows{}
	for _, b := range batches {
		k := prodKey{partKey{b.TopicID, b.Partition}, b.ProducerID}
		if validate.Idempotent(b) && !seen[k] {
			seen[k] = true
			keys.add(k.topic, int64(k.part), k.pid)
		}
	}
	if keys.n == 0 {
		return producers, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT s.topic_id, s.partition, s.producer_id, s.epoch, s.batches
		FROM jsonb_each(?) j CROSS JOIN producer_state s
		  ON s.topic_id = j.value->>0 AND s.partition = j.value->>1 AND s.producer_id = j.value->>2`, keys.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			k       prodKey
			entries string
		)
		st := &producerState{known: true}
		if err := rows.Scan(&k.topic, &k.part, &k.pid, &st.epoch, &entries); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(entries), &st.entries); err != nil {
			return nil, fmt.Errorf("producer %d state on %d/%d: %w", k.pid, k.topic, k.part, err)
		}
		producers[k] = st
	}
	return producers, rows.Err()
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
			  FROM jsonb_each(?) j`, fileID, now, rows.String()); err != nil {
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
			SELECT j.value->>0, j.value->>1, j.value->>2 FROM jsonb_each(?) j WHERE true
			ON CONFLICT (topic_id, partition) DO UPDATE SET high_watermark = excluded.high_watermark`, rows.String()); err != nil {
			return err
		}
	}
	rows = jsonRows{}
	for k, st := range producers {
		if st.dirty {
			entries, err := json.Marshal(st.entries)
			if err != nil {
				return err
			}
			if string(entries) == "null" {
				entries = []byte("[]")
			}
			// Each row carries its batches as a nested array: a row's
			// fifth element read with -> is that array's JSON text, so the
			// statement parses the parameter once, whatever its rows.
			rows.addWithJSON(entries, k.topic, int64(k.part), k.pid, int64(st.epoch))
		}
	}
	if rows.n > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO producer_state (topic_id, partition, producer_id, epoch, batches)
			SELECT j.value->>0, j.value->>1, j.value->>2, j.value->>3, j.value->4
			  FROM jsonb_each(?1) j WHERE true
			ON CONFLICT (topic_id, partition, producer_id) DO UPDATE SET epoch = excluded.epoch, batches = excluded.batches`,
			rows.String()); err != nil {
			return err
		}
	}
	return nil
}

// jsonRows builds a JSON array of arrays of integers, the way whole sets
// of rows are passed to SQLite in one parameter (read with jsonb_each,
// whose rows' values are JSONB: each ->> reads them without parsing text).
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

// addWithJSON adds a row of values followed by raw, a JSON value of its
// own (an array, read back with ->).
func (r *jsonRows) addWithJSON(raw []byte, values ...int64) {
	r.add(values...)
	r.buf = append(r.buf[:len(r.buf)-1], ',')
	r.buf = append(r.buf, raw...)
	r.buf = append(r.buf, ']')
}

func (r *jsonRows) String() string {
	if r.n == 0 {
		return "[]"
	}
	return string(r.buf) + "]"
}
