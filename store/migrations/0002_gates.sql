-- schema version 2: gate results (SLO gates of serving cells, CV gates, backend marker gates).

-- One gate evaluation (a cell's SLO gate, a CV gate, a backend marker gate, ...).
CREATE TABLE gates (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id),
  leg_id      INTEGER REFERENCES legs(id),
  cell_json   TEXT NOT NULL DEFAULT '{}',
  name        TEXT NOT NULL,
  code        TEXT NOT NULL DEFAULT '',  -- failure code, e.g. forward:ttft_ms_p95_above_maximum
  passed      INTEGER NOT NULL CHECK (passed IN (0, 1)),
  observed    REAL,
  limit_value REAL,
  detail_json TEXT NOT NULL DEFAULT '{}',
  created_at  TEXT NOT NULL
) STRICT;
CREATE INDEX gates_study ON gates (study_id, leg_id);
CREATE TRIGGER gates_no_update BEFORE UPDATE ON gates
  BEGIN SELECT RAISE(ABORT, 'gate results are append-only'); END;
CREATE TRIGGER gates_no_delete BEFORE DELETE ON gates
  BEGIN SELECT RAISE(ABORT, 'gate results are append-only'); END;
