-- schema version 13: the hash cache's rows are keyed by the file's path, size, mtime, device,
-- inode and change time (ctime), which a write in place followed by `touch -r` (restoring the
-- mtime) still moves, so such a file is hashed again. Rows written before have ctime 0 and miss
-- the cache once.
--
-- (path, size_bytes, mtime_ns) is no longer UNIQUE: a file whose content changed under the same
-- path, size and mtime gets a new row with its new SHA-256, and the row the earlier legs name
-- keeps the hash their leg.started entries recorded (docs/notebook.md "Models"). SQLite cannot
-- drop a table constraint, so the table is written again, every row with its id; the legs'
-- references to those ids are checked when the migration commits (defer_foreign_keys).
PRAGMA defer_foreign_keys = ON;
CREATE TABLE artefacts_v12 AS SELECT id, path, size_bytes, mtime_ns, sha256, expected_sha256, name,
  architecture, quant, n_params, metadata_json, source, revision, created_at, updated_at, dev, inode
  FROM artefacts;
DROP TABLE artefacts;
CREATE TABLE artefacts (
  id              INTEGER PRIMARY KEY,
  path            TEXT NOT NULL,
  size_bytes      INTEGER NOT NULL,
  mtime_ns        INTEGER NOT NULL,
  sha256          TEXT,            -- computed (streamed) hash, NULL until hashed
  expected_sha256 TEXT,            -- what the source publishes, entered by the user
  status          TEXT GENERATED ALWAYS AS (
                    CASE WHEN sha256 IS NULL OR expected_sha256 IS NULL THEN 'PENDING'
                         WHEN sha256 = expected_sha256 THEN 'VERIFIED'
                         ELSE 'MISMATCH' END) VIRTUAL,
  name            TEXT NOT NULL DEFAULT '',
  architecture    TEXT NOT NULL DEFAULT '',
  quant           TEXT NOT NULL DEFAULT '',
  n_params        INTEGER,
  metadata_json   TEXT NOT NULL DEFAULT '{}',
  source          TEXT NOT NULL DEFAULT '',
  revision        TEXT NOT NULL DEFAULT '',
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  dev             INTEGER NOT NULL DEFAULT 0,
  inode           INTEGER NOT NULL DEFAULT 0,
  ctime_ns        INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO artefacts (id, path, size_bytes, mtime_ns, sha256, expected_sha256, name, architecture, quant,
  n_params, metadata_json, source, revision, created_at, updated_at, dev, inode)
  SELECT id, path, size_bytes, mtime_ns, sha256, expected_sha256, name, architecture, quant,
  n_params, metadata_json, source, revision, created_at, updated_at, dev, inode FROM artefacts_v12;
DROP TABLE artefacts_v12;
CREATE INDEX artefacts_file ON artefacts (path, size_bytes, mtime_ns);
