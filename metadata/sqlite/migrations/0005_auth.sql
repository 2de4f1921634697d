-- Security state (the auth package): bearer tokens (only the secret's
-- SHA-256), SCRAM credentials, ACLs. Times in unix microseconds;
-- enumerations by name.
CREATE TABLE auth_tokens (
    id          TEXT    PRIMARY KEY,
    principal   TEXT    NOT NULL,
    hash        BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,               -- NULL: never
    revoked     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE scram_credentials (
    user_name   TEXT    NOT NULL,
    mechanism   TEXT    NOT NULL,
    salt        BLOB    NOT NULL,
    iterations  INTEGER NOT NULL,
    stored_key  BLOB    NOT NULL,
    server_key  BLOB    NOT NULL,
    PRIMARY KEY (user_name, mechanism)
);

CREATE TABLE acls (
    principal      TEXT NOT NULL,
    host           TEXT NOT NULL,
    resource_type  TEXT NOT NULL,
    pattern_type   TEXT NOT NULL,
    name           TEXT NOT NULL,
    operation      TEXT NOT NULL,
    permission     TEXT NOT NULL,
    PRIMARY KEY (resource_type, name, pattern_type, principal, host, operation, permission)
);
