-- Consumer groups (metadata/groups.go): a row per group, a row per member,
-- a row per committed position. Partition lists are stored as
-- "topic:partition,..." sorted (package group's EncodeTPs), names as
-- comma-separated sorted lists. Times are unix ms.
CREATE TABLE consumer_groups (
    name          TEXT    NOT NULL PRIMARY KEY,
    group_epoch   INTEGER NOT NULL DEFAULT 0,
    topic_names   TEXT    NOT NULL DEFAULT '',
    topics_sig    TEXT    NOT NULL DEFAULT '',
    rebalance_at  INTEGER NOT NULL DEFAULT 0,
    rebalance_ms  INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE group_members (
    group_name          TEXT    NOT NULL,
    member_id           TEXT    NOT NULL,
    member_epoch        INTEGER NOT NULL,
    subscription        TEXT    NOT NULL,
    assigned            TEXT    NOT NULL,
    revoking            TEXT    NOT NULL,
    target              TEXT    NOT NULL,
    revoking_since      INTEGER NOT NULL,
    session_timeout_ms  INTEGER NOT NULL,
    last_heartbeat      INTEGER NOT NULL,
    joined_at           INTEGER NOT NULL,
    PRIMARY KEY (group_name, member_id)
) WITHOUT ROWID;

CREATE TABLE group_offsets (
    group_name        TEXT    NOT NULL,
    topic_id          INTEGER NOT NULL,
    partition         INTEGER NOT NULL,
    committed_offset  INTEGER NOT NULL,
    metadata          TEXT    NOT NULL,
    commit_time       INTEGER NOT NULL,
    PRIMARY KEY (group_name, topic_id, partition)
) WITHOUT ROWID;
