package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Producers reads a partition's producer states (the newest of each
// producer's remembered batches).
func (s *Store) Producers(ctx context.Context, topicID int64, partition int32, limit int) ([]metadata.ProducerInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var out []metadata.ProducerInfo
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT producer_id, epoch, batches FROM producer_state
			WHERE topic_id = ? AND partition = ? ORDER BY producer_id LIMIT ?`, topicID, partition, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p metadata.ProducerInfo
			var batches string
			if err := rows.Scan(&p.ProducerID, &p.Epoch, &batches); err != nil {
				return err
			}
			var entries []seqEntry
			if err := json.Unmarshal([]byte(batches), &entries); err != nil || len(entries) == 0 {
				return fmt.Errorf("producer %d state on %d/%d: %d batches, %v", p.ProducerID, topicID, partition, len(entries), err)
			}
			last := entries[len(entries)-1]
			p.LastSequence, p.LastBaseOffset = int32(last[1]), last[2]
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("producers", err)
	}
	return out, nil
}

// ReinitProducer applies metadata.DecideProducerInit in one write
// transaction.
func (s *Store) ReinitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error) {
	if id < 0 || epoch < 0 {
		if d := metadata.DecideProducerInit(metadata.ProducerEpochState{}, id, epoch); d.Action != metadata.ProducerNewID {
			return 0, 0, d.Err()
		}
		return s.InitProducer(ctx)
	}
	if err := s.checkOpen(); err != nil {
		return 0, 0, err
	}
	var outID int64
	var outEpoch int16
	err := s.write(ctx, func(tx *sql.Tx) error {
		var maxID int64
		if err := tx.QueryRowContext(ctx, "SELECT value FROM sequences WHERE name = 'producer_id'").Scan(&maxID); err != nil {
			return err
		}
		st := metadata.ProducerEpochState{}
		if id >= 1 && id <= maxID {
			st = metadata.ProducerEpochState{Issued: true, LastEpoch: -1}
			err := tx.QueryRowContext(ctx, "SELECT epoch, last_epoch FROM producer_epochs WHERE producer_id = ?", id).Scan(&st.Epoch, &st.LastEpoch)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		d := metadata.DecideProducerInit(st, id, epoch)
		switch d.Action {
		case metadata.ProducerBump:
			outID, outEpoch = id, d.Epoch
			_, err := tx.ExecContext(ctx, `INSERT INTO producer_epochs (producer_id, epoch, last_epoch, bumped_ms) VALUES (?1, ?2, ?3, ?4)
				ON CONFLICT (producer_id) DO UPDATE SET epoch = excluded.epoch, last_epoch = excluded.last_epoch, bumped_ms = excluded.bumped_ms`,
				id, d.Epoch, d.LastEpoch, time.Now().UnixMilli())
			return err
		case metadata.ProducerKeep:
			outID, outEpoch = id, d.Epoch
			return nil
		case metadata.ProducerNewID:
			outEpoch = 0
			return tx.QueryRowContext(ctx, "UPDATE sequences SET value = value + 1 WHERE name = 'producer_id' RETURNING value").Scan(&outID)
		}
		return d.Err()
	})
	if err != nil {
		if errors.Is(err, metadata.ErrProducerFenced) {
			return 0, 0, err
		}
		return 0, 0, s.wrap("reinit producer", err)
	}
	return outID, outEpoch, nil
}

// ExpireProducerEpochs deletes the oldest rows at or before
// metadata.ProducerEpochCutoff of Go's clock, at most limit, through the
// bump-time index.
func (s *Store) ExpireProducerEpochs(ctx context.Context, after time.Duration, limit int) (int, error) {
	if after <= 0 || limit <= 0 {
		return 0, nil
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		cutoff, ok := metadata.ProducerEpochCutoff(time.Now().UnixMilli(), after)
		if !ok {
			return nil
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM producer_epochs WHERE producer_id IN (
			SELECT producer_id FROM producer_epochs WHERE bumped_ms <= ? ORDER BY bumped_ms LIMIT ?)`, cutoff, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, s.wrap("expire producer epochs", err)
	}
	return int(n), nil
}
