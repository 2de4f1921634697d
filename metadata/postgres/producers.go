package postgres

import (
	"context"
	"errors"
	"time"

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

// ReinitProducer applies metadata.DecideProducerInit in one transaction:
// the id's epoch row is created (epoch 0) if the id was issued and has
// none, locked, decided on and updated.
func (s *Store) ReinitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error) {
	if id < 0 || epoch < 0 {
		if d := metadata.DecideProducerInit(metadata.ProducerEpochState{}, id, epoch); d.Action != metadata.ProducerNewID {
			return 0, 0, d.Err()
		}
		return s.InitProducer(ctx)
	}
	var outID int64
	var outEpoch int16
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO producer_epochs (producer_id, epoch, last_epoch)
			SELECT $1::bigint, 0, -1 FROM producer_ids s WHERE $1::bigint >= 1 AND $1::bigint <= CASE WHEN s.is_called THEN s.last_value ELSE 0 END
			ON CONFLICT (producer_id) DO NOTHING`, id); err != nil {
			return err
		}
		st := metadata.ProducerEpochState{Issued: true}
		err := tx.QueryRow(ctx, "SELECT epoch, last_epoch FROM producer_epochs WHERE producer_id = $1 FOR UPDATE", id).
			Scan(&st.Epoch, &st.LastEpoch)
		if errors.Is(err, pgx.ErrNoRows) {
			st = metadata.ProducerEpochState{}
		} else if err != nil {
			return err
		}
		d := metadata.DecideProducerInit(st, id, epoch)
		switch d.Action {
		case metadata.ProducerBump:
			if _, err := tx.Exec(ctx, "UPDATE producer_epochs SET epoch = $2, last_epoch = $3, bumped_ms = "+nowMs+" WHERE producer_id = $1", id, d.Epoch, d.LastEpoch); err != nil {
				return err
			}
			outID, outEpoch = id, d.Epoch
		case metadata.ProducerKeep:
			outID, outEpoch = id, d.Epoch
		case metadata.ProducerNewID:
			outEpoch = 0
			return tx.QueryRow(ctx, "SELECT nextval('producer_ids')").Scan(&outID)
		default:
			return d.Err()
		}
		return nil
	})
	if err != nil {
		return 0, 0, s.wrap("reinit producer", err)
	}
	return outID, outEpoch, nil
}

// ExpireProducerEpochs deletes the oldest rows at or before
// metadata.ProducerEpochCutoff of PostgreSQL's clock, at most limit,
// through the bump-time index; rows a concurrent bump holds are skipped.
func (s *Store) ExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error) {
	if after <= 0 || limit <= 0 {
		return 0, nil
	}
	var now int64
	if err := s.pool.QueryRow(ctx, "SELECT "+nowMs).Scan(&now); err != nil {
		return 0, s.wrap("expire producer epochs", err)
	}
	cutoff, ok := metadata.ProducerEpochCutoff(now, after)
	if !ok {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM producer_epochs WHERE producer_id IN (
		SELECT producer_id FROM producer_epochs WHERE bumped_ms <= $1 ORDER BY bumped_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, limit)
	if err != nil {
		return 0, s.wrap("expire producer epochs", err)
	}
	return int(tag.RowsAffected()), nil
}
