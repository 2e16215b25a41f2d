package store

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A notebook written before the hash cache key named the change time is migrated: its
// artefact rows keep their hashes and read with no ctime, so the next lookup of the file (with
// its real ctime) misses once and hashes it again; the journal still verifies.
func TestMigrationArtefactCTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: SchemaVersion - 1}))
	sum := strings.Repeat("ef", 32)
	mtime := time.Unix(1700000000, 0)
	if _, err := old.wdb.Exec(`INSERT INTO artefacts (path, size_bytes, mtime_ns, dev, inode, sha256, created_at, updated_at)
		VALUES ('/m/z.gguf', 10, ?, 1, 7, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`, mtime.UnixNano(), sum); err != nil {
		t.Fatal(err)
	}
	old.Close()

	n := must[*Notebook](t)(Open(path))
	defer n.Close()
	as := must[[]Artefact](t)(n.Artefacts(ctx))
	if len(as) != 1 || as[0].SHA256 != sum || !as[0].CTime.IsZero() {
		t.Fatalf("migrated artefact: %+v", as)
	}
	if _, ok, err := n.CachedArtefactFile(ctx, "/m/z.gguf", 10, mtime, time.Unix(1700000100, 0), 1, 7); err != nil || ok {
		t.Fatalf("an old row must miss a lookup with the file's ctime: ok=%v err=%v", ok, err)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("verify after the migration: %+v", rep)
	}
}
