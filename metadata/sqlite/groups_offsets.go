package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/group"
	"github.com/floe-broker/floe/metadata"
)

// Committed positions of consumer groups: commit, fetch, reset, copy and
// the inputs of lag, each one transaction.

func ensureGroup(ctx context.Context, tx *sql.Tx, name string, now int64) error {
	_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO consumer_groups (name, created_at) VALUES (?, ?)", name, now)
	return err
}

func upsertOffset(ctx context.Context, tx *sql.Tx, name string, o metadata.OffsetCommit, now int64) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO group_offsets (group_name, topic_id, partition,
		committed_offset, metadata, commit_time) VALUES (?, ?, ?, ?, ?, ?)`, name, o.TopicID, o.Partition, o.Offset, o.Metadata, now)
	return err
}

// CommitOffsets implements metadata.Store.
func (s *Store) CommitOffsets(ctx context.Context, req metadata.CommitOffsetsRequest) error {
	if err := group.ValidateCommit(req); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		g, err := loadFenced(ctx, tx, req.Group, now)
		if err != nil {
			return err
		}
		if err := group.CheckCommit(g, req, now); err != nil {
			return err
		}
		if err := ensureGroup(ctx, tx, req.Group, now); err != nil {
			return err
		}
		for _, o := range req.Offsets {
			if _, err := partitionState(ctx, tx, o.TopicID, o.Partition); err != nil {
				return err
			}
			if err := upsertOffset(ctx, tx, req.Group, o, now); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap("commit offsets "+req.Group, err)
}

// FetchOffsets implements metadata.Store.
func (s *Store) FetchOffsets(ctx context.Context, name string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error) {
	if err := group.ValidateName("group", name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []metadata.CommittedOffset
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = readOffsets(ctx, tx, name)
		return err
	})
	if err != nil {
		return nil, s.wrap("fetch offsets "+name, err)
	}
	if partitions != nil {
		want := make(map[group.TP]bool, len(partitions))
		for _, p := range partitions {
			want[p] = true
		}
		kept := out[:0]
		for _, o := range out {
			if want[group.TP{TopicID: o.TopicID, Partition: o.Partition}] {
				kept = append(kept, o)
			}
		}
		out = kept
	}
	return out, nil
}

func readOffsets(ctx context.Context, tx *sql.Tx, name string) ([]metadata.CommittedOffset, error) {
	rows, err := tx.QueryContext(ctx, `SELECT topic_id, partition, committed_offset, metadata, commit_time
		FROM group_offsets WHERE group_name = ? ORDER BY topic_id, partition`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []metadata.CommittedOffset{}
	for rows.Next() {
		var o metadata.CommittedOffset
		var at int64
		if err := rows.Scan(&o.TopicID, &o.Partition, &o.Offset, &o.Metadata, &at); err != nil {
			return nil, err
		}
		o.CommitTime = time.UnixMilli(at).UTC()
		out = append(out, o)
	}
	return out, rows.Err()
}

// ResetOffsets implements metadata.Store.
func (s *Store) ResetOffsets(ctx context.Context, req metadata.ResetOffsetsRequest) ([]metadata.OffsetReset, error) {
	if err := group.ValidateReset(req); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var plan []metadata.OffsetReset
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		// A reset never creates a group (a typo would make one).
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM consumer_groups WHERE name = ?)", req.Group).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%w: %q", metadata.ErrGroupNotFound, req.Group)
		}
		g, err := loadFenced(ctx, tx, req.Group, now)
		if err != nil {
			return err
		}
		if !req.Force {
			if err := group.RequireEmpty(g, now, "reset with force"); err != nil {
				return err
			}
		}
		current, err := readOffsets(ctx, tx, req.Group)
		if err != nil {
			return err
		}
		prev := map[group.TP]int64{}
		for _, o := range current {
			prev[group.TP{TopicID: o.TopicID, Partition: o.Partition}] = o.Offset
		}
		targets, err := resetTargets(ctx, tx, req, current)
		if err != nil {
			return err
		}
		plan = make([]metadata.OffsetReset, 0, len(targets))
		for _, p := range targets {
			st, err := partitionState(ctx, tx, p.TopicID, p.Partition)
			if err != nil {
				return err
			}
			old, ok := prev[p]
			if !ok {
				old = -1
			}
			var atTS int64
			if req.Spec == metadata.ResetTimestamp {
				err := tx.QueryRowContext(ctx, `SELECT base_offset FROM batches
					WHERE topic_id = ? AND partition = ? AND max_timestamp >= ? AND last_offset >= ? AND base_offset < ?
					ORDER BY base_offset LIMIT 1`, p.TopicID, p.Partition, req.Timestamp, st.LogStartOffset, st.HighWatermark).Scan(&atTS)
				if errors.Is(err, sql.ErrNoRows) {
					atTS = st.HighWatermark
				} else if err != nil {
					return err
				}
			}
			plan = append(plan, metadata.OffsetReset{TopicID: p.TopicID, Partition: p.Partition, Previous: old,
				New: group.ResetTo(req, st, old, atTS)})
		}
		if req.DryRun {
			return nil
		}
		if err := ensureGroup(ctx, tx, req.Group, now); err != nil {
			return err
		}
		for _, r := range plan {
			if err := upsertOffset(ctx, tx, req.Group, metadata.OffsetCommit{TopicID: r.TopicID, Partition: r.Partition, Offset: r.New}, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("reset offsets "+req.Group, err)
	}
	return plan, nil
}

// resetTargets lists the partitions a reset covers, sorted.
func resetTargets(ctx context.Context, tx *sql.Tx, req metadata.ResetOffsetsRequest, current []metadata.CommittedOffset) ([]group.TP, error) {
	set := map[group.TP]bool{}
	for _, p := range req.Partitions {
		set[p] = true
	}
	for _, id := range req.Topics {
		st, err := partitionStates(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if len(st) == 0 {
			return nil, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, id)
		}
		for _, p := range st {
			set[group.TP{TopicID: id, Partition: p.Partition}] = true
		}
	}
	if len(req.Partitions) == 0 && len(req.Topics) == 0 {
		for _, o := range current {
			var live bool
			if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE id = ? AND deleted_at IS NULL)",
				o.TopicID).Scan(&live); err != nil {
				return nil, err
			}
			if live {
				set[group.TP{TopicID: o.TopicID, Partition: o.Partition}] = true
			}
		}
	}
	out := make([]group.TP, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	group.SortTPs(out)
	return out, nil
}

// CopyOffsets implements metadata.Store.
func (s *Store) CopyOffsets(ctx context.Context, from, to string) (int, error) {
	if err := group.ValidateName("group", from); err != nil {
		return 0, err
	}
	if err := group.ValidateName("group", to); err != nil {
		return 0, err
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.Now().UnixMilli()
		g, err := loadFenced(ctx, tx, to, now)
		if err != nil {
			return err
		}
		if err := group.RequireEmpty(g, now, "wait for its members to leave or expire"); err != nil {
			return err
		}
		if err := ensureGroup(ctx, tx, to, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO group_offsets (group_name, topic_id, partition,
			committed_offset, metadata, commit_time)
			SELECT ?, topic_id, partition, committed_offset, metadata, ? FROM group_offsets WHERE group_name = ?`, to, now, from)
		if err != nil {
			return err
		}
		c, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if c == 0 {
			return fmt.Errorf("%w: %q has no positions", metadata.ErrGroupNotFound, from)
		}
		n = int(c)
		return nil
	})
	if err != nil {
		return 0, s.wrap("copy offsets", err)
	}
	return n, nil
}

// GroupLag implements metadata.Store.
func (s *Store) GroupLag(ctx context.Context, name string) ([]metadata.PartitionLagInput, error) {
	if err := group.ValidateName("group", name); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	out := []metadata.PartitionLagInput{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT o.topic_id, o.partition, o.committed_offset, p.high_watermark, p.log_start_offset,
			COALESCE((SELECT SUM(b.byte_length) FROM batches b WHERE b.topic_id = o.topic_id AND b.partition = o.partition
				AND b.last_offset >= MAX(o.committed_offset, p.log_start_offset) AND b.base_offset < p.high_watermark), 0),
			COALESCE(f.append_time, 0), COALESCE(f.max_timestamp, 0)
			FROM group_offsets o
			JOIN topics t ON t.id = o.topic_id AND t.deleted_at IS NULL
			JOIN partitions p ON p.topic_id = o.topic_id AND p.partition = o.partition
			LEFT JOIN batches f ON f.topic_id = o.topic_id AND f.partition = o.partition
				AND f.base_offset = (SELECT b.base_offset FROM batches b WHERE b.topic_id = o.topic_id AND b.partition = o.partition
					AND b.base_offset <= MAX(o.committed_offset, p.log_start_offset) ORDER BY b.base_offset DESC LIMIT 1)
				AND f.last_offset >= MAX(o.committed_offset, p.log_start_offset)
				AND MAX(o.committed_offset, p.log_start_offset) < p.high_watermark
			WHERE o.group_name = ? ORDER BY o.topic_id, o.partition`, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l metadata.PartitionLagInput
			if err := rows.Scan(&l.TopicID, &l.Partition, &l.Committed, &l.HighWatermark, &l.LogStartOffset,
				&l.BytesBehind, &l.FirstUnconsumedAppendTime, &l.FirstUnconsumedMaxTimestamp); err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("group lag "+name, err)
	}
	return out, nil
}
