package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

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
