package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// A notebook written at schema version 5 is migrated to 6, keeping its studies, and then
// stores a study of a kind the schema never listed (a kind is the program's); a kind that is
// not a lowercase name is still refused.
func TestMigrationOpensStudyKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old, err := OpenWith(path, Options{migrateTo: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, err := old.CreateStudy(ctx, Study{Name: "old study", Kind: StudyCapacity, Status: StatusRegistered})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.CreateStudy(ctx, Study{Name: "ladder", Kind: "quant-ladder", Status: StatusRegistered}); err == nil {
		t.Fatal("schema 5 accepted a kind it does not list")
	}
	old.Close()

	n, err := OpenWith(path, Options{migrateTo: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	stats, err := n.Stats(ctx)
	if err != nil || stats.SchemaVersion != 6 {
		t.Fatalf("schema version %d after migration (%v), want 6", stats.SchemaVersion, err)
	}
	got, err := n.Study(ctx, st.ID)
	if err != nil || got.Kind != StudyCapacity || got.Name != "old study" {
		t.Fatalf("study after migration: %+v %v", got, err)
	}
	ladder, err := n.CreateStudy(ctx, Study{Name: "ladder", Kind: "quant-ladder", Status: StatusRegistered})
	if err != nil {
		t.Fatalf("a new kind after migration: %v", err)
	}
	if got, err := n.Study(ctx, ladder.ID); err != nil || got.Kind != "quant-ladder" {
		t.Fatalf("new-kind study: %+v %v", got, err)
	}
	for _, bad := range []string{"", "Quant", "quant ladder", "9lives", "ladder;drop"} {
		if _, err := n.CreateStudy(ctx, Study{Name: "bad " + bad, Kind: bad, Status: StatusRegistered}); err == nil || !strings.Contains(err.Error(), "CHECK") {
			t.Errorf("kind %q accepted (%v)", bad, err)
		}
	}
	var ok string
	if err := n.rdb.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check %q %v", ok, err)
	}
}
