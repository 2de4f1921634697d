-- Retention and the file lifecycle (the compactor).
--
-- The compactor finds a dead file's last batches by file id: without this
-- index every such lookup would scan batches. It costs each commit one
-- more index insert per batch (BenchmarkCommitFile measures it). Building
-- it blocks commits for the duration: on a big database, build it first
-- with CREATE INDEX CONCURRENTLY batches_file ON batches (file_id), and
-- this migration finds it there.
CREATE INDEX IF NOT EXISTS batches_file ON batches (file_id);

-- Files waiting for deletion, oldest mark first.
CREATE INDEX files_deleting ON files (marked_for_deletion_at) WHERE state = 'deleting';

-- Compactor jobs: each is held by one compactor at a time through a lease
-- (owner until expires_at, PostgreSQL's clock), renewed while it runs; the
-- holder keeps the job's cursor here so that a successor resumes.
CREATE TABLE compactor_leases (
    job         text        PRIMARY KEY,
    owner       text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    cursor      text        NOT NULL DEFAULT ''
);
