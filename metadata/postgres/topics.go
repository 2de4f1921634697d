package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// CreateTopic creates the topic and its partitions in one statement.
func (s *Store) CreateTopic(ctx context.Context, spec metadata.TopicSpec) (metadata.Topic, error) {
	if err := validate.TopicSpec(spec); err != nil {
		return metadata.Topic{}, err
	}
	cfg := spec.Config
	if cfg == nil {
		cfg = map[string]string{}
	}
	t := metadata.Topic{Name: spec.Name, Partitions: spec.Partitions, Config: copyConfig(cfg)}
	err := s.pool.QueryRow(ctx, `
		WITH t AS (
			INSERT INTO topics (name, partitions, config) VALUES ($1, $2, $3)
			RETURNING id, created_at
		), p AS (
			INSERT INTO partitions (topic_id, partition)
			SELECT t.id, g FROM t, generate_series(0, $2 - 1) AS g
		)
		SELECT id, created_at FROM t`,
		spec.Name, spec.Partitions, cfg).Scan(&t.ID, &t.CreatedAt)
	if err != nil {
		if code, constraint := pgCode(err); code == "23505" && constraint == "topics_live_name" {
			return metadata.Topic{}, fmt.Errorf("%w: %s", metadata.ErrTopicExists, spec.Name)
		}
		return metadata.Topic{}, s.wrap("create topic "+spec.Name, err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

// DeleteTopic marks the topic deleted and removes its partitions and
// producer state; its batches, unreadable from now on, are removed by the
// compactor in bounded transactions (CollectDeadBatches). Removing the partitions waits for commits in flight on
// them; later commits get ErrTopicNotFound. Its files stay for the compactor.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `UPDATE topics SET deleted_at = now()
			WHERE name = $1 AND deleted_at IS NULL RETURNING id`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", metadata.ErrTopicNotFound, name)
		}
		if err != nil {
			return err
		}
		// Lock the partitions in the canonical order commits use, so a
		// concurrent commit waits instead of deadlocking; then one statement
		// each, in this order: each sees what the commits it waited for wrote.
		for _, q := range []string{
			"SELECT 1 FROM partitions WHERE topic_id = $1 ORDER BY partition FOR UPDATE",
			"DELETE FROM partitions WHERE topic_id = $1",
			"DELETE FROM producer_state WHERE topic_id = $1",
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, metadata.ErrTopicNotFound) {
		return err
	}
	if err != nil {
		return s.wrap("delete topic "+name, err)
	}
	return nil
}

// ListTopics returns the live topics ordered by name.
func (s *Store) ListTopics(ctx context.Context) ([]metadata.Topic, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, partitions, config, created_at
		FROM topics WHERE deleted_at IS NULL ORDER BY name`)
	if err != nil {
		return nil, s.wrap("list topics", err)
	}
	topics, err := pgx.CollectRows(rows, scanTopic)
	if err != nil {
		return nil, s.wrap("list topics", err)
	}
	return topics, nil
}

// DescribeTopic returns the topic and its partitions' states, read in one
// snapshot.
func (s *Store) DescribeTopic(ctx context.Context, name string) (metadata.TopicDescription, error) {
	var (
		d          metadata.TopicDescription
		parts      []int32
		lso, hw    []int64
		createdAt  time.Time
		config     map[string]string
		partitions int32
	)
	err := s.pool.QueryRow(ctx, `
		SELECT t.id, t.partitions, t.config, t.created_at,
		       coalesce(array_agg(p.partition ORDER BY p.partition) FILTER (WHERE p.partition IS NOT NULL), '{}'),
		       coalesce(array_agg(p.log_start_offset ORDER BY p.partition) FILTER (WHERE p.partition IS NOT NULL), '{}'),
		       coalesce(array_agg(p.high_watermark ORDER BY p.partition) FILTER (WHERE p.partition IS NOT NULL), '{}')
		  FROM topics t LEFT JOIN partitions p ON p.topic_id = t.id
		 WHERE t.name = $1 AND t.deleted_at IS NULL
		 GROUP BY t.id`, name).Scan(&d.ID, &partitions, &config, &createdAt, &parts, &lso, &hw)
	if errors.Is(err, pgx.ErrNoRows) {
		return metadata.TopicDescription{}, fmt.Errorf("%w: %s", metadata.ErrTopicNotFound, name)
	}
	if err != nil {
		return metadata.TopicDescription{}, s.wrap("describe topic "+name, err)
	}
	d.Name, d.Partitions, d.Config, d.CreatedAt = name, partitions, nonNil(config), createdAt.UTC()
	d.PartitionStates = make([]metadata.PartitionState, len(parts))
	for i := range parts {
		d.PartitionStates[i] = metadata.PartitionState{Partition: parts[i], LogStartOffset: lso[i], HighWatermark: hw[i]}
	}
	return d, nil
}

// TopicByID finds a live topic by ID.
func (s *Store) TopicByID(ctx context.Context, id int64) (metadata.Topic, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name, partitions, config, created_at
		FROM topics WHERE id = $1 AND deleted_at IS NULL`, id)
	if err != nil {
		return metadata.Topic{}, s.wrap("topic by id", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTopic)
	if errors.Is(err, pgx.ErrNoRows) {
		return metadata.Topic{}, fmt.Errorf("%w: id %d", metadata.ErrTopicNotFound, id)
	}
	if err != nil {
		return metadata.Topic{}, s.wrap("topic by id", err)
	}
	return t, nil
}

func scanTopic(row pgx.CollectableRow) (metadata.Topic, error) {
	var t metadata.Topic
	err := row.Scan(&t.ID, &t.Name, &t.Partitions, &t.Config, &t.CreatedAt)
	t.Config = nonNil(t.Config)
	t.CreatedAt = t.CreatedAt.UTC()
	return t, err
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func copyConfig(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
