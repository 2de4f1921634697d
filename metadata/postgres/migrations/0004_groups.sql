-- Consumer groups (metadata/groups.go): a row per group, a row per member,
-- a row per committed position. Partition lists are stored as
-- "topic:partition,..." sorted (package group's EncodeTPs), names as
-- comma-separated sorted lists, so that the heartbeat of a stable member is
-- one UPDATE comparing strings. Times are unix ms (PostgreSQL's clock).
CREATE TABLE consumer_groups (
    name          text    NOT NULL PRIMARY KEY,
    group_epoch   integer NOT NULL DEFAULT 0,
    topic_names   text    NOT NULL DEFAULT '',
    topics_sig    text    NOT NULL DEFAULT '',
    rebalance_at  bigint  NOT NULL DEFAULT 0,
    rebalance_ms  bigint  NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- No index besides the key: a heartbeat's update of last_heartbeat is HOT.
CREATE TABLE group_members (
    group_name          text    NOT NULL,
    member_id           text    NOT NULL,
    member_epoch        integer NOT NULL,
    subscription        text    NOT NULL,
    assigned            text    NOT NULL,
    revoking            text    NOT NULL,
    target              text    NOT NULL,
    revoking_since      bigint  NOT NULL,
    session_timeout_ms  bigint  NOT NULL,
    last_heartbeat      bigint  NOT NULL,
    joined_at           bigint  NOT NULL,
    PRIMARY KEY (group_name, member_id)
) WITH (fillfactor = 50);

CREATE TABLE group_offsets (
    group_name        text    NOT NULL,
    topic_id          bigint  NOT NULL,
    partition         integer NOT NULL,
    committed_offset  bigint  NOT NULL,
    metadata          text    NOT NULL,
    commit_time       bigint  NOT NULL,
    PRIMARY KEY (group_name, topic_id, partition)
) WITH (fillfactor = 70);
