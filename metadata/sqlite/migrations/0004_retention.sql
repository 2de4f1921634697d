-- Retention and the file lifecycle (the compactor). batches(file_id) is
-- indexed since version 1.
CREATE INDEX files_deleting ON files (marked_for_deletion_at) WHERE state = 'deleting';

-- Compactor jobs: one holder at a time (expires_at in unix ms), with the
-- job's cursor.
CREATE TABLE compactor_leases (
    job         TEXT    PRIMARY KEY,
    owner       TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    cursor      TEXT    NOT NULL DEFAULT ''
);
