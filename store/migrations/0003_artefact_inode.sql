-- schema version 3: the hash cache key also names the file's device and inode, so a file
-- replaced in place (same path, size and mtime, new inode) is hashed again.
ALTER TABLE artefacts ADD COLUMN dev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE artefacts ADD COLUMN inode INTEGER NOT NULL DEFAULT 0;
