-- floe metadata schema, version 1.

CREATE TABLE topics (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL,
    partitions  integer     NOT NULL CHECK (partitions > 0),
    config      jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
-- A name is unique among live topics; a deleted topic keeps its row (and id).
CREATE UNIQUE INDEX topics_live_name ON topics (name) WHERE deleted_at IS NULL;

CREATE TABLE partitions (
    topic_id          bigint  NOT NULL REFERENCES topics (id),
    partition         integer NOT NULL,
    log_start_offset  bigint  NOT NULL DEFAULT 0,
    high_watermark    bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (topic_id, partition)
) WITH (fillfactor = 50); -- room for HOT updates of the high watermark

CREATE TABLE files (
    id                      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key                     text        NOT NULL UNIQUE,
    size                    bigint      NOT NULL,
    state                   text        NOT NULL DEFAULT 'committed' CHECK (state IN ('committed', 'deleting')),
    created_at              timestamptz NOT NULL DEFAULT now(),
    marked_for_deletion_at  timestamptz
);

-- No foreign keys on the hot path: rows are written by floe_commit_file only,
-- under the partitions' row locks.
CREATE TABLE batches (
    topic_id       bigint  NOT NULL,
    partition      integer NOT NULL,
    base_offset    bigint  NOT NULL,
    last_offset    bigint  NOT NULL,
    file_id        bigint  NOT NULL,
    byte_offset    bigint  NOT NULL,
    byte_length    bigint  NOT NULL,
    record_count   integer NOT NULL,
    max_timestamp  bigint  NOT NULL, -- unix ms
    append_time    bigint  NOT NULL, -- unix ms, PostgreSQL's clock
    PRIMARY KEY (topic_id, partition, base_offset)
);
-- ListOffset by time: max timestamps follow commit order closely, so a
-- BRIN index finds recent batches at almost no cost to commits (a btree on
-- (topic_id, partition, max_timestamp) costs every commit a random leaf
-- insert per batch); old timestamps are found from the start of the log.
CREATE INDEX batches_timestamp ON batches USING brin (max_timestamp);
-- No index on file_id: it would cost every commit; whoever needs a file's
-- batches (the compactor) adds the index it needs in its own migration.

-- Idempotent producers: per (topic, partition, producer) the current epoch
-- and its last five accepted batches, oldest first (the last one's last
-- sequence is the producer's last sequence).
CREATE TABLE producer_state (
    topic_id      bigint   NOT NULL,
    partition     integer  NOT NULL,
    producer_id   bigint   NOT NULL,
    epoch         smallint NOT NULL,
    base_seqs     integer[] NOT NULL,
    last_seqs     integer[] NOT NULL,
    base_offsets  bigint[]  NOT NULL,
    PRIMARY KEY (topic_id, partition, producer_id)
) WITH (fillfactor = 50); -- room for HOT updates

CREATE SEQUENCE producer_ids START WITH 1;
