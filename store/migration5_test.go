package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// A notebook written at schema version 4 is migrated to 5, keeping its studies, and then
// accepts the "incomplete" status (and still refuses a status that is not one).
func TestMigrationAddsIncompleteStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old, err := OpenWith(path, Options{migrateTo: 4})
	if err != nil {
		t.Fatal(err)
	}
	st, err := old.CreateStudy(ctx, Study{Name: "old study", Kind: StudyThroughput, Status: StatusRegistered})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetStudyStatus(ctx, st.ID, StatusIncomplete); err == nil {
		t.Fatal("schema 4 accepted the incomplete status")
	}
	old.Close()

	n, err := OpenWith(path, Options{migrateTo: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	stats, err := n.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.SchemaVersion != 5 {
		t.Fatalf("schema version %d after migration, want 5", stats.SchemaVersion)
	}
	if err := n.SetStudyStatus(ctx, st.ID, StatusIncomplete); err != nil {
		t.Fatalf("incomplete after migration: %v", err)
	}
	got, err := n.Study(ctx, st.ID)
	if err != nil || got.Status != StatusIncomplete || got.Name != "old study" {
		t.Fatalf("study after migration: %+v %v", got, err)
	}
	if err := n.SetStudyStatus(ctx, st.ID, "nearly"); err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("a status that is not one was accepted: %v", err)
	}
	var ok string
	if err := n.rdb.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check %q %v", ok, err)
	}
}
