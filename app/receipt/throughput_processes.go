package receipt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sparkbench/app/study"
)

// RulesProcessCells is the throughput receipt's fourth rules revision: besides
// RulesLegReasons', every result cell states its unit (docs/adaptive.md, "Processes and
// repetitions"): study.json's results[].processes (n processes of m repetitions, the mean of
// the process means, its 95% interval over the processes or none from one, the between- and
// within-process spreads), and receipt.md says the model in one line and tables each cell's
// n, m, interval and spreads. Bundles written before (rules 0, 2 or 3) re-make the receipt
// they were written with, without them.
const RulesProcessCells = 4

// processRules says whether the receipt states each cell's processes.
func (d *ThroughputStudy) processRules() bool { return d.rules >= RulesProcessCells }

// ProcessDefinitions are added to a receipt written under RulesProcessCells.
var ProcessDefinitions = map[string]string{
	"process":          "process: one llama-bench process (one leg of a fixed plan, one chunk of an adaptive one), the unit of replication; its repetitions (-r) share its state (thread placement, memory layout, clocks, page cache) and are sub-samples of it, not independent samples of the cell",
	"process_interval": "95% CI over processes: the t-based 95% confidence interval of the mean of the n process means (n-1 degrees of freedom; n-2 when an adaptive rule chose n, one charged for its data-dependent stop); one process gives a point estimate and no interval",
	"between_within":   "between-process spread: the standard deviation of the process means beyond what the within-process spread explains (var(process means) - within²/m, floored at 0), over the mean; within-process spread: the pooled standard deviation of the repetitions about their own process's mean, over the mean",
}

// MeanOfProcessMeans replaces mean_sd's definition in a receipt of an adaptive plan whose rule
// is over processes (RulesProcessCells).
const MeanOfProcessMeans = "mean ± sd: the mean of the cell's chunk means (each chunk one llama-bench process: the process-level mean) ± the sd over every kept repetition of every chunk, tokens per second"

// withProcessDefinitions adds ProcessDefinitions under RulesProcessCells, and the mean of an
// adaptive plan whose rule is over processes.
func withProcessDefinitions(defs map[string]string, rules int, plan *study.Plan) map[string]string {
	if rules < RulesProcessCells {
		return defs
	}
	defs = maps.Clone(defs)
	maps.Copy(defs, ProcessDefinitions)
	if plan != nil && plan.Adaptive != nil && plan.Adaptive.ByProcess() {
		defs["mean_sd"] = MeanOfProcessMeans
	}
	return defs
}

// processMeans says whether the receipt's means are the means of an adaptive cell's process
// means (a plan whose rule is over processes, under RulesProcessCells).
func processMeans(d *ThroughputStudy, plan *study.Plan) bool {
	return d.adaptiveRules() && d.processRules() && plan.Adaptive != nil && plan.Adaptive.ByProcess()
}

// withoutProcessCells is the report as a receipt written before RulesProcessCells holds it:
// its result cells without their processes.
func withoutProcessCells(rep *study.Report) *study.Report {
	out := *rep
	out.Results = slices.Clone(rep.Results)
	for i := range out.Results {
		out.Results[i].Unit = nil
	}
	out.Scoreboard = slices.Clone(rep.Scoreboard)
	for i := range out.Scoreboard {
		out.Scoreboard[i].Processes = nil
	}
	out.Processes = ""
	return &out
}

// tmProcesses writes the cells at the process level: the model in one line, then each cell's
// n, m, mean of the process means, interval and spreads.
func tmProcesses(w *mdWriter, d *ThroughputStudy) {
	if !d.processRules() || len(d.Report.Results) == 0 {
		return
	}
	w.heading(3, "Processes: the unit of replication")
	w.line("%s.", inline(d.Report.Processes))
	w.blank()
	var rows [][]string
	for _, c := range d.Report.Results {
		u := c.Unit
		if u == nil {
			continue
		}
		ci, between := "point estimate (one process)", "not measured"
		if h, ok := u.RelHalfWidth(); ok {
			ci = fmt.Sprintf("[%s, %s] (±%s)", f2(*u.Lo), f2(*u.Hi), pct2(h))
		} else if u.N > 1 {
			ci = "none (fewer than 3 processes after an adaptive stop)"
		}
		if u.BetweenCV != nil {
			between = pct2(*u.BetweenCV)
		}
		label := fmt.Sprintf("%s %s @ d%d", c.Model, c.Test, c.Depth)
		if _, rp, ok := strings.Cut(c.Leg, "#"); ok {
			label += " (#" + rp + ")"
		}
		rows = append(rows, []string{cell(label), fmt.Sprint(u.N), u.M, f2(u.Mean), cell(ci), between, pct2(u.WithinCV)})
	}
	w.table([]string{"Cell", "n processes", "m reps each", "Mean of process means", "95% CI over processes", "Between-process spread", "Within-process spread"}, "lrrrlrr", rows)
	w.line("`study.json`: `results[].processes`; verify re-derives every figure here from the rows in `legs/*/rows.jsonl`.")
	w.blank()
}
