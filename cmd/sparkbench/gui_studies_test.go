package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// TestStudyServiceRunsTheDemoForReal drives the window's study service against a real
// notebook and the real llama-bench: demo registered, run, verdicts shown, and registering
// again finds the same study.
func TestStudyServiceRunsTheDemoForReal(t *testing.T) {
	llamatest.Binaries(t)
	tmp := t.TempDir()
	nb, err := store.Open(filepath.Join(tmp, "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	ctx := context.Background()
	id, err := svc.EnsureDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := svc.EnsureDemo(ctx); err != nil || again != id {
		t.Fatalf("demo registered twice: %d vs %d (%v)", again, id, err)
	}
	list, err := svc.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list: %+v %v", list, err)
	}
	var kinds []string
	sum, err := svc.Run(ctx, id, func(e study.Event) { kinds = append(kinds, string(e.Kind)) })
	if err != nil || sum.Halted || sum.LegsDone != sum.LegsTotal {
		t.Fatalf("run: %+v %v", sum, err)
	}
	joined := strings.Join(kinds, " ")
	for _, want := range []string{"run_started", "leg_started", "sample", "leg_finished", "verdict", "done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %s: %s", want, joined)
		}
	}
	rep, err := svc.Show(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Scoreboard {
		if s.Verdict.Outcome == study.Pending || s.Verdict.Outcome == study.Unresolvable {
			t.Errorf("%s still %s after the run: %s", s.Prediction, s.Verdict.Outcome, s.Verdict.Problem)
		}
	}
	if len(rep.Results) == 0 {
		t.Fatal("no results shown")
	}
}
