-- CommitFile is idempotent by file key: a file keeps the results of its
-- commit, returned to any later commit of the same key. A JSON array:
-- [append time, [[base offset, duplicate (0/1), refusal code], ...]], one
-- item per batch in file order (refusal codes: metadata/internal/validate).
-- NULL for files committed before this migration.
ALTER TABLE files ADD COLUMN results TEXT;
