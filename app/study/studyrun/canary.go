package studyrun

import (
	"context"
	"fmt"
	"strconv"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
)

func (r *run) gate() runner.CVGate {
	g := r.l.Plan.Gates
	return runner.CVGate{TG: g.CVTG, PPDepth: g.CVPPDepth, PP: g.CVPPD0, Count: g.CountsFlagged()}
}

// canaryLeg is the plan's canary: a short bench of the canary model, never gated (its job is
// to complete at its usual speed).
func (r *run) canaryLeg(id string) runner.LegSpec {
	p := r.l.Plan
	c := p.Canary
	var path string
	for _, m := range p.Models {
		if m.ID == c.Model {
			path = study.ResolvePath(r.l.St.PlanDir, m.Path)
		}
	}
	args := []string{"-m", path, "-p", strconv.Itoa(c.NPrompt), "-n", strconv.Itoa(c.NGen), "-r", "3"}
	if len(p.Axes.Threads) > 0 {
		args = append(args, "-t", strconv.Itoa(p.Axes.Threads[0]))
	}
	if len(p.Axes.NGL) > 0 {
		args = append(args, "-ngl", strconv.Itoa(p.Axes.NGL[0]))
	}
	args = append(args, "-o", "jsonl")
	return runner.LegSpec{ID: id, Bench: r.e.Bench, Args: args, Env: p.Build.EnvList(), CVGate: runner.CVGate{Off: true},
		Wrapper: p.Build.LaunchWrapper}
}

func (r *run) canaryTest() string { return benchfmt.TestName(0, int64(r.l.Plan.Canary.NGen), 0) }

// canaryBaseline sets the canary's baseline: the plan's baseline_tg, else the tg rate of the
// study's baseline canary run (run now, before the first leg, when no earlier run made one).
func (r *run) canaryBaseline(ctx context.Context) error {
	c := r.l.Plan.Canary
	r.baseline = map[string]float64{}
	if c.BaselineTG > 0 {
		r.baseline[r.canaryTest()] = c.BaselineTG
		return nil
	}
	attempt := 0
	for _, s := range r.l.Stored {
		if s.Role != study.RoleCanaryBaseline {
			continue
		}
		attempt = max(attempt, s.Attempt)
		if s.State == study.LegFinished && s.Class == string(runner.ClassOK) {
			for _, row := range r.l.Rows {
				if row.LegID == s.ID && row.Result.TestName() == r.canaryTest() && row.Result.AvgTs > 0 {
					r.baseline[r.canaryTest()] = row.Result.AvgTs
				}
			}
		}
	}
	if len(r.baseline) > 0 {
		return nil
	}
	label := "canary baseline"
	if attempt > 0 {
		label = fmt.Sprintf("canary baseline (attempt %d)", attempt+1)
	}
	spec := r.canaryLeg(label)
	st, err := r.stream(ctx, spec, study.LegStart{StudyID: r.l.St.ID, Label: label, Kind: "canary", Role: study.RoleCanaryBaseline,
		Attempt: attempt + 1, MachineID: r.machineID, BuildID: r.buildID, ArtefactID: r.artefacts[c.Model],
		Detail: map[string]any{"plan_sha256": r.l.St.PlanSHA256}}, nil, 2)
	if err != nil {
		return err
	}
	for _, row := range st.results[0].Results() {
		if row.Test == r.canaryTest() {
			r.baseline[row.Test] = row.AvgTs
		}
	}
	// A baseline run that failed leaves no baseline: a later canary must then only complete.
	return nil
}
