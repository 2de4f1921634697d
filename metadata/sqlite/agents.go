package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// BeatAgent refreshes a's row, removes expired rows and reads the live
// agents in one write transaction.
func (s *Store) BeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	if err := metadata.ValidateAgent(a, ttl); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var live []metadata.AgentInfo
	err := s.write(ctx, func(tx *sql.Tx) error {
		live = live[:0]
		now := time.Now().UnixMilli()
		if _, err := tx.ExecContext(ctx, "DELETE FROM agents WHERE expires_at < ? AND id <> ?", now, a.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agents (id, host, port, zone, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port, zone = excluded.zone, expires_at = excluded.expires_at`,
			a.ID, a.Host, a.Port, a.Zone, now+ttl.Milliseconds()); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT id, node_id, host, port, zone FROM agents WHERE expires_at >= ? ORDER BY node_id", now)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g metadata.AgentInfo
			if err := rows.Scan(&g.ID, &g.NodeID, &g.Host, &g.Port, &g.Zone); err != nil {
				return err
			}
			live = append(live, g)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	return live, nil
}

// LeaveAgent removes agent id's row.
func (s *Store) LeaveAgent(ctx context.Context, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM agents WHERE id = ?", id)
		return err
	})
	return s.wrap("leave agent", err)
}
