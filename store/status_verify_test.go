package store

import (
	"strings"
	"testing"
)

// A study's status is held to the journal: a draft by its study.created entry, a registered
// study by its plan.registered entry, a study run since by its last study.status entry.
// Changing the row behind the store's back is caught naming the entry and both values; the
// untouched notebook verifies. (A study of an older version, whose entries hold no status:
// TestFaultsOldNotebookStillVerifies.)
func TestVerifyHoldsTheStudyStatus(t *testing.T) {
	n, path := openTemp(t)
	draft := must[Study](t)(n.CreateStudy(ctx, Study{Name: "draft", Kind: StudyThroughput, Status: StatusDraft}))
	reg := must[Study](t)(n.CreateStudy(ctx, Study{Name: "registered", Kind: StudyThroughput, Status: StatusDraft}))
	must[Plan](t)(n.RegisterPlan(ctx, reg.ID, map[string]any{"reps": 2}))
	ran, _ := fillStudy(t, n, "ran")
	for _, s := range []string{StatusRunning, StatusIncomplete, StatusComplete} {
		if err := n.SetStudyStatus(ctx, ran, s); err != nil {
			t.Fatal(err)
		}
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("intact notebook: %+v", rep.Broken)
	}
	db := rawDB(t, path)
	for _, c := range []struct {
		id        int64
		was, to   string
		entryKind string
	}{
		{draft.ID, StatusDraft, StatusComplete, KindStudyCreated},
		{reg.ID, StatusRegistered, StatusComplete, KindPlanRegistered},
		{ran, StatusComplete, StatusIncomplete, KindStudyStatus},
	} {
		if _, err := db.Exec("UPDATE studies SET status = ? WHERE id = ?", c.to, c.id); err != nil {
			t.Fatal(err)
		}
		rep := must[VerifyReport](t)(n.Verify(ctx))
		b := rep.Broken
		if rep.OK() || b.Table != "studies" || b.Column != "status" || b.Kind != c.entryKind || !strings.Contains(b.Reason, `"`+c.to+`", the journal recorded "`+c.was+`"`) {
			t.Errorf("study %d %s -> %s: %+v", c.id, c.was, c.to, b)
		}
		if _, err := db.Exec("UPDATE studies SET status = ? WHERE id = ?", c.was, c.id); err != nil {
			t.Fatal(err)
		}
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("restored notebook: %+v", rep.Broken)
	}
}
