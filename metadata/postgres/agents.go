package postgres

import (
	"context"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// BeatAgent applies metadata.PlanAgentBeat: one statement reads the
// rows and the store's clock, one writes the plan (removes the expired
// rows that were not refreshed since, upserts a's row with its kept or a
// new node id).
func (s *Store) BeatAgent(ctx context.Context, a metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	if err := metadata.ValidateAgent(a, ttl); err != nil {
		return nil, err
	}
	var now time.Time
	var stored []metadata.AgentRow
	rows, err := s.pool.Query(ctx, `SELECT now(), g.id, g.node_id, g.host, g.port, g.zone, g.grpc_addr, g.expires_at
		FROM (VALUES (1)) v LEFT JOIN agents g ON true`)
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	for rows.Next() {
		var id, host, zone, grpcAddr *string
		var node, port *int32
		var exp *time.Time
		if err := rows.Scan(&now, &id, &node, &host, &port, &zone, &grpcAddr, &exp); err != nil {
			rows.Close()
			return nil, s.wrap("beat agent", err)
		}
		if id != nil {
			stored = append(stored, metadata.AgentRow{AgentInfo: metadata.AgentInfo{ID: *id, NodeID: *node, Host: *host, Port: *port, Zone: *zone, GRPCAddr: *grpcAddr}, ExpiresAt: *exp})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("beat agent", err)
	}
	plan := metadata.PlanAgentBeat(stored, a, now, ttl)
	goneIDs := make([]string, len(plan.Expired))
	goneExp := make([]time.Time, len(plan.Expired))
	for i, r := range plan.Expired {
		goneIDs[i], goneExp[i] = r.ID, r.ExpiresAt
	}
	self := a
	err = s.pool.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM agents g USING unnest($6::text[], $7::timestamptz[]) AS x(id, exp)
			 WHERE g.id = x.id AND g.expires_at = x.exp AND g.id <> $1
		)
		INSERT INTO agents AS g (id, host, port, zone, expires_at, grpc_addr) VALUES ($1, $2, $3, $4, $5, $9)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port, zone = excluded.zone,
			grpc_addr = excluded.grpc_addr, expires_at = excluded.expires_at,
			node_id = CASE WHEN $8 THEN g.node_id ELSE nextval(pg_get_serial_sequence('agents', 'node_id')) END
		RETURNING node_id`, a.ID, a.Host, a.Port, a.Zone, plan.ExpiresAt, goneIDs, goneExp, plan.KeepNodeID, a.GRPCAddr).Scan(&self.NodeID)
	if err != nil {
		return nil, s.wrap("beat agent", err)
	}
	return plan.Live(self), nil
}

// LeaveAgent removes agent id's row.
func (s *Store) LeaveAgent(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, "DELETE FROM agents WHERE id = $1", id); err != nil {
		return s.wrap("leave agent", err)
	}
	return nil
}
