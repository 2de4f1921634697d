package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// CreateTopic creates the topic and its partitions.
func (s *Store) CreateTopic(ctx context.Context, spec metadata.TopicSpec) (metadata.Topic, error) {
	if err := validate.TopicSpec(spec); err != nil {
		return metadata.Topic{}, err
	}
	if err := s.checkOpen(); err != nil {
		return metadata.Topic{}, err
	}
	cfg := make(map[string]string, len(spec.Config))
	for k, v := range spec.Config {
		cfg[k] = v
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return metadata.Topic{}, fmt.Errorf("metadata: create topic %s: config: %w", spec.Name, err)
	}
	now := time.Now().UnixMilli()
	t := metadata.Topic{Name: spec.Name, Partitions: spec.Partitions, Config: cfg, CreatedAt: time.UnixMilli(now).UTC()}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE name = ? AND deleted_at IS NULL)",
			spec.Name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("%w: %s", metadata.ErrTopicExists, spec.Name)
		}
		if err := tx.QueryRowContext(ctx, "INSERT INTO topics (name, partitions, config, created_at) VALUES (?, ?, ?, ?) RETURNING id",
			spec.Name, spec.Partitions, string(cfgJSON), now).Scan(&t.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE g(p) AS (SELECT 0 UNION ALL SELECT p + 1 FROM g WHERE p + 1 < ?)
			INSERT INTO partitions (topic_id, partition) SELECT ?, p FROM g`, spec.Partitions, t.ID)
		return err
	})
	if err != nil {
		return metadata.Topic{}, s.wrap("create topic "+spec.Name, err)
	}
	return t, nil
}

// DeleteTopic marks the topic deleted and removes its partitions and
// producer state; its batches, unreadable from now on, are removed by the
// compactor in bounded transactions (CollectDeadBatches). Its files stay for the compactor.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, "UPDATE topics SET deleted_at = ? WHERE name = ? AND deleted_at IS NULL RETURNING id",
			time.Now().UnixMilli(), name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", metadata.ErrTopicNotFound, name)
		}
		if err != nil {
			return err
		}
		for _, q := range []string{
			"DELETE FROM partitions WHERE topic_id = ?",
			"DELETE FROM producer_state WHERE topic_id = ?",
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap("delete topic "+name, err)
}

const topicColumns = "id, name, partitions, config, created_at"

// scanTopic reads topicColumns.
func scanTopic(row interface{ Scan(...any) error }) (metadata.Topic, error) {
	var (
		t       metadata.Topic
		cfg     string
		created int64
	)
	if err := row.Scan(&t.ID, &t.Name, &t.Partitions, &cfg, &created); err != nil {
		return t, err
	}
	t.CreatedAt = time.UnixMilli(created).UTC()
	if err := json.Unmarshal([]byte(cfg), &t.Config); err != nil {
		return t, fmt.Errorf("topic %s config: %w", t.Name, err)
	}
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	return t, nil
}

// ListTopics returns the live topics ordered by name.
func (s *Store) ListTopics(ctx context.Context) ([]metadata.Topic, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, "SELECT "+topicColumns+" FROM topics WHERE deleted_at IS NULL ORDER BY name")
	if err != nil {
		return nil, s.wrap("list topics", err)
	}
	defer rows.Close()
	var topics []metadata.Topic
	for rows.Next() {
		t, err := scanTopic(rows)
		if err != nil {
			return nil, s.wrap("list topics", err)
		}
		topics = append(topics, t)
	}
	return topics, s.wrap("list topics", rows.Err())
}

// DescribeTopic returns the topic and its partitions' states, read in one
// snapshot.
func (s *Store) DescribeTopic(ctx context.Context, name string) (metadata.TopicDescription, error) {
	if err := s.checkOpen(); err != nil {
		return metadata.TopicDescription{}, err
	}
	var d metadata.TopicDescription
	err := s.read(ctx, func(tx *sql.Tx) error {
		t, err := scanTopic(tx.QueryRowContext(ctx, "SELECT "+topicColumns+" FROM topics WHERE name = ? AND deleted_at IS NULL", name))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", metadata.ErrTopicNotFound, name)
		}
		if err != nil {
			return err
		}
		d.Topic = t
		d.PartitionStates, err = partitionStates(ctx, tx, t.ID)
		return err
	})
	if err != nil {
		return metadata.TopicDescription{}, s.wrap("describe topic "+name, err)
	}
	return d, nil
}

// TopicByID finds a live topic by ID.
func (s *Store) TopicByID(ctx context.Context, id int64) (metadata.Topic, error) {
	if err := s.checkOpen(); err != nil {
		return metadata.Topic{}, err
	}
	t, err := scanTopic(s.r.QueryRowContext(ctx, "SELECT "+topicColumns+" FROM topics WHERE id = ? AND deleted_at IS NULL", id))
	if errors.Is(err, sql.ErrNoRows) {
		return metadata.Topic{}, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, id)
	}
	if err != nil {
		return metadata.Topic{}, s.wrap("topic by id", err)
	}
	return t, nil
}

// PartitionStates returns the states of the topic's partitions, ordered by
// partition.
func (s *Store) PartitionStates(ctx context.Context, topicID int64) ([]metadata.PartitionState, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var states []metadata.PartitionState
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		states, err = partitionStates(ctx, tx, topicID)
		if err == nil && len(states) == 0 { // a live topic has at least one partition
			err = fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, topicID)
		}
		return err
	})
	if err != nil {
		return nil, s.wrap("partition states", err)
	}
	return states, nil
}

func partitionStates(ctx context.Context, tx *sql.Tx, topicID int64) ([]metadata.PartitionState, error) {
	rows, err := tx.QueryContext(ctx, `SELECT partition, log_start_offset, high_watermark FROM partitions
		WHERE topic_id = ? ORDER BY partition`, topicID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var states []metadata.PartitionState
	for rows.Next() {
		var st metadata.PartitionState
		if err := rows.Scan(&st.Partition, &st.LogStartOffset, &st.HighWatermark); err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return states, rows.Err()
}
