package receipt

import (
	"fmt"
	"strings"

	"sparkbench/app/study"
)

// tmLegs writes one row per leg: state, class, rows, duration, conditions.
func tmLegs(w *mdWriter, d *ThroughputStudy) {
	w.heading(2, "Legs")
	var legRows [][]string
	for _, l := range d.Legs {
		id, dur := "—", "—"
		if l.ID != 0 {
			id = fmt.Sprint(l.ID)
		}
		if l.DurationS != nil {
			dur = f3(*l.DurationS) + " s"
		}
		label := l.Label
		if l.Role != study.RoleLeg {
			label += " [" + l.Role + "]"
		}
		cond := strings.Join(l.Conditions, "; ")
		if cond == "" {
			cond = "—"
		}
		legRows = append(legRows, []string{id, cell(label), cell(l.State), cell(l.Class), fmt.Sprint(l.Rows), fmt.Sprint(l.Results),
			fmt.Sprint(l.Flagged), fmt.Sprint(l.Discarded + l.Unmarked), dur, cell(cond)})
	}
	w.table([]string{"Leg", "Label", "State", "Class", "Rows", "Results", "Flagged", "Discarded", "Duration", "Conditions"}, "rlllrrrrrl", legRows)
	if d.legReasonRules() {
		var why []string
		for _, l := range d.Legs {
			if l.Class != "" && l.Class != "ok" && l.Reason != "" {
				why = append(why, fmt.Sprintf("- %s: %s: %s", inline(l.Label), code(l.Class), inline(l.Reason)))
			}
		}
		if len(why) > 0 {
			w.line("Why legs ended otherwise than ok:")
			w.blank()
			for _, l := range why {
				w.line("%s", l)
			}
			w.blank()
		}
	}
	w.line("Each leg is one llama-bench process; its rows, transcript and record are in `legs/NNN-label/`. A crashed, interrupted or stopped leg never yields results, nor do flagged or discarded rows.")
	w.blank()
}
