-- schema version 12: run leases (docs/notebook.md "One run per study at a time"). A study is
-- run by one process at a time: the run takes its study's lease row (the holder's host, pid
-- and process start time) in one BEGIN IMMEDIATE transaction before it records anything, and
-- deletes it when the run ends. A row whose holder process no longer exists is taken over by
-- the next run, which journals lease.taken_over. Coordination, not record: rows come and go,
-- nothing here feeds a figure or a verdict, and the journal keeps what matters.
CREATE TABLE run_leases (
  study_id      INTEGER PRIMARY KEY REFERENCES studies(id),
  holder_host   TEXT NOT NULL,
  holder_pid    INTEGER NOT NULL,
  holder_token  TEXT NOT NULL DEFAULT '',
  acquired_at   TEXT NOT NULL
) STRICT;
