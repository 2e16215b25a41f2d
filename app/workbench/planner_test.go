package workbench

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// The window's planner call gives what `study validate` prints: after one study of the tiny
// model (its history), RepetitionPlanner's answers equal ValidateThroughputWith's Planner for
// the same plan, and PlannerLines words them under the heading, one line per model and test.
func TestRepetitionPlannerIsValidatesPlanner(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb, err := store.Open(filepath.Join(dir, "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	plan := func(name string) []byte {
		return []byte(fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "tiny", "path": %q, "sha256": "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"}],
  "axes": {"depths": [0], "n_prompt": [16], "n_gen": [8], "reps": 3, "threads": [1]},
  "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}}`, name, tiny))
	}
	ctx := context.Background()
	reg, err := RegisterThroughput(ctx, nb, ThroughputRegisterRequest{Data: plan("history"), File: "history.json", LlamaDir: loc.Dir, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunThroughput(ctx, nb, ThroughputRunRequest{ID: reg.StudyID, LlamaDir: loc.Dir}); err != nil {
		t.Fatal(err)
	}
	v, err := ValidateThroughputWith(ctx, PlanCheck{File: filepath.Join(dir, "next.json"), Data: plan("next"), LlamaDir: loc.Dir, Notebook: nb})
	if err != nil || !v.Valid {
		t.Fatalf("validate: %+v %v", v, err)
	}
	got, err := RepetitionPlanner(ctx, nb, v.Plan, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got, v.Planner) {
		t.Fatalf("window's planner %+v\nstudy validate's %+v", got, v.Planner)
	}
	for _, r := range got {
		if r.Rows == 0 || r.PlanReps != 3 || r.MDE <= 0 {
			t.Fatalf("planner answer without history: %+v", r)
		}
	}
	lines := PlannerLines(got)
	if len(lines) != 3 || lines[0] != PlannerHeading || !strings.HasPrefix(lines[1], "  pp16 of tiny (CV ") && !strings.HasPrefix(lines[1], "  tg8 of tiny (CV ") {
		t.Fatalf("planner lines %q", lines)
	}
	if none, err := RepetitionPlanner(ctx, nil, v.Plan, dir, 0); none != nil || err != nil || PlannerLines(none) != nil {
		t.Fatalf("without a notebook: %v %v", none, err)
	}
}
