package receipt

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"sparkbench/app/study"
)

// throughputMarkdown is the receipt of a throughput study, one section after another; the
// closing sections (redaction, plots, definitions) are the capacity receipt's too.
func throughputMarkdown(d *ThroughputStudy) []byte {
	w := &mdWriter{}
	plan, err := study.Decode(FilePlan, d.Plan)
	if err != nil {
		plan = &study.Plan{}
	}
	tmHeader(w, d, plan)
	w.heading(2, "Results by depth")
	depthTables(w, d, plan)
	tmProcesses(w, d)
	tmAdaptive(w, d)
	tmEnergy(w, d)
	tmFigures(w, d)
	tmKVQuality(w, d)
	tmScoreboard(w, d)
	tmAmendments(w, d)
	tmDeviations(w, d)
	tmFindings(w, d)
	tmLegs(w, d)
	tmLaunch(w, d, plan)
	tmRPC(w, d)
	w.heading(2, "Methodology")
	methodology(w, plan, study.CountedFlags(plan, d.Report.Results), d.adaptiveRules(), energyMethodology(plan, d.Energy))
	w.heading(2, "Provenance and fingerprints")
	provenanceTable(w, d)
	w.heading(2, "Redaction")
	redactionSection(w, d.Redaction)
	plotsSection(w, d.Plots)
	tmReproduce(w, d)
	w.heading(2, "Boundary")
	w.line("This is a bounded llama-bench study on one machine, with this build and these model files. It is not a serving benchmark (no concurrent requests, no HTTP, no time to first token), not a quality evaluation, and not a cost or energy claim. Prompt and generation rates are closed-loop microbenchmarks at fixed depths; other depths, batch sizes, flags, builds or machines need their own legs.")
	w.blank()
	w.heading(2, "Metric definitions")
	definitionsSection(w, d.Definitions)
	return w.bytes()
}

// tmHeader writes the title, scope, abbreviations and halt.
func tmHeader(w *mdWriter, d *ThroughputStudy, plan *study.Plan) {
	rep := d.Report
	s := rep.Study
	w.line("# %s — throughput receipt", inline(s.Name))
	w.blank()
	w.line("> **Study %d · %s · %d/%d legs finished** · plan SHA-256 %s", s.ID, inline(s.Status), s.LegsDone, s.LegsTotal, code(s.PlanSHA256))
	w.blank()
	if plan.Description != "" {
		w.line("%s", inline(plan.Description))
		w.blank()
	}
	w.line("**Scope:** llama-bench throughput on one machine: prompt processing and token generation at fixed KV-cache depths, with predictions registered before any leg ran and answered from the rows named below.")
	w.blank()
	over := "llama-bench's repetitions"
	switch {
	case processMeans(d, plan):
		over = "the kept repetitions of every chunk (adaptive repetitions), the mean being the mean of the chunks' means"
	case d.adaptiveRules():
		over = "the kept repetitions of every chunk (adaptive repetitions)"
	}
	w.line("`pp<N>` = prompt processing of N tokens · `tg<N>` = generation of N tokens · `@ d<D>` = D tokens already in the KV cache · `t/s` = tokens per second, mean ± sd over %s · `CV` = sd / mean.", over)
	w.blank()
	if s.Halted != "" {
		w.line("**Halted:** %s", inline(s.Halted))
		w.blank()
	}
}

// tmFigures writes the derived figures and their sources.
func tmFigures(w *mdWriter, d *ThroughputStudy) {
	rep := d.Report
	w.heading(2, "Derived figures")
	if len(rep.Figures) == 0 {
		w.line("No derived figures: the study has no results yet.")
		w.blank()
	} else {
		var rows [][]string
		for _, f := range rep.Figures {
			val, detail := "n/a", f.Detail
			if f.Problem != "" {
				detail = f.Problem
			} else if f.Value != nil {
				val = figureValue(f.Figure, *f.Value)
			}
			rows = append(rows, []string{cell(f.Label), val, cell(detail), cell(strings.Join(f.Sources, ", "))})
		}
		w.table([]string{"Figure", "Value", "Detail", "Sources"}, "lrll", rows)
	}
}

// tmScoreboard writes every prediction, its computed and journaled verdicts, deviations and human verdicts.
func tmScoreboard(w *mdWriter, d *ThroughputStudy) {
	rep := d.Report
	w.heading(2, "Prediction scoreboard")
	if len(rep.Scoreboard) == 0 {
		w.line("The plan registered no predictions.")
		w.blank()
	} else {
		var rows [][]string
		var devs []string
		for _, sc := range rep.Scoreboard {
			obs := "—"
			if v := sc.Verdict.Value; v != nil {
				obs = num(*v)
			}
			word := sc.Word
			if sc.Amended {
				word += " (amended)"
			}
			recorded := "—"
			if r := sc.Recorded; r != nil {
				recorded = cell(r.Outcome) + " at " + code(r.At.UTC().Format("2006-01-02T15:04:05Z"))
			}
			human := "—"
			if h := sc.Human; h != nil {
				human = h.Outcome
			}
			rows = append(rows, []string{cell(sc.Prediction), cell(sc.Text), cell(sc.About), cell(sc.Expected), obs, cell(word), recorded, cell(human)})
			for _, dv := range sc.Deviations {
				devs = append(devs, fmt.Sprintf("- **%s**, deviation (%s): %s — %s", inline(sc.Prediction), inline(dv.Change), inline(dv.Word), inline(dv.Reason)))
			}
			if strings.Contains(sc.Expected, study.StatsJudged) {
				devs = append(devs, fmt.Sprintf("- **%s**, judged on the repetitions: %s", inline(sc.Prediction), inline(sc.Verdict.Detail)))
			}
			if sp := sc.Processes; sp != nil && d.processRules() {
				devs = append(devs, fmt.Sprintf("- **%s**, %s", inline(sc.Prediction), inline(sp.Words)))
			}
			if strings.Contains(sc.Expected, study.StatsJudgedProcesses) {
				devs = append(devs, fmt.Sprintf("- **%s**, judged on the processes: %s", inline(sc.Prediction), inline(sc.Verdict.Detail)))
			}
			if sc.Verdict.Problem != "" && sc.Verdict.Outcome != study.Pending {
				devs = append(devs, fmt.Sprintf("- **%s** cannot be answered: %s", inline(sc.Prediction), inline(sc.Verdict.Problem)))
			}
		}
		w.table([]string{"Prediction", "Claim", "About", "Expectation", "Observed", "Verdict", "Journaled verdict", "Human verdict"}, "llllrlll", rows)
		w.line("The verdict is computed from the result rows in this bundle; the journaled verdict is the one the notebook recorded when the prediction's legs finished. A deviation's would-be verdict is shown, never the verdict of record.")
		w.blank()
		for _, l := range devs {
			w.line("%s", l)
		}
		if len(devs) > 0 {
			w.blank()
		}
		var hv [][]string
		for _, sc := range rep.Scoreboard {
			if h := sc.Human; h != nil {
				author := h.Author
				if author == "" {
					author = "—"
				}
				hv = append(hv, []string{cell(sc.Prediction), cell(h.Outcome), cell(h.Rationale), cell(author), code(h.At.UTC().Format("2006-01-02T15:04:05Z"))})
			}
		}
		w.heading(3, "Human verdicts")
		if len(hv) == 0 {
			w.line("None recorded.")
			w.blank()
		} else {
			w.table([]string{"Prediction", "Verdict", "Rationale", "Author", "Recorded"}, "lllll", hv)
		}
	}
}

// tmAmendments writes the amendments accepted before their legs ran.
func tmAmendments(w *mdWriter, d *ThroughputStudy) {
	rep := d.Report
	w.heading(2, "Amendments")
	if len(rep.Amendments) == 0 {
		w.line("None: every prediction was judged as registered.")
		w.blank()
	} else {
		var rows [][]string
		for _, a := range rep.Amendments {
			var ch study.AmendmentChange
			_ = json.Unmarshal(a.Change, &ch)
			rows = append(rows, []string{cell(a.Target), cell(ch.Before.Expectation()), cell(ch.After.Expectation()), cell(a.Reason), code(a.At.UTC().Format("2006-01-02T15:04:05Z"))})
		}
		w.table([]string{"Target", "Before", "After", "Reason", "Recorded"}, "lllll", rows)
		w.line("Amendments were accepted only while no leg they touch had run.")
		w.blank()
	}
}

// tmDeviations writes the recorded deviations.
func tmDeviations(w *mdWriter, d *ThroughputStudy) {
	rep := d.Report
	w.heading(2, "Deviations")
	if len(rep.Deviations) == 0 {
		w.line("None recorded.")
		w.blank()
	} else {
		var rows [][]string
		for _, dv := range rep.Deviations {
			p := dv.Prediction
			if p == "" {
				p = "—"
			}
			rows = append(rows, []string{"DEVIATION", cell(dv.Description), cell(p), code(dv.At.UTC().Format("2006-01-02T15:04:05Z"))})
		}
		w.table([]string{"Kind", "Description", "Prediction", "Recorded"}, "llll", rows)
	}
}

// tmFindings writes the numbered findings.
func tmFindings(w *mdWriter, d *ThroughputStudy) {
	rep := d.Report
	w.heading(2, "Findings")
	if len(rep.Findings) == 0 {
		w.line("None recorded.")
		w.blank()
	} else {
		var rows [][]string
		for _, f := range rep.Findings {
			legs, preds := strings.Join(f.Legs, ", "), strings.Join(f.Predictions, ", ")
			if legs == "" {
				legs = "—"
			}
			if preds == "" {
				preds = "—"
			}
			rows = append(rows, []string{cell(f.Label), cell(f.Text), cell(legs), cell(preds)})
		}
		w.table([]string{"Finding", "Text", "Legs", "Predictions"}, "llll", rows)
	}
}

// tmReproduce writes the commands that verify and re-derive the bundle.
func tmReproduce(w *mdWriter, d *ThroughputStudy) {
	w.heading(2, "Reproduce and compare")
	w.line("From the bundle's folder (or on the `.tar.gz`), with %s, the version that wrote it:", code(d.Provenance.Sparkbench))
	w.blank()
	w.line("```bash")
	w.line("sha256sum --check SHA256SUMS")
	w.line("sparkbench verify .")
	w.line("```")
	w.blank()
	w.line("`sparkbench verify` checks every file against SHA256SUMS, re-walks the journal excerpt's hash chain, re-assembles `study.json` and `receipt.md` from the raw files (plan, journal, leg records, rows, model records) and re-renders the plots, and compares each byte for byte. It exits 0 only if all hold; otherwise it names each file that differs and its first differing line.")
	w.blank()
}

// plotsSection lists the bundle's charts (PNG, with a link to the SVG), when there are any.
func plotsSection(w *mdWriter, names []string) {
	if len(names) == 0 {
		return
	}
	w.heading(2, "Plots")
	for _, p := range names {
		if strings.HasSuffix(p, ".png") {
			svg := strings.TrimSuffix(p, ".png") + ".svg"
			w.line("![%s](%s) ([SVG](%s))", inline(strings.TrimSuffix(path.Base(p), ".png")), p, svg)
			w.blank()
		}
	}
}

// definitionsSection writes every metric definition, by name.
func definitionsSection(w *mdWriter, defs map[string]string) {
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.line("- %s: %s", code(k), inline(defs[k]))
	}
}

// figureValue prints a derived figure as `study show` does: changes signed, fractions of
// something unsigned percentages, everything else with four significant digits.
func figureValue(f study.Figure, x float64) string {
	switch f {
	case study.FigureSlope, study.FigureContamination:
		return spct(x)
	case study.FigureEfficiency, study.FigureRepeatabilityCV, study.FigureCV:
		return pct(x)
	case study.FigureDeviceRatio:
		return fmt.Sprintf("%.3f×", x)
	}
	return num(x)
}

func depthTables(w *mdWriter, d *ThroughputStudy, plan *study.Plan) {
	rep := d.Report
	if len(rep.Results) == 0 {
		w.line("No results yet: no plan leg has finished with result rows.")
		w.blank()
		return
	}
	depths := slices.Clone(plan.Axes.Depths)
	for _, c := range rep.Results {
		if !slices.Contains(depths, int(c.Depth)) {
			depths = append(depths, int(c.Depth))
		}
	}
	sort.Ints(depths)
	files := map[string]string{}
	for _, m := range plan.Models {
		files[m.ID] = path.Base(strings.ReplaceAll(m.Path, "\\", "/"))
	}
	configs := map[string]map[string]bool{}
	for _, c := range rep.Results {
		if configs[c.Model] == nil {
			configs[c.Model] = map[string]bool{}
		}
		configs[c.Model][c.Config] = true
	}
	type rowKey struct{ test, config, repeat string }
	byModel := map[string][]rowKey{}
	cells := map[string]map[rowKey]map[int]study.ReportCell{}
	var models []string
	for _, c := range rep.Results {
		if cells[c.Model] == nil {
			cells[c.Model] = map[rowKey]map[int]study.ReportCell{}
			models = append(models, c.Model)
		}
		rk := rowKey{test: c.Test, config: c.Config}
		if _, rp, ok := strings.Cut(c.Leg, "#"); ok {
			rk.repeat = rp
		}
		if cells[c.Model][rk] == nil {
			cells[c.Model][rk] = map[int]study.ReportCell{}
			byModel[c.Model] = append(byModel[c.Model], rk)
		}
		cells[c.Model][rk][int(c.Depth)] = c
	}
	header := []string{"Test"}
	align := "l"
	for _, dp := range depths {
		header = append(header, fmt.Sprintf("d%d", dp))
		align += "r"
	}
	for _, m := range models {
		title := m
		if f := files[m]; f != "" {
			title += " · " + f
		}
		w.heading(3, title)
		var rows [][]string
		for _, rk := range byModel[m] {
			label := rk.test
			if len(configs[m]) > 1 {
				label += " " + rk.config
			}
			if rk.repeat != "" {
				label += " (#" + rk.repeat + ")"
			}
			row := []string{cell(label)}
			for _, dp := range depths {
				if c, ok := cells[m][rk][dp]; ok {
					row = append(row, f2(c.Mean)+" ± "+f2(c.SD))
				} else {
					row = append(row, "—")
				}
			}
			rows = append(rows, row)
		}
		w.table(header, align, rows)
		if len(configs[m]) == 1 {
			for cfg := range configs[m] {
				w.line("Configuration: %s.", code(cfg))
				w.blank()
			}
		}
	}
	if processMeans(d, plan) {
		w.line("Each value merges the cell's chunks, one llama-bench process each: the mean of the chunks' means ± the sd over every kept repetition of every chunk, tokens per second (warm-up repetitions the plan's rule dropped are not among them; how each cell ended is under *Adaptive repetitions*); `study.json` names the rows merged into each (`results[].source`, e.g. `leg 1 seq 0, leg 3 seq 0`: row 0 of notebook legs 1 and 3).")
	} else if d.adaptiveRules() {
		w.line("Each value merges the cell's chunks, one llama-bench process each: mean ± sd over every kept repetition of every chunk, tokens per second (warm-up repetitions the plan's rule dropped are not among them; how each cell ended is under *Adaptive repetitions*); `study.json` names the rows merged into each (`results[].source`, e.g. `leg 1 seq 0, leg 3 seq 0`: row 0 of notebook legs 1 and 3).")
	} else {
		w.line("Each value is one llama-bench row (avg_ts ± stddev_ts over its repetitions, tokens per second); `study.json` names the row of each (`results[].source`, e.g. `leg 2 seq 1`: row 1 of notebook leg 2).")
	}
	w.blank()
}

// methodology writes how the study was run; extra lines (the telemetry's) come before the
// closing line on the plan's registration; counted: the result cells a counting CV gate
// flagged (study.CountedFlags).
func methodology(w *mdWriter, p *study.Plan, counted []string, adaptive bool, extra []string) {
	a := p.Axes
	var models []string
	for _, m := range p.Models {
		s := code(m.ID) + " = " + code(path.Base(m.Path))
		if m.Source != "" {
			s += " from " + code(m.Source)
			if m.Revision != "" {
				s += " at " + code(m.Revision)
			}
		}
		models = append(models, s)
	}
	w.line("- Models: %s; each hashed and checked against the plan's SHA-256 before any leg ran.", strings.Join(models, "; "))
	if ad := p.Adaptive; adaptive && ad != nil {
		w.line("- Depths %s; prompt %s tokens; generation %s tokens; adaptive repetitions: %s to %s per test, in chunks (one llama-bench process each: the first %s repetitions, each later one %s), every leg's chunks interleaved round by round until the stopping rule stopped them all together (*Adaptive repetitions* above; `axes.reps` is not used).",
			code(joinInts(a.Depths)), code(joinInts(a.NPrompt)), code(joinInts(a.NGen)), code(fmt.Sprint(ad.MinReps)), code(fmt.Sprint(ad.MaxReps)), code(fmt.Sprint(ad.MinReps)), code(fmt.Sprint(ad.ChunkReps)))
	} else {
		w.line("- Depths %s; prompt %s tokens; generation %s tokens; %s repetitions per test.", code(joinInts(a.Depths)), code(joinInts(a.NPrompt)), code(joinInts(a.NGen)), code(fmt.Sprint(a.Reps)))
	}
	var kv []string
	for _, k := range a.KV {
		kv = append(kv, k.K+"/"+k.V)
	}
	fixed := fmt.Sprintf("batch %s, micro-batch %s, flash attention %s, KV cache %s, GPU layers %s", code(joinInts(a.Batch)), code(joinInts(a.Ubatch)),
		code(strings.Join(a.FlashAttn, ", ")), code(strings.Join(kv, ", ")), code(joinInts(a.NGL)))
	if len(a.Threads) > 0 {
		fixed += ", threads " + code(joinInts(a.Threads))
	}
	if len(a.ExtraArgs) > 0 {
		fixed += ", extra arguments " + code(strings.Join(a.ExtraArgs, " "))
	}
	w.line("- Held fixed: %s.", fixed)
	split := map[study.Split]string{study.SplitCombined: "one llama-bench process per model with every depth",
		study.SplitPerDepth:      "one llama-bench process per model and depth (a crash loses one depth, not the sweep)",
		study.SplitCombinedModel: "one llama-bench process for every model and depth"}[p.Split]
	w.line("- Legs: split %s: %s; output `-o jsonl`, every row kept with its status.", code(string(p.Split)), split)
	if adaptive && p.Adaptive != nil {
		w.line("- CV gates: not applied to the chunks: a chunk's spread is what the stopping rule answers with more chunks.")
	} else if p.Gates.CountsFlagged() {
		w.line("- CV gates: tg %s, pp at depth %s, pp at d0 %s; a test above its gate is flagged and counted with its flag (%s `count`): the process is anomalous, not missing, and its leg goes on.", pct(p.Gates.CVTG), pct(p.Gates.CVPPDepth), pct(p.Gates.CVPPD0), code("on_cv"))
		if len(counted) == 0 {
			w.line("- Counted with a CV flag: none.")
		}
		for _, f := range counted {
			w.line("- Counted with a CV flag: %s.", f)
		}
	} else {
		w.line("- CV gates: tg %s, pp at depth %s, pp at d0 %s; a test above its gate is flagged and its leg halted, the queue continues.", pct(p.Gates.CVTG), pct(p.Gates.CVPPDepth), pct(p.Gates.CVPPD0))
	}
	if c := p.Canary; c != nil {
		base := "its first run sets the baseline"
		if c.BaselineTG > 0 {
			base = "baseline tg " + num(c.BaselineTG) + " t/s"
		}
		w.line("- Canary: %s, a short bench (prompt %s, generation %s) after any crash; it fails when tg falls more than %s below the baseline (%s), which halts the study.", code(c.Model), code(fmt.Sprint(c.NPrompt)), code(fmt.Sprint(c.NGen)), pct(c.MaxDrop), base)
	} else {
		w.line("- Canary: none.")
	}
	if r := p.Repeatability; r != nil {
		w.line("- Repeatability: leg %s again at %s.", code(r.Leg), code(strings.Join(r.At, ", ")))
	}
	for _, c := range p.Conditions {
		legs := "every leg"
		if len(c.Legs) > 0 {
			legs = code(strings.Join(c.Legs, ", "))
		}
		w.line("- Declared condition (%s): %s.", legs, inline(c.Text))
	}
	switch b := p.Bandwidth; {
	case b == nil:
		w.line("- Memory bandwidth: none given; no ceilings.")
	case b.GBs > 0:
		w.line("- Memory bandwidth: %s GB/s entered in the plan, for the ceilings.", num(b.GBs))
	case b.Measure:
		w.line("- Memory bandwidth: measured once per study (STREAM triad), for the ceilings.")
	}
	for _, l := range extra {
		w.line("%s", l)
	}
	w.line("- The plan and its predictions were frozen (registered, SHA-256 and hash-chained journal entry) before any leg ran; later changes are amendments (accepted only while no leg they touch had run) or deviations.")
	w.blank()
}

func provenanceTable(w *mdWriter, d *ThroughputStudy) {
	pv := d.Provenance
	rows := [][]string{
		{"Study", code(fmt.Sprintf("%d", d.Report.Study.ID)) + " · " + cell(d.Report.Study.Name)},
		{"Plan SHA-256", code(pv.PlanSHA256)},
		{"Registered", code(pv.RegisteredAt)},
	}
	for _, b := range pv.Builds {
		rows = append(rows, []string{"Build (llama-bench rows)", code(fmt.Sprintf("commit %s · build %d · %s", b.Commit, b.Number, b.Backends)) + " · " + code(fmt.Sprintf("%d rows", b.Rows))})
	}
	for _, b := range pv.Binaries {
		rows = append(rows, []string{"Binary", code(b.Path) + " · SHA-256 " + code(b.SHA256) + " · " + code(fmt.Sprintf("%d bytes", b.Bytes))})
	}
	for _, b := range pv.Missing {
		rows = append(rows, []string{"Binary (not hashed)", code(b.Path) + " · " + cell(b.Why)})
	}
	if pv.BinariesNote != "" {
		rows = append(rows, []string{"Binary hashes", cell(pv.BinariesNote)})
	}
	for _, b := range pv.NotebookBuilds {
		v := code(b.VersionLine) + " · " + code(fmt.Sprintf("build %d · commit %s · %s", b.BuildNumber, b.Commit, b.Backends)) + " · recorded " + code(b.RecordedAt)
		names := make([]string, 0, len(b.Binaries))
		for n := range b.Binaries {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v += " · " + code(n) + " SHA-256 " + code(b.Binaries[n])
		}
		rows = append(rows, []string{"Build record " + code(fmt.Sprint(b.ID)) + " (notebook, hashed when the study ran)", v})
	}
	for _, m := range pv.NotebookMachines {
		v := "CPU " + code(m.CPUModel) + " · " + code(fmt.Sprintf("%d cores · %d bytes RAM", m.Cores, m.RAMBytes)) + " · OS " + code(m.OS) + " · kernel " + code(m.Kernel)
		if m.GPU != "" {
			v += " · GPU " + code(m.GPU)
		}
		if m.Driver != "" {
			v += " · driver " + code(m.Driver)
		}
		if m.MemBandwidthGBs > 0 {
			v += " · bandwidth " + code(fmt.Sprintf("%g GB/s", m.MemBandwidthGBs))
		}
		v += " · fingerprint " + code(m.Fingerprint) + " · recorded " + code(m.RecordedAt)
		rows = append(rows, []string{"Machine record " + code(fmt.Sprint(m.ID)) + " (notebook)", v})
	}
	for _, m := range pv.Machines {
		gpu := m.GPU
		if gpu == "" {
			gpu = "none reported"
		}
		rows = append(rows, []string{"Machine (llama-bench rows)", "CPU " + code(m.CPU) + " · GPU " + code(gpu) + " · " + code(fmt.Sprintf("%d rows", m.Rows))})
	}
	rows = append(rows, []string{"Notebook machine / build records", code(fmt.Sprint(pv.MachineIDs)) + " / " + code(fmt.Sprint(pv.BuildIDs))})
	for _, m := range pv.Models {
		id := m.Model
		if id == "" {
			id = "(no plan model)"
		}
		v := code(path.Base(m.Path)) + " · " + code(fmt.Sprintf("%d bytes", m.Bytes)) + " · SHA-256 " + code(m.SHA256) + " · " + code(m.Status)
		if m.Quant != "" || m.Architecture != "" {
			v += " · " + code(strings.TrimSpace(m.Architecture+" "+m.Quant))
		}
		if m.Header == "" && m.HeaderNote != "" {
			v += " · header not in the bundle: " + cell(m.HeaderNote)
		}
		rows = append(rows, []string{"Model " + code(id), v})
	}
	for _, l := range d.Legs {
		if l.Fingerprint != "" {
			rows = append(rows, []string{"Leg " + code(l.Label), "fingerprint " + code(l.Fingerprint) + " · transcript SHA-256 " + code(l.TranscriptSHA256)})
		}
	}
	j := d.Journal
	rows = append(rows,
		[]string{"Journal excerpt", code(fmt.Sprintf("entries %d–%d", j.FirstSeq, j.LastSeq)) + " · " + code(fmt.Sprintf("%d entries, %d of this study", j.Entries, j.StudyEntries)) + " · chain re-walked, intact"},
		[]string{"Journal excerpt anchors", "first prev_hash " + code(j.FirstPrevHash) + " · last hash " + code(j.LastHash)},
		[]string{"Notebook chain head when written", code(fmt.Sprintf("seq %d", pv.NotebookHead.Seq)) + " · " + code(pv.NotebookHead.Hash)},
		[]string{"Row values", cell(pv.Rows) + " · " + code(fmt.Sprintf("%d legs tied by rows_sha256, %d by count and statuses only", pv.RowsTied, pv.RowsUntied))},
		[]string{"Transcripts", cell(pv.Transcripts)},
		[]string{"Raw files", code(fmt.Sprintf("%d files, %d bytes", pv.RawFiles, pv.RawBytes))},
		[]string{"Written by", code(pv.Sparkbench)},
	)
	w.table([]string{"Field", "Value"}, "ll", rows)
	w.line("Compare the notebook chain head with `sparkbench notebook verify` on the machine that holds the notebook: a matching head proves these journal entries are the notebook's.")
	w.blank()
}

func redactionSection(w *mdWriter, r Redaction) {
	if !r.Redacted {
		w.line("Not redacted (written with `--no-redact`): every file holds the paths as they were recorded.")
		w.blank()
		return
	}
	total := 0
	names := make([]string, 0, len(r.Files))
	for f, n := range r.Files {
		total += n
		names = append(names, f)
	}
	sort.Strings(names)
	w.line("The home folder of the user who wrote the bundle is written %s in transcripts, leg records, rows, model records and manifests: %s replacements in %s files. The folder itself is not recorded anywhere in the bundle's redacted files.", code(r.Replacement), code(fmt.Sprint(total)), code(fmt.Sprint(len(names))))
	w.blank()
	if len(r.Verbatim) > 0 {
		var vs []string
		for _, v := range r.Verbatim {
			vs = append(vs, code(v))
		}
		w.line("Kept verbatim because their bytes are hashed elsewhere (the journal's chain, the plan's SHA-256): %s. They may name folders as they were recorded.", strings.Join(vs, ", "))
		w.blank()
	}
	if len(names) > 0 {
		var rows [][]string
		for _, f := range names {
			rows = append(rows, []string{code(f), code(fmt.Sprint(r.Files[f]))})
		}
		w.table([]string{"File", "Replacements"}, "lr", rows)
	}
}
