package store

import (
	"errors"
	"path/filepath"
	"testing"
)

// A notebook written at schema version 9 (with a finished leg) opens read-only with no
// summaries, then migrates to 10: its journal still verifies, summaries are kept insert-only
// (the same version again changes nothing; a new version is a new row, read newest first; an
// UPDATE is refused), read back in one query by kind, and a read-only notebook reads them but
// refuses to write one.
func TestMigration10StudySummaries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 9}))
	st := must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput, Status: StatusRunning}))
	leg, _, err := old.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "before", Argv: []string{"llama-bench"}})
	if err != nil {
		t.Fatal(err)
	}
	must2(t)(old.FinishLeg(ctx, leg.ID, LegOutcome{Class: "ok"}))
	old.Close()

	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	if got, err := ro.StudySummaries(ctx, "k"); err != nil || len(got) != 0 {
		t.Fatalf("schema 9, read only: %v %v", got, err)
	}
	ro.Close()

	n := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 10}))
	if stats := must[Stats](t)(n.Stats(ctx)); stats.SchemaVersion != 10 {
		t.Fatalf("schema %d (head %d)", stats.SchemaVersion, SchemaVersion)
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("migrated notebook does not verify: %v", rep.Broken)
	}
	st2 := must[Study](t)(n.CreateStudy(ctx, Study{Name: "new", Kind: StudyThroughput}))
	for _, p := range []struct {
		id            int64
		kind, version string
		payload       string
	}{{st.ID, "k", "v1", "one"}, {st.ID, "k", "v1", "ignored"}, {st.ID, "k", "v2", "two"}, {st.ID, "other", "v1", "x"}, {st2.ID, "k", "w", ""}} {
		if err := n.PutStudySummary(ctx, p.id, p.kind, p.version, []byte(p.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.PutStudySummary(ctx, st.ID, "k", "", nil); err == nil {
		t.Error("a summary without a version was kept")
	}
	if _, err := n.wdb.Exec("UPDATE study_summaries SET payload = x'00'"); err == nil {
		t.Error("a summary was updated")
	}
	if _, err := n.wdb.Exec("DELETE FROM study_summaries"); err == nil {
		t.Error("a summary was deleted")
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("notebook with summaries does not verify: %v", rep.Broken)
	}
	n.Close()

	ro = must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	defer ro.Close()
	got := must[map[int64][]Summary](t)(ro.StudySummaries(ctx, "k"))
	a, b := got[st.ID], got[st2.ID]
	if len(got) != 2 || len(a) != 2 || a[0].Version != "v2" || string(a[0].Payload) != "two" || a[1].Version != "v1" || string(a[1].Payload) != "one" ||
		len(b) != 1 || b[0].Version != "w" || len(b[0].Payload) != 0 {
		t.Fatalf("summaries %+v", got)
	}
	if err := ro.PutStudySummary(ctx, st.ID, "k", "v3", []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only put: %v", err)
	}
	if one := must[StudySummary](t)(ro.StudySummaryOf(ctx, st2.ID)); one.ID != st2.ID || one.Name != "new" {
		t.Fatalf("StudySummaryOf: %+v", one)
	}
	if _, err := ro.StudySummaryOf(ctx, 99); err == nil {
		t.Error("StudySummaryOf a study that does not exist")
	}
}
