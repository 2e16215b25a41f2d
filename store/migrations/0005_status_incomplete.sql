-- schema version 5: a study may end "incomplete": its run is over (nothing is left to run now)
-- but some legs or server lifetimes ended without results (crashed, bad arguments, …), so the
-- study must not read "complete". SQLite cannot alter a CHECK constraint in place; the allowed
-- statuses only grow, every stored row already satisfies the new constraint and the on-disk
-- format does not change, so the table's SQL text is rewritten (SQLite's documented procedure
-- for such changes; the Go side bumps PRAGMA schema_version in the same transaction).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, '''halted'', ''imported'')', '''halted'', ''imported'', ''incomplete'')')
 WHERE type = 'table' AND name = 'studies';
PRAGMA writable_schema = OFF;
