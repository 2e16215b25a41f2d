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
		fprintf(w, "envelope (%s):\n", r.Units)
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
	writeServing(w, r)
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

// writeServing prints a serving study's open-loop results: the harness floor, then per server
// lifetime every probe (offered, scheduled and achieved rates, completions per second against
// arrivals, latencies, verdict), the sweep's best rate, the search's outcome and the knee.
func writeServing(w io.Writer, r *Report) {
	if len(r.Serving) == 0 && r.HarnessFloor == nil {
		return
	}
	fprintf(w, "open-loop serving (requests arrive on a schedule whether or not earlier ones finished; TTFT and E2E from the scheduled send):\n")
	if h := r.HarnessFloor; h != nil {
		fprintf(w, "  harness floor: %d clients, %d requests of %d tokens against the built-in fake: TTFT p50 %.3f / p99 %.3f ms, ITL p50 %.3f / p99 %.3f ms, %.2f CPU µs per token\n",
			h.Clients, h.Requests, h.NPredict, h.TTFTMsP50, h.TTFTMsP99, h.ITLMsP50, h.ITLMsP99, h.CPUUsPerToken)
	} else {
		fprintf(w, "  harness floor: not measured\n")
	}
	for _, sv := range r.Serving {
		u := sv.Unit
		fprintf(w, "  %s P%d %s pass:\n", sv.Candidate, sv.Slots, sv.Pass)
		for _, pr := range sv.Probes {
			verdict := "PASS"
			if !pr.Passed {
				verdict = "FAIL " + strings.Join(pr.Failures, ", ")
			}
			if pr.ClientBound {
				verdict += " (client-bound)"
			}
			keep := ""
			if sc := pr.Sustain; sc != nil {
				keep = fmt.Sprintf("  completions %s/s of arrivals %s/s", numText(sc.DepartureRate, 3), numText(sc.OfferedRate, 3))
			}
			fprintf(w, "    #%-2d %-6s offered %8s %s  scheduled %8s  achieved %8s%s  %d/%d completed  TTFT p95 %s ms  TPOT p95 %s ms  %s\n",
				pr.Probe, pr.Kind, ms(pr.OfferedRate), u, numText(pr.ScheduledRate, 3), numText(pr.AchievedRate, 3), keep,
				pr.Completed, pr.Requests, numText(pr.TTFTMs.P95, 1), numText(pr.TPOTMs.P95, 2), verdict)
		}
		if sv.MaxSweepRate != nil {
			fprintf(w, "    sweep: the largest rate meeting every SLO is %s %s\n", ms(*sv.MaxSweepRate), u)
		} else if len(sv.Probes) > 0 && sv.Probes[0].Kind == ProbeSweep {
			fprintf(w, "    sweep: no rate met every SLO\n")
		}
		if q := sv.Search; q != nil {
			fprintf(w, "    search: %s\n", SearchLine(q, u))
		}
		if st := sv.Saturation; st != nil {
			fprintf(w, "    knee: %s\n", SaturationLine(st, u))
		}
	}
}

// SearchLine is the max-rate search's outcome in words.
func SearchLine(q *SearchResult, unit string) string {
	line := "no rate meets every SLO"
	if q.MaxRate != nil {
		line = fmt.Sprintf("max rate meeting every SLO %s %s", ms(*q.MaxRate), unit)
	}
	if q.LowestFail != nil {
		line += fmt.Sprintf(", lowest failing %s %s", ms(*q.LowestFail), unit)
	}
	conv := "converged"
	if !q.Converged {
		conv = "not converged"
	}
	return fmt.Sprintf("%s; %s (%s), %d search probes", line, conv, q.Note, len(q.Probes))
}

// SaturationLine is the knee the sustain rule found, in words.
func SaturationLine(st *Saturation, unit string) string {
	line := st.Note
	if st.SaturatedRate != nil {
		line += fmt.Sprintf("; saturated, the server completed %.3g/s", *st.SaturatedRate)
	}
	if len(st.SkippedSweepRates) > 0 {
		var rs []string
		for _, r := range st.SkippedSweepRates {
			rs = append(rs, ms(r))
		}
		line += fmt.Sprintf("; sweep rates not probed (past saturation): %s %s", strings.Join(rs, ", "), unit)
	}
	return line + fmt.Sprintf(" (window: at least %d requests and %s s a probe)", st.MinRequests, ms(st.MinSeconds))
}
