-- Live agents (metadata/agents.go): one row per agent process, refreshed
-- by its heartbeat until expires_at (PostgreSQL's clock). node_id is the
-- Kafka broker id the agent presents.
CREATE TABLE agents (
    id          text        PRIMARY KEY,
    node_id     serial      NOT NULL UNIQUE,
    host        text        NOT NULL,
    port        integer     NOT NULL,
    zone        text        NOT NULL DEFAULT '',
    expires_at  timestamptz NOT NULL
);
