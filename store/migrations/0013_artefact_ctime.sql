-- schema version 13: the hash cache key also names the file's change time (ctime), which a
-- write in place followed by `touch -r` (restoring the mtime) still moves, so such a file is
-- hashed again. Rows written before have ctime 0 and miss the cache once.
ALTER TABLE artefacts ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0;
