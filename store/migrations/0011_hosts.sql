-- schema version 11: bench hosts as the user registered them in the notebook (`sparkbench host
-- add`, the window's Preferences, docs/fleet.md "Hosts in the notebook"). Append-only: each
-- registration is a new row; a change of a host is a new row for the same name and the latest
-- row (highest id) of a name wins; removing a host is a row with removed = 1. Each row is
-- journaled (host.recorded, journal_seq). model_dirs_json is a JSON array of strings,
-- labels_json a JSON object of strings; validation (the hosts file's rules) is the app's.
CREATE TABLE hosts (
  id               INTEGER PRIMARY KEY,
  name             TEXT NOT NULL,
  ssh              TEXT NOT NULL DEFAULT '',
  llama_dir        TEXT NOT NULL DEFAULT '',
  model_dirs_json  TEXT NOT NULL DEFAULT '[]',
  rpc_address      TEXT NOT NULL DEFAULT '',
  labels_json      TEXT NOT NULL DEFAULT '{}',
  removed          INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1)),
  created_at       TEXT NOT NULL,
  journal_seq      INTEGER NOT NULL
) STRICT;

CREATE INDEX hosts_by_name ON hosts (name, id);

CREATE TRIGGER hosts_no_update BEFORE UPDATE ON hosts
  BEGIN SELECT RAISE(ABORT, 'hosts are append-only: a change of a host is a new row for its name'); END;
CREATE TRIGGER hosts_no_delete BEFORE DELETE ON hosts
  BEGIN SELECT RAISE(ABORT, 'hosts are append-only: removing a host is a new row with removed = 1'); END;
