package quant

import (
	"fmt"
	"slices"
	"sparkbench/app/energy"
	"strings"

	"sparkbench/app/study"
	"sparkbench/plots"
)

// Markdown is the ladder's receipt text, made from the result alone (the same result gives the
// same bytes).
func Markdown(res *Result) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s — quantization ladder receipt\n\n", res.Name)
	fmt.Fprintf(&b, "Reference `%s` (sha256 `%s`). Plan sha256 `%s`.\n\n", res.Reference.Path, res.Reference.SHA256, res.PlanSHA256)
	if pv := res.Provenance; pv != nil {
		devs := "no device listed"
		if len(pv.Devices) > 0 {
			devs = "devices " + strings.Join(pv.Devices, ", ")
		}
		fmt.Fprintf(&b, "Measured with llama.cpp `%s` (backends %s; %s) on %s.\n\n", pv.VersionLine, orDash(strings.Join(pv.Backends, ", ")), devs, pv.Machine)
	}
	writeImatrix(&b, res)
	writeCandidates(&b, res)
	writeEnergy(&b, res)
	writeRule(&b, res)
	writeFrontier(&b, res)
	writeVerdicts(&b, res)
	writeHandOffs(&b, res)
	writeProvenance(&b, res)
	return []byte(b.String())
}

// figures are the speed figures measured, by depth then test.
func figures(res *Result) []BenchCell {
	var out []BenchCell
	for _, r := range res.Records {
		for _, c := range r.Bench {
			if !slices.ContainsFunc(out, func(x BenchCell) bool { return x.Figure() == c.Figure() }) {
				out = append(out, BenchCell{Test: c.Test, Depth: c.Depth})
			}
		}
	}
	slices.SortFunc(out, func(a, b BenchCell) int {
		if a.Depth != b.Depth {
			return a.Depth - b.Depth
		}
		return strings.Compare(a.Test, b.Test)
	})
	return out
}

func opt(v *float64, format string) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf(format, *v)
}

func writeCandidates(b *strings.Builder, res *Result) {
	figs := figures(res)
	b.WriteString("## Candidates\n\n| type | bits/weight | file MiB |")
	for _, f := range figs {
		fmt.Fprintf(b, " %s t/s |", f.Figure())
	}
	proj := slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return c.Projected != nil })
	b.WriteString(" KLD mean | KLD p99 | KLD max | same top p | PPL ratio | peak RSS MiB |")
	extra := 0
	if proj {
		b.WriteString(" projected MiB |")
		extra = 1
	}
	b.WriteString(" |\n|---|---:|---:|")
	b.WriteString(strings.Repeat("---:|", len(figs)+6+extra))
	b.WriteString("---|\n")
	sel := res.Selection
	for _, c := range res.Candidates {
		fmt.Fprintf(b, "| %s | %.2f | %.1f |", c.Type, c.BitsPerWeight, c.FileMiB())
		for _, f := range figs {
			if v, ok := c.Speed[f.Figure()]; ok {
				fmt.Fprintf(b, " %.2f |", v)
			} else {
				b.WriteString(" — |")
			}
		}
		if k := c.KLD; k != nil {
			fmt.Fprintf(b, " %.6f | %.6f | %.6f | %.2f%% | %.4f |", k.Mean, k.P99, k.Max, k.SameTopP*100, k.PPLRatio)
		} else {
			b.WriteString(" — | — | — | — | — |")
		}
		fmt.Fprintf(b, " %s |", opt(c.PeakRSSMiB, "%.1f"))
		if proj {
			if c.Projected != nil {
				fmt.Fprintf(b, " %d (%s) |", c.Projected.MiB, c.Projected.Of)
			} else {
				b.WriteString(" — |")
			}
		}
		fmt.Fprintf(b, " %s |\n", mark(sel, c.Type))
	}
	b.WriteString("\n")
	if proj {
		fmt.Fprintf(b, "Projected MiB: llama-fit-params's projection at a context of %d tokens (device memory where the build has a device; host memory on a CPU-only build).\n\n", res.MemoryCtx)
	}
	if len(res.CountedFlags) > 0 {
		b.WriteString("Counted with a CV flag (the plan's `speed.gates.on_cv` is `count`: a llama-bench process above its gate is anomalous, not missing):\n\n")
		for _, f := range res.CountedFlags {
			fmt.Fprintf(b, "- %s\n", cellText(f))
		}
		b.WriteString("\n")
	}
	for _, test := range []string{"tg", "pp"} {
		if len(DepthCurves(res, plots.Meta{}, test).Series) > 0 {
			fmt.Fprintf(b, "![%s against depth, every candidate](plots/candidates-%s.png)\n\n", test, test)
		}
	}
}

// writeEnergy writes each candidate's Joules per token at each speed figure, when a
// telemetry block's samplers measured energy during its legs (nothing otherwise).
func writeEnergy(b *strings.Builder, res *Result) {
	if !slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return len(c.JPerToken) > 0 }) {
		return
	}
	figs := figures(res)
	b.WriteString("## Energy\n\n| type |")
	for _, f := range figs {
		fmt.Fprintf(b, " %s J/token |", f.Figure())
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(figs)) + "\n")
	for _, c := range res.Candidates {
		fmt.Fprintf(b, "| %s |", c.Type)
		for _, f := range figs {
			if v, ok := c.JPerToken[f.Figure()]; ok {
				fmt.Fprintf(b, " %.4g |", v)
			} else {
				b.WriteString(" — |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n| leg | total | device | power | clock | temperature | throttle |\n|---|---|---|---|---|---|---|\n")
	for _, r := range res.Records {
		for _, l := range r.Energy {
			total := energy.LegFigures{Seconds: l.Seconds, EnergyJ: l.EnergyJ, Method: l.Method}.TotalText(l.HasEnergy)
			for _, d := range l.Devices {
				fmt.Fprintf(b, "| %s | %s | %s %s | %s | %s | %s | %s |\n", l.Leg, total, d.Source, d.Device, d.PowerText(), d.ClockText(), d.TempText(), d.ThrottleText())
			}
		}
	}
	b.WriteString("\nJoules per token of each llama-bench row (per prompt token for pp, per generated token for tg): the mean power of the row's window × llama-bench's own test time / (tokens × repetitions), from the samples recorded with the candidate's bench leg (docs/telemetry.md). A leg a machine-state gate flagged ran again; one still flagged gave no figures.\n\n")
}

// mark is a candidate's word in the table: selected, runner-up, or its failure codes.
func mark(sel Selection, typ string) string {
	switch {
	case sel.Selected != "" && typ == sel.Selected:
		return "**selected**"
	case sel.RunnerUp != "" && typ == sel.RunnerUp:
		return "runner-up"
	}
	for _, p := range sel.Pending {
		if p.Type == typ {
			return "pending"
		}
	}
	for _, r := range sel.Rejected {
		if r.Type == typ {
			return strings.Join(r.Codes, ", ")
		}
	}
	return ""
}

func writeRule(b *strings.Builder, res *Result) {
	r := res.Rule
	b.WriteString("## The rule (registered before the run)\n\n")
	tol := 0.01
	if r.Tolerance != nil {
		tol = *r.Tolerance
	}
	fmt.Fprintf(b, "Maximise %s; within %g%% of the best counts as tied; ties broken by %s.\n", r.Maximize, tol*100, strings.Join(r.TieBreak, " > "))
	l := r.Limits
	var lim []string
	for _, x := range []struct {
		name string
		v    *float64
	}{{"mean KLD ≤", l.KLDMeanMax}, {"KLD p99 ≤", l.KLDP99Max}, {"same top p ≥", l.SameTopPMin}, {"PPL ratio ≤", l.PPLRatioMax}, {"file MiB ≤", l.FileMiBMax}, {"peak RSS MiB ≤", l.PeakRSSMiBMax}, {"projected MiB ≤", l.ProjectedMiBMax}} {
		if x.v != nil {
			lim = append(lim, fmt.Sprintf("%s %g", x.name, *x.v))
		}
	}
	if len(lim) == 0 {
		lim = []string{"none"}
	}
	fmt.Fprintf(b, "Limits: %s.\n\n", strings.Join(lim, "; "))
	sel := res.Selection
	switch {
	case sel.Incomplete:
		fmt.Fprintf(b, "**Incomplete, no selection**: %d of %d candidates pending; the rule selects only once every candidate is measured (`sparkbench study run` on the study measures what is missing).\n\n", len(sel.Pending), len(res.Candidates))
		for _, p := range sel.Pending {
			legs := "legs not named (a record written before they were)"
			if len(p.Legs) > 0 {
				legs = "missing legs " + strings.Join(p.Legs, ", ")
			}
			fmt.Fprintf(b, "- pending %s: %s — %s\n", p.Type, legs, strings.Join(p.Why, "; "))
		}
		b.WriteString("\n")
	case sel.Selected == "":
		fmt.Fprintf(b, "**No candidate selected**: %s.\n\n", sel.Why)
	default:
		fmt.Fprintf(b, "**Selected: %s** — %s.", sel.Selected, sel.Why)
		if sel.RunnerUp != "" {
			fmt.Fprintf(b, " Runner-up: %s.", sel.RunnerUp)
		}
		b.WriteString("\n\n")
	}
	for _, rj := range sel.Rejected {
		fmt.Fprintf(b, "- rejected %s: %s\n", rj.Type, strings.Join(rj.Codes, ", "))
	}
	if len(sel.Rejected) > 0 {
		b.WriteString("\n")
	}
}

func writeFrontier(b *strings.Builder, res *Result) {
	sel := res.Selection
	fmt.Fprintf(b, "## Pareto frontier (%s against mean KLD)\n\n", res.Rule.Maximize)
	if len(sel.Frontier) == 0 {
		b.WriteString("No candidate was measured on both.\n\n")
		return
	}
	fmt.Fprintf(b, "![%s against mean KLD](plots/%s.png)\n\n", res.Rule.Maximize, ChartPareto)
	if len(KLDBits(res, plots.Meta{}).Points) > 0 {
		fmt.Fprintf(b, "![mean KLD against bits per weight](plots/%s.png)\n\n", ChartKLDBits)
	}
	fmt.Fprintf(b, "On the frontier: %s.\n", strings.Join(sel.Frontier, ", "))
	var dom []string
	for _, c := range res.Candidates {
		if by, ok := sel.Dominated[c.Type]; ok {
			dom = append(dom, fmt.Sprintf("%s (by %s)", c.Type, strings.Join(by, ", ")))
		}
	}
	if len(dom) > 0 {
		fmt.Fprintf(b, "Dominated: %s.\n", strings.Join(dom, "; "))
	}
	b.WriteString("\n")
}

// writeHandOffs names the capacity plans made from the ladder (nothing when none was).
func writeHandOffs(b *strings.Builder, res *Result) {
	if len(res.HandOffs) == 0 {
		return
	}
	b.WriteString("## Hand-off\n\n")
	for _, h := range res.HandOffs {
		fmt.Fprintf(b, "- capacity plan `%s` (sha256 `%s`) of %s\n", h.Plan, short(h.SHA256), strings.Join(slices.DeleteFunc(slices.Clone(h.Candidates), func(s string) bool { return s == "" }), " and "))
	}
	b.WriteString("\nIts capacity receipt names this ladder in its description.\n\n")
}

// writeImatrix says which importance matrix the candidates were quantized with (nothing for
// a plan without one).
func writeImatrix(b *strings.Builder, res *Result) {
	im := res.Imatrix
	if im == nil {
		return
	}
	var shas []string
	for _, r := range res.Records {
		if m := "`" + short(r.Imatrix) + "`"; r.Imatrix != "" && !slices.Contains(shas, m) {
			shas = append(shas, m)
		}
	}
	fmt.Fprintf(b, "Every candidate is quantized with an importance matrix (llama-imatrix on the reference, calibration text `%s`, sha256 `%s`, %d chunks of %d tokens): sha256 %s.\n\n",
		im.Calibration.Path, short(im.Calibration.SHA256), im.Chunks, im.Ctx, orDash(strings.Join(shas, ", ")))
}

// writeVerdicts is the prediction scoreboard (nothing when the plan registered none).
func writeVerdicts(b *strings.Builder, res *Result) {
	if len(res.Verdicts) == 0 {
		return
	}
	b.WriteString("## Predictions\n\n| prediction | claim | about | expectation | observed | verdict | detail | sources |\n|---|---|---|---|---:|---|---|---|\n")
	for i, v := range res.Verdicts {
		claim, about := "—", "—"
		if i < len(res.Predictions) {
			claim, about = res.Predictions[i].Text, res.Predictions[i].About.String()
		}
		obs := "—"
		if v.Value != nil {
			obs = fmt.Sprintf("%.4g", *v.Value)
		}
		word := v.Word()
		if v.Outcome == study.Answered {
			word = "ANSWERED"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", v.Prediction, cellText(claim), cellText(about), cellText(v.Expected), obs, word, cellText(v.Detail), cellText(orDash(strings.Join(v.Sources, "; "))))
	}
	b.WriteString("\nEach verdict is computed from the records in this bundle against the prediction registered with the plan.\n\n")
}

// cellText keeps a table cell on its row.
func cellText(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

func writeProvenance(b *strings.Builder, res *Result) {
	b.WriteString("## Provenance\n\n| type | file sha256 | cache key | made | KLD leg (lines) | speed legs |\n|---|---|---|---|---|---|\n")
	for _, r := range res.Records {
		made := "quantized"
		if r.Reused {
			made = "reused (key matched)"
		}
		if r.SHA256 == "" {
			made = "—"
		}
		kld := "—"
		if r.KLDLeg != "" {
			var ls []string
			for _, l := range r.KLDLines {
				ls = append(ls, fmt.Sprint(l))
			}
			kld = fmt.Sprintf("%s (%s)", r.KLDLeg, strings.Join(ls, ", "))
		}
		var legs []string
		for _, c := range r.Bench {
			if !slices.Contains(legs, c.Leg) {
				legs = append(legs, c.Leg)
			}
		}
		fmt.Fprintf(b, "| %s | `%s` | `%s` | %s | %s | %s |\n", r.Type, short(r.SHA256), short(r.Key), made, kld, strings.Join(legs, ", "))
	}
	for _, r := range res.Records {
		for _, why := range r.Incomplete {
			fmt.Fprintf(b, "\n- %s: %s", r.Type, why)
		}
	}
	b.WriteString("\n")
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "—"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
