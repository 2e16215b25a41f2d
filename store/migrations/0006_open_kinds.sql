-- schema version 6: the study kinds are the program's (a study kind is registered in Go, one
-- package each), not a list in the schema: a new kind needs no migration. A kind is still a
-- name of lowercase letters, digits and dashes that starts with a letter. Every stored row
-- satisfies the wider constraint and the on-disk format does not change, so the table's SQL
-- text is rewritten, as in version 5.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'CHECK (kind IN (''throughput'', ''capacity'', ''concurrency''))',
                     'CHECK (kind GLOB ''[a-z]*'' AND kind NOT GLOB ''*[^a-z0-9-]*'')')
 WHERE type = 'table' AND name = 'studies';
PRAGMA writable_schema = OFF;
