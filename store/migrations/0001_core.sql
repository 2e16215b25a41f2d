-- sparkbench notebook, schema version 1: the objects of docs/domain.md, llama-bench samples
-- and the hash-chained journal. Timestamps are UTC RFC 3339 text with 9 fractional digits.
-- JSON columns hold canonical JSON (sorted keys, no insignificant whitespace).

CREATE TABLE machines (
  id                INTEGER PRIMARY KEY,
  fingerprint       TEXT NOT NULL UNIQUE,
  hostname          TEXT NOT NULL DEFAULT '',
  cpu_model         TEXT NOT NULL DEFAULT '',
  cores             INTEGER,
  ram_bytes         INTEGER,
  os                TEXT NOT NULL DEFAULT '',
  kernel            TEXT NOT NULL DEFAULT '',
  gpu               TEXT NOT NULL DEFAULT '',
  driver            TEXT NOT NULL DEFAULT '',
  mem_bandwidth_gbs REAL,
  info_json         TEXT NOT NULL DEFAULT '{}',
  created_at        TEXT NOT NULL
) STRICT;

CREATE TABLE builds (
  id            INTEGER PRIMARY KEY,
  fingerprint   TEXT NOT NULL UNIQUE,
  dir           TEXT NOT NULL DEFAULT '',
  version_line  TEXT NOT NULL DEFAULT '',
  build_number  INTEGER,
  commit_id     TEXT NOT NULL DEFAULT '',
  backends      TEXT NOT NULL DEFAULT '',
  binaries_json TEXT NOT NULL DEFAULT '{}', -- binary name -> SHA-256
  created_at    TEXT NOT NULL
) STRICT;

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
  UNIQUE (path, size_bytes, mtime_ns)
) STRICT;

CREATE TABLE studies (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  kind        TEXT NOT NULL CHECK (kind IN ('throughput', 'capacity', 'concurrency')),
  status      TEXT NOT NULL DEFAULT 'draft'
              CHECK (status IN ('draft', 'registered', 'running', 'complete', 'halted', 'imported')),
  description TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
) STRICT;

-- The journal: every registered or recorded entry, hash-chained.
-- hash = SHA-256(prev_hash bytes || canonical JSON {"at","kind","payload","seq","study"}).
CREATE TABLE journal (
  seq       INTEGER PRIMARY KEY,
  kind      TEXT NOT NULL,
  study_id  INTEGER REFERENCES studies(id),
  at        TEXT NOT NULL,
  payload   TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash      TEXT NOT NULL UNIQUE
) STRICT;
CREATE INDEX journal_study ON journal (study_id, seq);
CREATE INDEX journal_kind ON journal (kind, seq);

CREATE TABLE plans (
  id             INTEGER PRIMARY KEY,
  study_id       INTEGER NOT NULL UNIQUE REFERENCES studies(id),
  sha256         TEXT NOT NULL,
  canonical_json TEXT NOT NULL,
  registered_at  TEXT NOT NULL,
  journal_seq    INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;

CREATE TABLE predictions (
  id            INTEGER PRIMARY KEY,
  study_id      INTEGER NOT NULL REFERENCES studies(id),
  key           TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('band', 'fork', 'comparison', 'question')),
  text          TEXT NOT NULL DEFAULT '',
  selector_json TEXT NOT NULL DEFAULT '{}',
  spec_json     TEXT NOT NULL DEFAULT '{}',
  registered_at TEXT NOT NULL,
  journal_seq   INTEGER NOT NULL REFERENCES journal(seq),
  UNIQUE (study_id, key)
) STRICT;

CREATE TABLE amendments (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id),
  target      TEXT NOT NULL,
  reason      TEXT NOT NULL,
  change_json TEXT NOT NULL DEFAULT '{}',
  created_at  TEXT NOT NULL,
  journal_seq INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;

CREATE TABLE legs (
  id              INTEGER PRIMARY KEY,
  study_id        INTEGER NOT NULL REFERENCES studies(id),
  label           TEXT NOT NULL DEFAULT '',
  kind            TEXT NOT NULL CHECK (kind IN ('bench', 'server', 'canary', 'imported', 'other')),
  machine_id      INTEGER REFERENCES machines(id),
  build_id        INTEGER REFERENCES builds(id),
  artefact_id     INTEGER REFERENCES artefacts(id),
  argv_json       TEXT NOT NULL DEFAULT '[]',
  env_json        TEXT NOT NULL DEFAULT '{}',  -- environment overrides only
  conditions_json TEXT NOT NULL DEFAULT '[]',  -- declared conditions ("download running")
  state           TEXT NOT NULL CHECK (state IN ('running', 'finished', 'interrupted', 'imported')),
  class           TEXT NOT NULL DEFAULT '',    -- outcome class: ok, crash, halted, failed, ...
  reason          TEXT NOT NULL DEFAULT '',
  exit_code       INTEGER,
  signal          TEXT NOT NULL DEFAULT '',
  started_at      TEXT NOT NULL,
  ended_at        TEXT,
  fingerprint     TEXT NOT NULL DEFAULT '',
  temp_before_c   REAL,
  temp_after_c    REAL,
  peak_rss_bytes  INTEGER,
  provenance_json TEXT,                        -- imported legs: file, SHA-256, format
  detail_json     TEXT NOT NULL DEFAULT '{}',
  owner_host      TEXT NOT NULL DEFAULT '',    -- the process recording a running leg
  owner_pid       INTEGER,
  owner_token     TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX legs_study ON legs (study_id, started_at);
CREATE INDEX legs_running ON legs (state) WHERE state = 'running';

CREATE TABLE deviations (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id),
  leg_id      INTEGER REFERENCES legs(id),
  description TEXT NOT NULL,
  detail_json TEXT NOT NULL DEFAULT '{}',
  created_at  TEXT NOT NULL,
  journal_seq INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;

-- The verbatim transcript, in gzip chunks as the leg wrote it (concatenate to read).
CREATE TABLE transcript_chunks (
  leg_id    INTEGER NOT NULL REFERENCES legs(id),
  seq       INTEGER NOT NULL,
  codec     TEXT NOT NULL CHECK (codec IN ('gzip')),
  raw_bytes INTEGER NOT NULL,
  data      BLOB NOT NULL,
  PRIMARY KEY (leg_id, seq)
) STRICT, WITHOUT ROWID;

-- llama-bench configuration: every field of a row except the test shape and the measurement.
-- NULL = the source did not carry the field (md tables).
CREATE TABLE bench_configs (
  id                    INTEGER PRIMARY KEY,
  key_sha256            TEXT NOT NULL UNIQUE,
  build_commit          TEXT,
  build_number          INTEGER,
  cpu_info              TEXT,
  gpu_info              TEXT,
  backends              TEXT,
  model_filename        TEXT,
  model_type            TEXT,
  model_size            INTEGER,
  model_n_params        INTEGER,
  n_batch               INTEGER,
  n_ubatch              INTEGER,
  n_threads             INTEGER,
  cpu_mask              TEXT,
  cpu_strict            INTEGER,
  poll                  INTEGER,
  type_k                TEXT,
  type_v                TEXT,
  n_gpu_layers          INTEGER,
  n_cpu_moe             INTEGER,
  split_mode            TEXT,
  main_gpu              INTEGER,
  no_kv_offload         INTEGER,
  flash_attn            INTEGER,
  devices               TEXT,
  tensor_split          TEXT,
  tensor_buft_overrides TEXT,
  load_mode             TEXT,
  lazy_mode             TEXT,
  embeddings            INTEGER,
  no_op_offload         INTEGER,
  no_host               INTEGER,
  repack                INTEGER,
  fit_target            INTEGER,
  fit_min_ctx           INTEGER
) STRICT;

-- One llama-bench row. known_mask: bit i set = benchfmt field i was present in the source.
-- Clustered by (leg_id, seq): a leg's rows are contiguous, and there is no rowid index to keep.
CREATE TABLE bench_samples (
  leg_id      INTEGER NOT NULL REFERENCES legs(id),
  seq         INTEGER NOT NULL,
  study_id    INTEGER NOT NULL,
  config_id   INTEGER NOT NULL REFERENCES bench_configs(id),
  n_prompt    INTEGER,
  n_gen       INTEGER,
  n_depth     INTEGER,
  test_time   TEXT,
  avg_ns      INTEGER,
  stddev_ns   INTEGER,
  avg_ts      REAL,
  stddev_ts   REAL,
  samples_ns  TEXT,  -- JSON array
  samples_ts  TEXT,  -- JSON array
  extra_json  TEXT,  -- fields llama-bench added that this build does not know
  known_mask  INTEGER NOT NULL,
  source_line INTEGER,
  PRIMARY KEY (leg_id, seq)
) STRICT, WITHOUT ROWID;
-- Running aggregates of bench_samples per (study, leg, configuration, test, depth), kept by the
-- writer in the same transaction as the rows: the plot-series query reads these few rows
-- instead of an index over every sample. Derived data: it can be rebuilt from bench_samples.
CREATE TABLE bench_series (
  study_id  INTEGER NOT NULL,
  leg_id    INTEGER NOT NULL,
  config_id INTEGER NOT NULL,
  n_prompt  INTEGER NOT NULL,
  n_gen     INTEGER NOT NULL,
  n_depth   INTEGER NOT NULL,
  n         INTEGER NOT NULL, -- rows with a rate (avg_ts)
  sum_ts    REAL NOT NULL,
  min_ts    REAL NOT NULL,
  max_ts    REAL NOT NULL,
  n_sd      INTEGER NOT NULL, -- rows with a standard deviation
  sum_sd    REAL NOT NULL,
  PRIMARY KEY (study_id, leg_id, config_id, n_prompt, n_gen, n_depth)
) STRICT, WITHOUT ROWID;

-- One client request. Times are Unix nanoseconds on the client's clock.
CREATE TABLE request_samples (
  leg_id               INTEGER NOT NULL REFERENCES legs(id),
  seq                  INTEGER NOT NULL,
  study_id             INTEGER NOT NULL,
  candidate            TEXT NOT NULL DEFAULT '',
  arm                  TEXT NOT NULL DEFAULT '',
  slots                INTEGER NOT NULL,
  clients              INTEGER NOT NULL,
  pass                 TEXT NOT NULL DEFAULT '',  -- forward / reverse
  phase                TEXT NOT NULL CHECK (phase IN ('warmup', 'measured', 'quality')),
  req_index            INTEGER NOT NULL,
  client_index         INTEGER,
  t_send_ns            INTEGER NOT NULL,
  t_first_ns           INTEGER,                   -- first SSE event carrying content
  t_last_ns            INTEGER,                   -- last token event
  t_end_ns             INTEGER,                   -- final event (stop)
  http_status          INTEGER,
  n_predict            INTEGER,                   -- requested
  tokens_predicted     INTEGER,                   -- server-reported
  tokens_evaluated     INTEGER,
  stop_type            TEXT NOT NULL DEFAULT '',
  prompt_ms            REAL,                      -- server timings
  predicted_ms         REAL,
  predicted_per_second REAL,
  error                TEXT NOT NULL DEFAULT '',
  extra_json           TEXT,
  PRIMARY KEY (leg_id, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX request_samples_cell ON request_samples (study_id, phase, candidate, arm, slots, clients, pass, leg_id);

CREATE TRIGGER request_samples_no_update BEFORE UPDATE ON request_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be changed'); END;
CREATE TRIGGER request_samples_no_delete BEFORE DELETE ON request_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be deleted'); END;

CREATE VIEW bench_rows AS
  SELECT s.leg_id, s.study_id, s.seq,
         c.build_commit, c.build_number, c.cpu_info, c.gpu_info, c.backends, c.model_filename,
         c.model_type, c.model_size, c.model_n_params, c.n_batch, c.n_ubatch, c.n_threads,
         c.cpu_mask, c.cpu_strict, c.poll, c.type_k, c.type_v, c.n_gpu_layers, c.n_cpu_moe,
         c.split_mode, c.main_gpu, c.no_kv_offload, c.flash_attn, c.devices, c.tensor_split,
         c.tensor_buft_overrides, c.load_mode, c.lazy_mode, c.embeddings, c.no_op_offload,
         c.no_host, c.repack, c.fit_target, c.fit_min_ctx,
         s.n_prompt, s.n_gen, s.n_depth, s.test_time, s.avg_ns, s.stddev_ns, s.avg_ts,
         s.stddev_ts, s.samples_ns, s.samples_ts, s.extra_json, s.known_mask, s.source_line, s.config_id
  FROM bench_samples s JOIN bench_configs c ON c.id = s.config_id;

CREATE TABLE verdicts (
  id            INTEGER PRIMARY KEY,
  study_id      INTEGER NOT NULL REFERENCES studies(id),
  prediction_id INTEGER NOT NULL REFERENCES predictions(id),
  source        TEXT NOT NULL CHECK (source IN ('computed', 'human')),
  outcome       TEXT NOT NULL,
  observed      REAL,
  detail_json   TEXT NOT NULL DEFAULT '{}',
  rationale     TEXT NOT NULL DEFAULT '',
  author        TEXT NOT NULL DEFAULT '',
  created_at    TEXT NOT NULL,
  journal_seq   INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;
CREATE INDEX verdicts_prediction ON verdicts (prediction_id, source, id);

CREATE TABLE findings (
  id          INTEGER PRIMARY KEY,
  number      INTEGER NOT NULL UNIQUE, -- F1, F2, ...
  study_id    INTEGER REFERENCES studies(id),
  title       TEXT NOT NULL,
  body        TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL,
  journal_seq INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;

CREATE TABLE finding_evidence (
  finding_id    INTEGER NOT NULL REFERENCES findings(id),
  leg_id        INTEGER REFERENCES legs(id),
  prediction_id INTEGER REFERENCES predictions(id),
  CHECK ((leg_id IS NULL) <> (prediction_id IS NULL))
) STRICT;
CREATE INDEX finding_evidence_finding ON finding_evidence (finding_id);

CREATE TABLE receipts (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id),
  format      TEXT NOT NULL,
  sha256      TEXT NOT NULL,
  bytes       INTEGER NOT NULL,
  path        TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL,
  journal_seq INTEGER NOT NULL REFERENCES journal(seq)
) STRICT;

-- Append-only: nothing recorded is ever edited in place.
CREATE TRIGGER journal_no_update BEFORE UPDATE ON journal
  BEGIN SELECT RAISE(ABORT, 'journal is append-only: entries cannot be changed'); END;
CREATE TRIGGER journal_no_delete BEFORE DELETE ON journal
  BEGIN SELECT RAISE(ABORT, 'journal is append-only: entries cannot be deleted'); END;
CREATE TRIGGER bench_samples_no_update BEFORE UPDATE ON bench_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be changed'); END;
CREATE TRIGGER bench_samples_no_delete BEFORE DELETE ON bench_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be deleted'); END;
CREATE TRIGGER bench_configs_no_update BEFORE UPDATE ON bench_configs
  BEGIN SELECT RAISE(ABORT, 'bench configurations are append-only'); END;
CREATE TRIGGER bench_configs_no_delete BEFORE DELETE ON bench_configs
  BEGIN SELECT RAISE(ABORT, 'bench configurations are append-only'); END;
CREATE TRIGGER transcript_no_update BEFORE UPDATE ON transcript_chunks
  BEGIN SELECT RAISE(ABORT, 'transcripts are append-only'); END;
CREATE TRIGGER transcript_no_delete BEFORE DELETE ON transcript_chunks
  BEGIN SELECT RAISE(ABORT, 'transcripts are append-only'); END;
CREATE TRIGGER plans_no_update BEFORE UPDATE ON plans
  BEGIN SELECT RAISE(ABORT, 'a registered plan is frozen: record an amendment instead'); END;
CREATE TRIGGER plans_no_delete BEFORE DELETE ON plans
  BEGIN SELECT RAISE(ABORT, 'a registered plan is frozen'); END;
CREATE TRIGGER predictions_no_update BEFORE UPDATE ON predictions
  BEGIN SELECT RAISE(ABORT, 'a registered prediction is frozen: record an amendment instead'); END;
CREATE TRIGGER predictions_no_delete BEFORE DELETE ON predictions
  BEGIN SELECT RAISE(ABORT, 'a registered prediction is frozen'); END;
CREATE TRIGGER amendments_no_update BEFORE UPDATE ON amendments
  BEGIN SELECT RAISE(ABORT, 'amendments are append-only'); END;
CREATE TRIGGER amendments_no_delete BEFORE DELETE ON amendments
  BEGIN SELECT RAISE(ABORT, 'amendments are append-only'); END;
CREATE TRIGGER deviations_no_update BEFORE UPDATE ON deviations
  BEGIN SELECT RAISE(ABORT, 'deviations are append-only'); END;
CREATE TRIGGER deviations_no_delete BEFORE DELETE ON deviations
  BEGIN SELECT RAISE(ABORT, 'deviations are append-only'); END;
CREATE TRIGGER verdicts_no_update BEFORE UPDATE ON verdicts
  BEGIN SELECT RAISE(ABORT, 'verdicts are append-only: record a new verdict'); END;
CREATE TRIGGER verdicts_no_delete BEFORE DELETE ON verdicts
  BEGIN SELECT RAISE(ABORT, 'verdicts are append-only'); END;
CREATE TRIGGER findings_no_update BEFORE UPDATE ON findings
  BEGIN SELECT RAISE(ABORT, 'findings are append-only: record a new finding'); END;
CREATE TRIGGER findings_no_delete BEFORE DELETE ON findings
  BEGIN SELECT RAISE(ABORT, 'findings are append-only'); END;
CREATE TRIGGER finding_evidence_no_update BEFORE UPDATE ON finding_evidence
  BEGIN SELECT RAISE(ABORT, 'finding evidence is append-only'); END;
CREATE TRIGGER finding_evidence_no_delete BEFORE DELETE ON finding_evidence
  BEGIN SELECT RAISE(ABORT, 'finding evidence is append-only'); END;
CREATE TRIGGER receipts_no_update BEFORE UPDATE ON receipts
  BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
CREATE TRIGGER receipts_no_delete BEFORE DELETE ON receipts
  BEGIN SELECT RAISE(ABORT, 'receipts are append-only'); END;
-- Rows join a leg only while it runs: a finished leg's digest in the journal stays true.
CREATE TRIGGER bench_samples_leg_running BEFORE INSERT ON bench_samples
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'samples can only be added to a running leg'); END;
CREATE TRIGGER request_samples_leg_running BEFORE INSERT ON request_samples
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'samples can only be added to a running leg'); END;
CREATE TRIGGER transcript_leg_running BEFORE INSERT ON transcript_chunks
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'transcripts can only be added to a running leg'); END;
CREATE TRIGGER legs_no_delete BEFORE DELETE ON legs
  BEGIN SELECT RAISE(ABORT, 'legs cannot be deleted'); END;
CREATE TRIGGER legs_frozen BEFORE UPDATE ON legs WHEN OLD.state <> 'running'
  BEGIN SELECT RAISE(ABORT, 'a finished leg is frozen'); END;
CREATE TRIGGER studies_no_delete BEFORE DELETE ON studies
  BEGIN SELECT RAISE(ABORT, 'studies cannot be deleted'); END;
