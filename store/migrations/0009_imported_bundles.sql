-- schema version 9: studies imported from receipt bundles (`sparkbench import BUNDLE`,
-- docs/notebook.md "Importing a receipt bundle"). One row per imported bundle: its identity
-- (the SHA-256 of its SHA256SUMS, unique: a bundle is imported once), the study it became, and
-- where it came from: the origin notebook's study id, name and status, the origin notebook's
-- journal head as the bundle recorded it, the excerpt's first prev_hash and last hash, and the
-- bundle's machine records (fingerprints, no host names). The excerpt itself is kept entry by
-- entry in imported_journal, byte for byte as the bundle held it, so its chain can be walked
-- again from the notebook alone. Both tables are append-only; the home journal's own chain
-- gets new entries for the import (study.imported among them), never these.
CREATE TABLE imported_bundles (
  id                 INTEGER PRIMARY KEY,
  study_id           INTEGER NOT NULL UNIQUE REFERENCES studies(id),
  bundle_sha256      TEXT NOT NULL UNIQUE,
  kind               TEXT NOT NULL,
  source             TEXT NOT NULL DEFAULT '',
  sparkbench         TEXT NOT NULL DEFAULT '',
  origin_study_id    INTEGER NOT NULL,
  origin_name        TEXT NOT NULL,
  origin_status      TEXT NOT NULL DEFAULT '',
  origin_head_seq    INTEGER NOT NULL,
  origin_head_hash   TEXT NOT NULL,
  excerpt_first_seq  INTEGER NOT NULL,
  excerpt_last_seq   INTEGER NOT NULL,
  excerpt_prev_hash  TEXT NOT NULL,
  excerpt_last_hash  TEXT NOT NULL,
  machines_json      TEXT NOT NULL DEFAULT '[]',
  imported_at        TEXT NOT NULL,
  journal_seq        INTEGER NOT NULL
) STRICT;

CREATE TABLE imported_journal (
  import_id  INTEGER NOT NULL REFERENCES imported_bundles(id),
  seq        INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  study_id   INTEGER,
  at         TEXT NOT NULL,
  payload    TEXT NOT NULL,
  prev_hash  TEXT NOT NULL,
  hash       TEXT NOT NULL,
  PRIMARY KEY (import_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER imported_bundles_no_update BEFORE UPDATE ON imported_bundles
  BEGIN SELECT RAISE(ABORT, 'imported bundles are append-only: a recorded import cannot be changed'); END;
CREATE TRIGGER imported_bundles_no_delete BEFORE DELETE ON imported_bundles
  BEGIN SELECT RAISE(ABORT, 'imported bundles are append-only: a recorded import cannot be deleted'); END;
CREATE TRIGGER imported_journal_no_update BEFORE UPDATE ON imported_journal
  BEGIN SELECT RAISE(ABORT, 'an imported journal is append-only: an entry cannot be changed'); END;
CREATE TRIGGER imported_journal_no_delete BEFORE DELETE ON imported_journal
  BEGIN SELECT RAISE(ABORT, 'an imported journal is append-only: an entry cannot be deleted'); END;
