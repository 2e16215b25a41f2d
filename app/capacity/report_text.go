package capacity

import (
	"fmt"
	"io"
	"strings"
	"time"

	"sparkbench/app/textsafe"
)

func fprintf(w io.Writer, format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }

// SelectedLine is one candidate's selected point and its gain (or why none was selected).
func SelectedLine(id string, s *Selection, base PointRef, note string) string {
	if s == nil {
		return fmt.Sprintf("%-24s no point selected: %s", id, note)
	}
	gain := "gain n/a"
	if s.Gain != nil {
		gain = fmt.Sprintf("%+.1f%% vs P%d/C%d", *s.Gain*100, base.Slots, base.Clients)
	}
	return fmt.Sprintf("%-24s selected P%d/C%d  %.2f tok/s  %s", id, s.Slots, s.Clients, s.GenerationRate, gain)
}

// WriteReport writes the text `sparkbench capacity show` prints: a capacity or concurrency
// study's report.
func WriteReport(w io.Writer, r *Report) {
	// Recorded text reaches the terminal escaped: a control character stored by an older
	// version (or imported) is shown, never replayed.
	w, flush := textsafe.Buffered(w)
	defer flush()
	s := r.Study
	fprintf(w, "study %d %q (%s, %s), plan sha256 %s\n", s.ID, s.Name, s.Kind, s.Status, s.PlanSHA256)
	if s.LastHalt != "" {
		fprintf(w, "last halt: %s\n", s.LastHalt)
	}
	if a := r.Run; a != nil {
		fprintf(w, "run folder %s\n", a.Note.RunDir)
		if r.Trusted {
			fprintf(w, "study.json sha256 %s (matches the journal)\n", a.FileSHA256)
		} else {
			fprintf(w, "study.json NOT TRUSTED: %s\n", r.Problem)
		}
	} else {
		fprintf(w, "not assembled yet\n")
	}
	fprintf(w, "server lifetimes (%d):\n", len(r.Legs))
	for _, l := range r.Legs {
		dur := "running"
		if !l.EndedAt.IsZero() {
			dur = l.EndedAt.Sub(l.StartedAt).Round(time.Millisecond).String()
		}
		fprintf(w, "  leg %-4d %-28s %-9s %-10s %4d requests  peak RSS %7.1f MiB  log %s  %s\n", l.ID, l.Label, l.State, l.Class,
			l.RequestRows, float64(l.PeakRSSBytes)/(1<<20), textsafe.ByteSize(l.TranscriptBytes), dur)
	}
	if len(r.Envelope) > 0 {
		fprintf(w, "selected points:\n")
		for _, c := range r.Envelope {
			fprintf(w, "  %s\n", SelectedLine(c.Candidate, c.Selected, c.Base, c.Note))
		}
		fprintf(w, "envelope:\n")
		for _, c := range r.Envelope {
			fprintf(w, "  %s (%s)\n", c.Candidate, c.Label)
			for _, cell := range c.Cells {
				verdict := "PASS"
				if !cell.Passed {
					verdict = "FAIL " + strings.Join(cell.Failures, ", ")
				}
				energy := ""
				if cell.JPerGeneratedToken != nil {
					energy = fmt.Sprintf("  %.4g J/token", *cell.JPerGeneratedToken)
				}
				fprintf(w, "    P%d/C%-3d %9s tok/s  TTFT p95 %9s ms  E2E p95 %9s ms  RSS %7.1f MiB%s  %s\n", cell.Slots, cell.Clients,
					numText(cell.GenerationRate, 2), numText(cell.TTFTMsP95, 1), numText(cell.E2EMsP95, 1), cell.PeakRSSMiB, energy, verdict)
			}
		}
		header := false
		for _, c := range r.Envelope {
			if c.ServerTax == nil {
				continue
			}
			if !header {
				fprintf(w, "server tax (cell rate at P = C = B / llama-batched-bench B×TG/T):\n")
				header = true
			}
			fprintf(w, "  %s\n", ServerTaxLine(c.Candidate, c.ServerTax))
		}
	} else if len(r.Selected) > 0 {
		fprintf(w, "selected points (from the journal):\n")
		for _, sp := range r.Selected {
			if sp.Slots == nil {
				fprintf(w, "  %-24s no point selected: %s\n", sp.Candidate, sp.Note)
				continue
			}
			sel := &Selection{Slots: *sp.Slots, Clients: *sp.Clients, GenerationRate: *sp.GenerationRate, Gain: sp.Gain}
			fprintf(w, "  %s\n", SelectedLine(sp.Candidate, sel, PointRef{Slots: sp.BaseSlots, Clients: sp.BaseClients}, ""))
		}
	}
	writeKVQuality(w, r)
	writeRPC(w, r)
	if len(r.Verdicts) > 0 || len(r.Pending) > 0 {
		fprintf(w, "verdicts:\n")
		for _, v := range r.Verdicts {
			fprintf(w, "  %-8s %-12s %s\n", v.Prediction, v.Outcome, v.Detail)
		}
		for _, p := range r.Pending {
			fprintf(w, "  %-8s %-12s\n", p, "PENDING")
		}
	}
}

// writeKVQuality prints each KV arm's speed change beside its KL divergence from an f16 cache,
// the arms not checked yet and the check's legs (nothing for a plan without a KV arm).
func writeKVQuality(w io.Writer, r *Report) {
	if len(r.KVQuality) == 0 && len(r.KVUnchecked) == 0 && len(r.KVLegs) == 0 {
		return
	}
	fprintf(w, "KV cache types: speed against quality (KL divergence from an f16 cache on the same model):\n")
	for _, q := range r.KVQuality {
		fprintf(w, "  %s\n", KVQualityLine(q))
	}
	for _, c := range r.KVUnchecked {
		fprintf(w, "  %s: KL divergence not checked yet (`sparkbench capacity run %d` checks it)\n", c, r.Study.ID)
	}
	for _, l := range r.KVLegs {
		fprintf(w, "  leg %-4d %-40s %-9s %-10s peak RSS %7.1f MiB  log %s\n", l.ID, l.Label, l.State, l.Class,
			float64(l.PeakRSSBytes)/(1<<20), textsafe.ByteSize(l.TranscriptBytes))
	}
}

func numText(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

// ServerTaxLine is one candidate's server tax: cell rate at P = C = B / llama-batched-bench
// B×TG/T at each B, and the B values left unpaired.
func ServerTaxLine(id string, st *ServerTaxResult) string {
	var pts []string
	for _, p := range st.Points {
		pts = append(pts, fmt.Sprintf("B%d %.4f (%.2f / %.2f tok/s)", p.B, p.Tax, p.ServerRate, p.BatchedRate))
	}
	line := fmt.Sprintf("%-24s server tax vs llama-batched-bench pp%d+tg%d: %s", id, st.PP, st.TG, strings.Join(pts, ", "))
	if len(pts) == 0 {
		line = fmt.Sprintf("%-24s server tax vs llama-batched-bench pp%d+tg%d: none", id, st.PP, st.TG)
	}
	if st.Note != "" {
		line += " (" + st.Note + ")"
	}
	return line
}

// IncompleteStudyText says what became of study.json in an incomplete run.
func IncompleteStudyText(ie *IncompleteError) string {
	if ie.Assembled {
		return fmt.Sprintf("study.json was assembled for inspection only (%d of %d server lifetimes have results): the study is not complete", ie.Total-len(ie.Lifetimes), ie.Total)
	}
	return "study.json was not assembled (the lifetimes without results left it without their inputs)"
}

// KeptText says what a resumed run kept from before ("" for a run that did not resume).
func KeptText(sum *RunSummary) string {
	if !sum.Resumed {
		return ""
	}
	s := fmt.Sprintf(" (resumed: %d kept from before", sum.LifetimesKept)
	if sum.GuardsKept > 0 {
		s += fmt.Sprintf(", and %d quality guards", sum.GuardsKept)
	}
	return s + ")"
}
