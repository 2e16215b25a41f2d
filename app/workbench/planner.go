package workbench

import (
	"context"

	"sparkbench/app/study"
	"sparkbench/store"
)

// PlannerHeading heads the repetition planner's lines in `study validate` and the window's New
// study form.
const PlannerHeading = "repetition planner (this notebook's history of the models; 95% confidence, 80% power; the unit is the llama-bench process, compared by Welch's t-test on the process means):"

// RepetitionPlanner is the repetition planner `study validate` prints (docs/adaptive.md): from
// the notebook's history of the plan's models (planDir resolves relative model paths), per
// model and test, the repetitions per arm a difference of effect (<= 0: 3%) needs and the
// smallest difference the plan as written detects. nil without a notebook. p has its defaults.
func RepetitionPlanner(ctx context.Context, nb *store.Notebook, p *study.Plan, planDir string, effect float64) ([]study.RepPlan, error) {
	hist, err := PlanHistory(ctx, nb, p, planDir)
	if err != nil || hist == nil {
		return nil, err
	}
	return study.PlanRepetitions(p, hist, effect), nil
}

// PlannerLines words the planner's answers as `study validate` prints them: the heading, then
// one indented line per model and test (none: no lines).
func PlannerLines(plans []study.RepPlan) []string {
	if len(plans) == 0 {
		return nil
	}
	lines := []string{PlannerHeading}
	for _, r := range plans {
		lines = append(lines, "  "+r.Words())
	}
	return lines
}
