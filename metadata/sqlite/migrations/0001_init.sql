-- floe metadata schema, version 1 (the same shape as PostgreSQL's).
-- Times are unix milliseconds.

CREATE TABLE topics (
    id          INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
    name        TEXT    NOT NULL,
    partitions  INTEGER NOT NULL CHECK (partitions > 0),
    config      TEXT    NOT NULL DEFAULT '{}',     -- JSON object
    created_at  INTEGER NOT NULL,
    deleted_at  INTEGER
);
-- A name is unique among live topics; a deleted topic keeps its row (and id).
CREATE UNIQUE INDEX topics_live_name ON topics (name) WHERE deleted_at IS NULL;

CREATE TABLE partitions (
    topic_id          INTEGER NOT NULL REFERENCES topics (id),
    partition         INTEGER NOT NULL,
    log_start_offset  INTEGER NOT NULL DEFAULT 0,
    high_watermark    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (topic_id, partition)
) WITHOUT ROWID;

CREATE TABLE files (
    id                      INTEGER PRIMARY KEY AUTOINCREMENT,
    key                     TEXT    NOT NULL UNIQUE,
    size                    INTEGER NOT NULL,
    state                   TEXT    NOT NULL DEFAULT 'committed' CHECK (state IN ('committed', 'deleting')),
    created_at              INTEGER NOT NULL,
    marked_for_deletion_at  INTEGER
);

CREATE TABLE batches (
    topic_id       INTEGER NOT NULL,
    partition      INTEGER NOT NULL,
    base_offset    INTEGER NOT NULL,
    last_offset    INTEGER NOT NULL,
    file_id        INTEGER NOT NULL,
    byte_offset    INTEGER NOT NULL,
    byte_length    INTEGER NOT NULL,
    record_count   INTEGER NOT NULL,
    max_timestamp  INTEGER NOT NULL,
    append_time    INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition, base_offset)
) WITHOUT ROWID;
CREATE INDEX batches_timestamp ON batches (topic_id, partition, max_timestamp);
CREATE INDEX batches_file ON batches (file_id);

-- Idempotent producers: per (topic, partition, producer) the current epoch
-- and its last five accepted batches, oldest first, as a JSON array of
-- [base sequence, last sequence, base offset].
CREATE TABLE producer_state (
    topic_id     INTEGER NOT NULL,
    partition    INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    epoch        INTEGER NOT NULL,
    batches      TEXT    NOT NULL,
    PRIMARY KEY (topic_id, partition, producer_id)
) WITHOUT ROWID;

-- Named counters; producer_id is the last producer id handed out.
CREATE TABLE sequences (
    name   TEXT PRIMARY KEY,
    value  INTEGER NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('producer_id', 0);
