package workbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
	"sparkbench/store"
)

// Each CLI verb reads a plan through the kind that claims its schema when that kind is one of
// the verb's, else through the verb's default kind (which then says what is wrong with the
// file): a capacity plan given to `study` goes to throughput, a throughput plan given to
// `capacity` to capacity.
func TestPlanKindPerVerb(t *testing.T) {
	throughput, capacityKind := DefaultKind("study"), DefaultKind("capacity")
	if throughput == nil || capacityKind == nil || throughput.Names[0] != kinds.Throughput || capacityKind.Names[0] != kinds.Capacity {
		t.Fatalf("default kinds: %+v %+v", throughput, capacityKind)
	}
	for _, c := range []struct {
		verb, schema string
		want         *Kind
	}{
		{"study", study.SchemaThroughput, throughput},
		{"study", capacity.SchemaCapacity, throughput},
		{"study", "", throughput},
		{"capacity", capacity.SchemaCapacity, capacityKind},
		{"capacity", study.SchemaThroughput, capacityKind},
	} {
		if got := PlanKind(c.verb, c.schema); got != c.want {
			t.Errorf("PlanKind(%q, %q) = %v, want %v", c.verb, c.schema, got.Names, c.want.Names)
		}
	}
	unregister := RegisterKind(Kind{Names: []string{"note-kind"}, PlanSchema: "sparkbench.note/v1"})
	defer unregister()
	if got := PlanKind("study", "sparkbench.note/v1"); got == nil || got.Names[0] != "note-kind" {
		t.Errorf("a registered kind's schema under study: %v", got)
	}
	if got := PlanKind("capacity", "sparkbench.note/v1"); got != capacityKind {
		t.Errorf("a study-verb kind's schema under capacity: %v", got.Names)
	}
}

// FindStudy gives a study to the kind of its verb that takes the verb; a study of another
// verb's kind gets the verb's default kind's refusal, worded as before.
func TestFindStudyPerVerb(t *testing.T) {
	ctx := context.Background()
	nb, err := store.Open(filepath.Join(t.TempDir(), "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	mk := func(name, kind string) int64 {
		st, err := nb.CreateStudy(ctx, store.Study{Name: name, Kind: kind, Status: store.StatusRegistered})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nb.RegisterPlan(ctx, st.ID, map[string]string{"name": name}); err != nil {
			t.Fatal(err)
		}
		return st.ID
	}
	tp, cp, np := mk("a throughput study", kinds.Throughput), mk("a capacity study", kinds.Capacity), mk("a note", "note-kind")
	show := func(k *Kind) bool { return k.Show != nil }

	k, id, err := FindStudy(ctx, nb, "study", "a throughput study", show)
	if err != nil || id != tp || k.Names[0] != kinds.Throughput {
		t.Errorf("throughput under study: %v %d %v", k, id, err)
	}
	k, id, err = FindStudy(ctx, nb, "capacity", "2", show)
	if err != nil || id != cp || k.Names[0] != kinds.Capacity {
		t.Errorf("capacity under capacity: %v %d %v", k, id, err)
	}
	if _, _, err := FindStudy(ctx, nb, "study", "2", show); err == nil ||
		err.Error() != "study 2 (a capacity study) is a capacity study; this command works on throughput studies" {
		t.Errorf("capacity under study: %v", err)
	}
	if _, _, err := FindStudy(ctx, nb, "capacity", "1", show); err == nil || !strings.Contains(err.Error(), "this command works on capacity and concurrency studies") {
		t.Errorf("throughput under capacity: %v", err)
	}
	if _, _, err := FindStudy(ctx, nb, "study", "no such study", show); err == nil || !strings.Contains(err.Error(), "`sparkbench study register FILE` prints a new study's id") {
		t.Errorf("no such study: %v", err)
	}
	// A kind registered later, with a report, is found under its verb; without one it is not.
	unregister := RegisterKind(Kind{Names: []string{"note-kind"}, Show: func(context.Context, *store.Notebook, store.Study) (*Shown, error) { return &Shown{}, nil }})
	k, id, err = FindStudy(ctx, nb, "study", "a note", show)
	unregister()
	if err != nil || id != np || k.Names[0] != "note-kind" {
		t.Errorf("a registered kind: %v %d %v", k, id, err)
	}
	if _, _, err := FindStudy(ctx, nb, "study", "a note", show); err == nil || !strings.Contains(err.Error(), "is a note-kind study") {
		t.Errorf("an unregistered kind: %v", err)
	}
}
