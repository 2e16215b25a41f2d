package study

import (
	"fmt"
	"io"
	"strings"
)

// AdaptiveReport is an adaptive study's stopping rule and where each leg's chunks stand.
type AdaptiveReport struct {
	Rule  string        `json:"rule"` // "3 to 30 reps in chunks of 3 until tg ±1%, pp ±1%; blocks order, seed 42"
	Stop  bool          `json:"stop"`
	Met   bool          `json:"met"`
	Legs  []AdaptiveLeg `json:"legs"`
	Order [][]string    `json:"order"` // each round's chunks as they ran (plan legs)
}

// RuleWords states the plan's rule in one line.
func (a *Adaptive) RuleWords() string {
	var ts []string
	for _, t := range a.Targets {
		ts = append(ts, t.Test+" "+t.Precision().String())
	}
	s := fmt.Sprintf("%d to %d reps in chunks of %d until %s (95%% CI of the mean); %s order, seed %d",
		a.MinReps, a.MaxReps, a.ChunkReps, strings.Join(ts, ", "), a.Order, a.Seed)
	if w := a.Warmup; w != nil {
		s += fmt.Sprintf("; warm-up: up to %d leading rep(s) per chunk more than %g%% below the rest's median dropped", w.MaxDiscard, w.Tolerance*100)
	}
	return s
}

// adaptiveReport reads the chunks' state; the legs table's chunks with results all count.
func adaptiveReport(l *Loaded, legs []ReportLeg) *AdaptiveReport {
	st := NewAdaptiveState(l.Plan, l.St.PlanDir, l.Legs, l.Stored, l.Rows)
	out := &AdaptiveReport{Rule: l.Plan.Adaptive.RuleWords(), Stop: st.Stop, Met: st.Met, Legs: st.Legs, Order: ChunkOrder(l.Legs, l.Stored)}
	counts := map[int64]bool{}
	for _, al := range st.Legs {
		for _, c := range al.chunks {
			counts[c.ID] = true
		}
	}
	for i := range legs {
		legs[i].Counts = counts[legs[i].ID]
	}
	return out
}

// ChunkOrder lists, round by round, the plan legs whose chunks ended with results, in the
// order they ran (a leg's k-th such chunk is in round k).
func ChunkOrder(legs []LegPlan, stored []StoredLeg) [][]string {
	plan := map[string]bool{}
	for _, lp := range legs {
		plan[lp.ID] = true
	}
	n := map[string]int{}
	out := [][]string{}
	for _, s := range stored {
		if s.Role != RoleLeg || !plan[s.PlanLeg] || !hasResults(s) {
			continue
		}
		k := n[s.PlanLeg]
		n[s.PlanLeg]++
		for len(out) <= k {
			out = append(out, []string{})
		}
		out[k] = append(out[k], s.PlanLeg)
	}
	return out
}

// writeAdaptive prints the rule and each leg's cells against it.
func writeAdaptive(w io.Writer, a *AdaptiveReport) {
	if a == nil {
		return
	}
	state := "running"
	switch {
	case a.Met:
		state = "every target met"
	case a.Stop:
		state = "stopped at the maximum: precision not reached"
	}
	fprintf(w, "\nadaptive repetitions: %s — %s\n", a.Rule, state)
	for _, l := range a.Legs {
		fprintf(w, "  %s: %d chunk(s), %d reps\n", l.Leg, l.Chunks, l.Reps)
		for _, c := range l.Cells {
			fprintf(w, "    %s @ d%d [%s]: %s\n", c.Test, c.Depth, c.Config, c.Words(l.Reps))
		}
	}
	for i, r := range a.Order {
		fprintf(w, "  round %d: %s\n", i+1, strings.Join(r, " → "))
	}
}
