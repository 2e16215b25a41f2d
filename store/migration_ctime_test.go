package store

import (
	"fmt"
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
	// A leg names the row (its leg.started records the hash), as every study's legs do.
	st := must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput}))
	must[Plan](t)(old.RegisterPlan(ctx, st.ID, map[string]any{"reps": 2}))
	leg, _, err := old.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "m/d0", ArtefactID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.FinishLeg(ctx, leg.ID, LegOutcome{}); err != nil {
		t.Fatal(err)
	}
	const all = "SELECT id, path, size_bytes, mtime_ns, sha256, expected_sha256, status, name, architecture, quant, n_params, metadata_json, source, revision, created_at, updated_at, dev, inode FROM artefacts"
	var before, after []any
	scanAll := func(nb *Notebook, into *[]any) {
		vals := make([]any, 18)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := nb.wdb.QueryRow(all).Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		*into = vals
	}
	scanAll(old, &before)
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
	scanAll(n, &after)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the row was not copied as it was:\n%v\n%v", before, after)
	}
	if l := must[Leg](t)(n.Leg(ctx, leg.ID)); l.ArtefactID != 1 {
		t.Fatalf("the leg's artefact: %d", l.ArtefactID)
	}
	var fk int
	if err := n.wdb.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d %v", fk, err)
	}
	// The key is no longer unique: another content under it is a row of its own.
	b := must[Artefact](t)(n.UpsertArtefact(ctx, Artefact{Path: "/m/z.gguf", Size: 10, MTime: mtime, Dev: 1, Inode: 7, SHA256: strings.Repeat("12", 32)}))
	if b.ID == 1 {
		t.Fatalf("another content rewrote row 1: %+v", b)
	}
}
