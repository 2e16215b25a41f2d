-- schema version 10: study summaries (docs/overview.md, "The stored summary"). Derived data, not
-- what the lab registered: one small blob per (study, kind, version) computed from the study's
-- rows by a reader (kind names the reader and its format, e.g. overview.series/v1) and kept so
-- that reader need not decode every row again. version is the study's state when the summary
-- was computed (its status, legs, plan and last journal entry); a reader uses a summary only
-- when its version is the study's current one, so a study that changed is read from its rows
-- again. Insert-only (INSERT OR IGNORE: a newer version is a new row, with a higher rowid: a
-- reader reads them in rowid order, without sorting the blobs); nothing is journaled,
-- no digest, export or bundle reads this table, and the rows stay the record.
CREATE TABLE study_summaries (
  study_id    INTEGER NOT NULL REFERENCES studies(id),
  kind        TEXT NOT NULL,
  version     TEXT NOT NULL,
  payload     BLOB NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (study_id, kind, version)
) STRICT;

CREATE TRIGGER study_summaries_no_update BEFORE UPDATE ON study_summaries
  BEGIN SELECT RAISE(ABORT, 'study summaries are insert-only: a new version is a new row'); END;
CREATE TRIGGER study_summaries_no_delete BEFORE DELETE ON study_summaries
  BEGIN SELECT RAISE(ABORT, 'study summaries are insert-only: a new version is a new row'); END;
