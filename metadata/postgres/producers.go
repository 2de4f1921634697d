package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// Producers reads a partition's producer states (the newest of each
// producer's remembered batches).
func (s *Store) Producers(ctx context.Context, topicID int64, partition int32, limit int) ([]metadata.ProducerInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT producer_id, epoch, last_seqs[cardinality(last_seqs)], base_offsets[cardinality(base_offsets)]
		FROM producer_state WHERE topic_id = $1 AND partition = $2 ORDER BY producer_id LIMIT $3`, topicID, partition, limit)
	if err != nil {
		return nil, s.wrap("producers", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.ProducerInfo, error) {
		var p metadata.ProducerInfo
		return p, r.Scan(&p.ProducerID, &p.Epoch, &p.LastSequence, &p.LastBaseOffset)
	})
	if err != nil {
		return nil, s.wrap("producers", err)
	}
	return out, nil
}
