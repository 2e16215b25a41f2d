package receipt

import (
	"fmt"
	"maps"
	"strings"

	"sparkbench/app/study"
)

// RulesAdaptiveCells is the throughput receipt's second rules revision: a bundle of an
// adaptive plan says how each cell ended (met, or precision not reached), the warm-up
// repetitions dropped and each round's order, labels its merged cells as merged, and states
// its repetitions and CV gates as the chunks ran them. A throughput bundle.json names it
// ("rules": 2) only when its plan is adaptive: a fixed-repetition receipt is what it was, and
// an adaptive bundle written before (no "rules") re-makes the receipt it was written with.
const RulesAdaptiveCells = 2

// RulesLegReasons is the throughput receipt's third rules revision: besides
// RulesAdaptiveCells' statements for an adaptive plan, the receipt says under its legs table
// why each leg that ended otherwise than ok ended (the gate's code — device:not_used,
// cv_above_limit, model:changed — or the crash's message), as study show does. Bundles written
// before (rules 0 or 2) re-make the receipt they were written with.
const RulesLegReasons = 3

// ThroughputRules is the rules revision a throughput bundle of this plan (the registered
// canonical plan) is written under: RulesProcessCells (0, the first, not written, for a plan
// that does not decode).
func ThroughputRules(planJSON []byte) int {
	if _, err := study.Decode(FilePlan, planJSON); err != nil {
		return 0
	}
	return RulesProcessCells
}

// legReasonRules says whether the receipt says why legs ended otherwise than ok.
func (d *ThroughputStudy) legReasonRules() bool { return d.rules >= RulesLegReasons }

// AdaptiveDefinitions replace and add to ThroughputDefinitions in a receipt written under
// RulesAdaptiveCells.
var AdaptiveDefinitions = map[string]string{
	"mean_sd":          "mean ± sd: over every kept repetition of every chunk of the cell (adaptive repetitions), tokens per second; each chunk is one llama-bench process",
	"adaptive_chunk":   "chunk: one llama-bench process of a leg with its own repetitions (-r); the first runs min_reps, each later one chunk_reps, until the stopping rule stops every leg together",
	"adaptive_ci":      "95% CI of the mean: the half-width of the t-based 95% confidence interval of the mean of the cell's kept repetitions (n = the repetitions, from every chunk), as a fraction of the mean; repetitions of one process are not independent, so the spread between chunks can exceed it",
	"adaptive_warmup":  "warm-up dropped: leading repetitions of a chunk the plan's warm-up rule removed (each more than its tolerance below the median of the repetitions after it); they are not among the kept repetitions",
	"adaptive_stopped": "the stopping rule stops every leg at the end of a round, when every targeted cell of every leg meets its target with at least min_reps repetitions, or when every leg ran max_reps: then a cell not within its target ended \"precision not reached\"",
	"result_rows":      "only rows with status result of the final plan legs count; an adaptive leg's result is its chunks' rows merged, and none is read before the stopping rule has stopped",
	"cv_gate":          "the CV gates are not applied to an adaptive plan's chunks: a chunk's spread is what the stopping rule answers with more chunks; flagged and discarded rows never count as results",
}

// adaptiveRules says whether the receipt says how an adaptive plan's cells ended.
func (d *ThroughputStudy) adaptiveRules() bool {
	return d.rules >= RulesAdaptiveCells && d.Report != nil && d.Adaptive != nil
}

func withAdaptiveDefinitions(defs map[string]string, rules int, rep *study.Report) map[string]string {
	if rules < RulesAdaptiveCells || rep.Adaptive == nil {
		return defs
	}
	defs = maps.Clone(defs)
	maps.Copy(defs, AdaptiveDefinitions)
	return defs
}

// tmAdaptive writes the adaptive repetitions: the registered rule, how it ended, each leg's
// chunks and each cell's kept and dropped repetitions, interval, target and end, and each
// round's order.
func tmAdaptive(w *mdWriter, d *ThroughputStudy) {
	if !d.adaptiveRules() {
		return
	}
	a := d.Adaptive
	w.heading(2, "Adaptive repetitions")
	w.line("Rule, registered with the plan: %s.", inline(a.Rule))
	w.blank()
	switch {
	case a.Met:
		w.line("**Every target met:** the rule stopped every leg at the end of a round.")
	case a.Stop:
		w.line("**Stopped at the maximum: precision not reached** in the cells so marked below; their intervals are wider than their targets.")
	default:
		w.line("**Running:** the rule has not stopped; no figure is read from the legs until it does.")
	}
	w.blank()
	var rows [][]string
	for _, l := range a.Legs {
		configs := map[string]bool{}
		for _, c := range l.Cells {
			configs[c.Config] = true
		}
		for _, c := range l.Cells {
			label := fmt.Sprintf("%s @ d%d", c.Test, c.Depth)
			if len(configs) > 1 {
				label += " " + c.Config
			}
			ci := "—"
			if c.HalfWidth != nil {
				ci = "±" + pct2(*c.HalfWidth)
			}
			target := c.Target
			if target == "" {
				target = "—"
			}
			rows = append(rows, []string{cell(l.Leg), fmt.Sprint(l.Chunks), fmt.Sprint(l.Reps), cell(label), fmt.Sprint(len(c.Samples)),
				fmt.Sprint(c.Discarded), ci, cell(target), adaptiveEnd(a, c, l.Reps)})
		}
	}
	w.table([]string{"Leg", "Chunks", "Reps", "Cell", "Kept", "Warm-up dropped", "95% CI of the mean", "Target", "Ended"}, "lrrlrrrll", rows)
	w.line("Reps are the repetitions the leg's chunks ran; kept are those of the cell left after the warm-up rule, over which the results' mean ± sd and the interval are computed (`study.json`: `adaptive.legs[].cells[]`, with every kept repetition and the row of each chunk).")
	w.blank()
	if len(a.Order) > 0 {
		w.line("Order of the chunks, round by round (each round one chunk of every leg still running):")
		w.blank()
		for i, r := range a.Order {
			w.line("- Round %d: %s", i+1, cell(strings.Join(r, " → ")))
		}
		w.blank()
	}
}

// adaptiveEnd is how one cell ended, in the receipt's words.
func adaptiveEnd(a *study.AdaptiveReport, c study.AdaptiveCell, reps int) string {
	switch {
	case c.Target == "":
		return fmt.Sprintf("no target (%d reps)", reps)
	case c.Met:
		return fmt.Sprintf("met after %d reps", reps)
	case a.Stop:
		return fmt.Sprintf("precision not reached after %d reps", reps)
	}
	return fmt.Sprintf("not met yet after %d reps", reps)
}

// pct2 is a fraction as a percentage with two decimals ("67.28%"), as study show prints it.
func pct2(x float64) string { return f2(x*100) + "%" }
