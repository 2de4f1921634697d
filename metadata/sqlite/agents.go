package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// BeatAgent applies metadata.PlanAgentBeat in one write transaction,
// by Go's clock (expires_at in unix ms).
func (s *Store) BeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	if err := metadata.ValidateAgent(a, ttl); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var live []metadata.AgentInfo
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := time.UnixMilli(time.Now().UnixMilli())
		stored, err := agentRows(ctx, tx)
		if err != nil {
			return err
		}
		plan := metadata.PlanAgentBeat(stored, a, now, ttl)
		for _, r := range plan.Expired {
			if _, err := tx.ExecContext(ctx, "DELETE FROM agents WHERE id = ? AND expires_at = ?", r.ID, r.ExpiresAt.UnixMilli()); err != nil {
				return err
			}
		}
		if !plan.KeepNodeID { // a new node id: AUTOINCREMENT never reuses one
			if _, err := tx.ExecContext(ctx, "DELETE FROM agents WHERE id = ?", a.ID); err != nil {
				return err
			}
		}
		self := a
		if err := tx.QueryRowContext(ctx, `INSERT INTO agents (id, host, port, zone, expires_at, grpc_addr) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port, zone = excluded.zone, expires_at = excluded.expires_at,
				grpc_addr = excluded.grpc_addr
			RETURNING node_id`, a.ID, a.Host, a.Port, a.Zone, plan.ExpiresAt.UnixMilli(), a.GRPCAddr).Scan(&self.NodeID); err != nil {
			return err
		}
		live = plan.Live(self)
		return nil
	})
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	return live, nil
}

// agentRows reads every agent row.
func agentRows(ctx context.Context, tx *sql.Tx) ([]metadata.AgentRow, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, node_id, host, port, zone, grpc_addr, expires_at FROM agents")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []metadata.AgentRow
	for rows.Next() {
		var r metadata.AgentRow
		var exp int64
		if err := rows.Scan(&r.ID, &r.NodeID, &r.Host, &r.Port, &r.Zone, &r.GRPCAddr, &exp); err != nil {
			return nil, err
		}
		r.ExpiresAt = time.UnixMilli(exp)
		out = append(out, r)
	}
	return out, rows.Err()
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
