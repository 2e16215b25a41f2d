-- schema version 4: the status of each llama-bench row of a run leg, written when the leg
-- ends (a row's status is known only then): result (counts), flagged (a gate flagged it),
-- discarded (the leg failed: kept for the record, never a result). Rows of a leg that never
-- finished (interrupted) and imported rows have no status row.
CREATE TABLE bench_row_status (
  leg_id INTEGER NOT NULL,
  seq    INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('result', 'flagged', 'discarded')),
  PRIMARY KEY (leg_id, seq),
  FOREIGN KEY (leg_id, seq) REFERENCES bench_samples (leg_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER bench_row_status_no_update BEFORE UPDATE ON bench_row_status
  BEGIN SELECT RAISE(ABORT, 'row statuses are append-only'); END;
CREATE TRIGGER bench_row_status_no_delete BEFORE DELETE ON bench_row_status
  BEGIN SELECT RAISE(ABORT, 'row statuses are append-only'); END;
-- A status is written in the transaction that finishes the leg, so only while it runs.
CREATE TRIGGER bench_row_status_leg_running BEFORE INSERT ON bench_row_status
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'row statuses are written when a running leg finishes'); END;
