-- Security state (the auth package): bearer tokens, SCRAM credentials and
-- ACLs. Enumerations are stored by name (auth's String forms).

-- A token's secret is never stored, only its SHA-256.
CREATE TABLE auth_tokens (
    id          text        PRIMARY KEY,
    principal   text        NOT NULL,
    hash        bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,           -- NULL: never
    revoked     boolean     NOT NULL DEFAULT false
);

-- One salted credential per user and mechanism (RFC 5802), never the
-- password.
CREATE TABLE scram_credentials (
    user_name   text     NOT NULL,
    mechanism   text     NOT NULL,     -- SCRAM-SHA-256, SCRAM-SHA-512
    salt        bytea    NOT NULL,
    iterations  integer  NOT NULL,
    stored_key  bytea    NOT NULL,
    server_key  bytea    NOT NULL,
    PRIMARY KEY (user_name, mechanism)
);

-- An ACL is its seven fields; creating an identical one again is a no-op.
CREATE TABLE acls (
    principal      text NOT NULL,
    host           text NOT NULL,
    resource_type  text NOT NULL,      -- TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID
    pattern_type   text NOT NULL,      -- literal, prefixed
    name           text NOT NULL,
    operation      text NOT NULL,      -- READ, WRITE, ..., ALL
    permission     text NOT NULL,      -- allow, deny
    PRIMARY KEY (resource_type, name, pattern_type, principal, host, operation, permission)
);
