package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/metadata"
)

// BeatAgent refreshes a's row, removes expired rows and reads the live
// agents, in one statement (one round trip). The final SELECT sees the
// statement's snapshot, so a's own row comes from the upsert's RETURNING.
func (s *Store) BeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	if err := metadata.ValidateAgent(a, ttl); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		WITH gone AS (
			DELETE FROM agents WHERE expires_at < now() AND id <> $1
		), me AS (
			INSERT INTO agents AS g (id, host, port, zone, expires_at)
			VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port,
				zone = excluded.zone, expires_at = excluded.expires_at
			RETURNING id, node_id, host, port, zone
		)
		SELECT id, node_id, host, port, zone FROM me
		UNION ALL
		SELECT id, node_id, host, port, zone FROM agents WHERE id <> $1 AND expires_at >= now()
		ORDER BY node_id`, a.ID, a.Host, a.Port, a.Zone, ttl.Milliseconds())
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	live, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metadata.AgentInfo, error) {
		var g metadata.AgentInfo
		err := r.Scan(&g.ID, &g.NodeID, &g.Host, &g.Port, &g.Zone)
		return g, err
	})
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	return live, nil
}

// LeaveAgent removes agent id's row.
func (s *Store) LeaveAgent(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM agents WHERE id = $1", id); err != nil {
		return s.wrap("leave agent", err)
	}
	return nil
}
