-- schema version 8: telemetry samples (docs/telemetry.md). One row per reading of one sampler
-- during a leg: the source (nvml, nvidia-smi, amd-smi, rocm-smi, amdgpu, rapl, hwmon, cpufreq,
-- host), the time on the leg's clock, its points as JSON ([{"device","metric","value"}]) and
-- the error when the read gave nothing. Like bench_samples: append-only, written only while the
-- leg runs, hashed into the leg's samples_sha256 only for legs that have some (store/digest.go),
-- so the digest of every other leg is what it was before.
CREATE TABLE telemetry_samples (
  leg_id      INTEGER NOT NULL REFERENCES legs(id),
  seq         INTEGER NOT NULL,
  study_id    INTEGER NOT NULL,
  source      TEXT NOT NULL,
  t_ns        INTEGER NOT NULL,
  points_json TEXT NOT NULL DEFAULT '[]',
  error       TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (leg_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER telemetry_samples_no_update BEFORE UPDATE ON telemetry_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be changed'); END;
CREATE TRIGGER telemetry_samples_no_delete BEFORE DELETE ON telemetry_samples
  BEGIN SELECT RAISE(ABORT, 'samples are append-only: a recorded sample cannot be deleted'); END;
CREATE TRIGGER telemetry_samples_leg_running BEFORE INSERT ON telemetry_samples
  WHEN (SELECT state FROM legs WHERE id = NEW.leg_id) IS NOT 'running'
  BEGIN SELECT RAISE(ABORT, 'samples can only be added to a running leg'); END;
