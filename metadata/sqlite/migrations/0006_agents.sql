-- Live agents (metadata/agents.go): one row per agent process, refreshed
-- by its heartbeat until expires_at (unix ms). node_id is the Kafka broker
-- id the agent presents.
CREATE TABLE agents (
    node_id     INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT    NOT NULL UNIQUE,
    host        TEXT    NOT NULL,
    port        INTEGER NOT NULL,
    zone        TEXT    NOT NULL DEFAULT '',
    expires_at  INTEGER NOT NULL
);
