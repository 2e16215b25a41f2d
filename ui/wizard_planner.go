package ui

import (
	"context"
	"strings"

	"sparkbench/app/study"
)

// RepetitionPlanner answers, from the notebook's history of a plan's models, how many
// repetitions per arm a comparison needs and what the plan as written detects: the lines
// `sparkbench study validate` prints (workbench.RepetitionPlanner and PlannerLines). A
// Registrar that implements it gives the New study form the planner.
type RepetitionPlanner interface {
	PlanRepetitions(ctx context.Context, p *study.Plan) ([]string, error)
}

// wantsPlanner says whether the plan compares arms, where repetitions decide what a difference
// can be told from: an adaptive (precision) block, or a comparison prediction (one cell
// against another).
func wantsPlanner(p *study.Plan) bool {
	if p.Adaptive != nil {
		return true
	}
	for _, pr := range p.Predictions {
		if pr.Kind == study.KindComparison {
			return true
		}
	}
	return false
}

// plannerText is the planner's lines for a valid plan that wants them ("" otherwise: the form
// shows nothing). Off the UI goroutine.
func (v *WizardView) plannerText(p *study.Plan) string {
	rp, ok := v.reg.(RepetitionPlanner)
	if !ok || !wantsPlanner(p) {
		return ""
	}
	lines, err := rp.PlanRepetitions(context.Background(), p)
	switch {
	case err != nil:
		return "repetition planner: not available: " + err.Error()
	case len(lines) == 0:
		return "repetition planner: not available: no notebook to read the models' history from"
	}
	return strings.Join(lines, "\n")
}
