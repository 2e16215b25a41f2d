-- schema version 7: llama-batched-bench rows. One row per (PP, TG, B) measurement of a leg, as
-- the tool printed it (times in seconds, rates in tokens per second), with the settings it
-- printed (NULL = the source did not print the setting: the 2023 table has none). Imported
-- files are legs of kind 'imported'; legs run by sparkbench are of the new leg kind 'batched'.
-- Like bench_samples: append-only, written only while the leg runs, hashed into the leg's
-- samples_sha256 when it finishes (store/digest.go).
CREATE TABLE batched_samples (
  leg_id          INTEGER NOT NULL REFERENCES legs(id),
  seq             INTEGER NOT NULL,
  study_id        INTEGER NOT NULL,
  model_filename  TEXT,             -- the -m argument of a run leg; NULL for imported files
  model_sha256    TEXT,             -- that file's SHA-256 when the run hashed it
  pp              INTEGER NOT NULL, -- prompt tokens per sequence
  tg              INTEGER NOT NULL, -- generated tokens per sequence
  b               INTEGER NOT NULL, -- parallel sequences (the tool's pl)
  n_kv            INTEGER NOT NULL,
  t_pp            REAL NOT NULL,
  s_pp            REAL NOT NULL,
  t_tg            REAL NOT NULL,
  s_tg            REAL NOT NULL,
  t               REAL NOT NULL,
  s               REAL NOT NULL,
  n_kv_max        INTEGER,
  n_batch         INTEGER,
  n_ubatch        INTEGER,
  flash_attn      INTEGER,
  is_pp_shared    INTEGER,
  is_tg_separate  INTEGER,
  n_gpu_layers    INTEGER,
  n_threads       INTEGER,
  n_threads_batch INTEGER,
  extra_json      TEXT,             -- settings or fields this build does not know
  source_line     INTEGER,
  PRIMARY KEY (leg_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER batched_samples_no_update BEFORE UPDATE ON batched_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be changed'); END;
CREATE TRIGGER batched_samples_no_delete BEFORE DELETE ON batched_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be deleted'); END;
CREATE TRIGGER batched_samples_leg_running BEFORE INSERT ON batched_samples
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'samples can only be added to a running leg'); END;

-- The leg kind 'batched' (a llama-batched-bench run). As in versions 5 and 6 the allowed values
-- only grow and the on-disk format does not change, so the table's SQL text is rewritten.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, '''imported'', ''other'')', '''imported'', ''other'', ''batched'')')
 WHERE type = 'table' AND name = 'legs';
PRAGMA writable_schema = OFF;
