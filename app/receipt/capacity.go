package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/kinds"
	"sparkbench/runner/vocab"
)

// capacityBundle is a capacity bundle's raw files, read through bundle.json's input map.
type capacityBundle struct {
	ix         *Index
	plan       *capacity.Plan
	planSHA    string // of the plan file's bytes
	promptSHA  string // of the prompt plan's bytes ("" when the bundle has none)
	manifest   *runManifest
	manifestSH string
	redaction  Redaction
	journal    *capacityJournal // nil: written from a run folder, without the notebook
	rawFiles   int
	rawBytes   int64
}

// runManifest is what the receipt reads of a capacity run's run.json (app/capacity.RunReport;
// read leniently: the run folder's format may gain fields).
type runManifest struct {
	Schema     string         `json:"schema"`
	Machine    *vocab.Machine `json:"machine"`
	PlanSHA256 string         `json:"plan_sha256"`
	PromptPlan string         `json:"prompt_plan_sha256"`
	Started    string         `json:"started"`
	Build      *struct {
		VersionLine string
		BuildNumber int
		Commit      string
		Backends    []string
		Binaries    []struct {
			Name   string
			Size   int64
			SHA256 string
		}
	} `json:"build"`
	Lifetimes []struct {
		Key    string `json:"key"`
		Server struct {
			Argv     []string        `json:"argv"`
			Attempts []vocab.Attempt `json:"attempts"`
			Network  *runNetwork     `json:"network"`
		} `json:"server"`
	} `json:"lifetimes"`
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// assembleCapacity runs capacity.Assemble on the bundle's raw files, as `capacity assemble`
// would with the same files: study.json is byte-identical to what that command writes.
func assembleCapacity(files Files, ix *Index) ([]byte, []byte, error) {
	cb, res, js, err := readCapacity(files, ix)
	if err != nil {
		return nil, nil, err
	}
	return js, capacityMarkdown(cb, res), nil
}

func readCapacity(files Files, ix *Index) (*capacityBundle, *capacity.Result, []byte, error) {
	ci := ix.Capacity
	cb := &capacityBundle{ix: ix}
	for name, b := range files {
		if !IsDerived(name) {
			cb.rawFiles++
			cb.rawBytes += int64(len(b))
		}
	}
	pb, err := need(files, ci.Plan)
	if err != nil {
		return nil, nil, nil, err
	}
	if cb.plan, err = capacity.Decode(ci.Plan, pb); err != nil {
		return nil, nil, nil, err
	}
	cb.planSHA = sha(pb)
	if ci.PromptPlan != "" {
		b, err := need(files, ci.PromptPlan)
		if err != nil {
			return nil, nil, nil, err
		}
		cb.promptSHA = sha(b)
	}
	if ci.Manifest != "" {
		b, err := need(files, ci.Manifest)
		if err != nil {
			return nil, nil, nil, err
		}
		cb.manifest = &runManifest{}
		if err := json.Unmarshal(b, cb.manifest); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", ci.Manifest, err)
		}
		cb.manifestSH = sha(b)
	}
	if b, ok := files[FileRedaction]; ok {
		if err := decodeStrict(FileRedaction, b, &cb.redaction); err != nil {
			return nil, nil, nil, err
		}
	}
	in := capacity.Inputs{Requests: map[capacity.LifetimeKey]capacity.InputFile{}, RSS: map[capacity.LifetimeKey]capacity.InputFile{},
		ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{}, Quality: map[capacity.QualityKey]capacity.InputFile{}, BenchTG: ci.BenchTG,
		Telemetry: map[capacity.LifetimeKey]capacity.InputFile{}}
	for _, role := range []struct {
		flag  string
		m     map[string]string
		files map[capacity.LifetimeKey]capacity.InputFile
	}{{capacity.FlagRequests, ci.Requests, in.Requests}, {capacity.FlagRSS, ci.RSS, in.RSS}, {capacity.FlagServerLog, ci.ServerLogs, in.ServerLogs},
		{capacity.FlagTelemetry, ci.Telemetry, in.Telemetry}} {
		for ks, name := range role.m {
			k, err := capacity.ParseLifetimeKey(ks)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %s %v", FileIndex, role.flag, err)
			}
			b, err := need(files, name)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s %s: %w", role.flag, ks, err)
			}
			role.files[k] = capacity.InputFile{Name: name, Data: b}
		}
	}
	for ks, name := range ci.Quality {
		k, err := capacity.ParseQualityKey(ks)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %s %v", FileIndex, capacity.FlagQuality, err)
		}
		b, err := need(files, name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s %s: %w", capacity.FlagQuality, ks, err)
		}
		in.Quality[k] = capacity.InputFile{Name: name, Data: b}
	}
	for id, name := range ci.Batched {
		b, err := need(files, name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s %s: %w", capacity.FlagBatched, id, err)
		}
		if in.Batched == nil {
			in.Batched = map[string]capacity.InputFile{}
		}
		in.Batched[id] = capacity.InputFile{Name: name, Data: b}
	}
	for _, name := range ci.Evidence {
		if _, err := need(files, name); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: evidence: %w", FileIndex, err)
		}
	}
	if err := servingBundleInputs(files, ci, &in); err != nil {
		return nil, nil, nil, err
	}
	res, err := capacity.Assemble(cb.plan, in)
	if err != nil {
		var ie *capacity.InputError
		if errors.As(err, &ie) {
			m := map[string]map[string]string{capacity.FlagRequests: ci.Requests, capacity.FlagRSS: ci.RSS, capacity.FlagServing: ci.Serving,
				capacity.FlagServerLog: ci.ServerLogs, capacity.FlagQuality: ci.Quality, capacity.FlagBatched: ci.Batched, capacity.FlagTelemetry: ci.Telemetry}[ie.Flag]
			if name := m[ie.Key]; name != "" {
				return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			if ie.Flag == capacity.FlagPlan {
				return nil, nil, nil, fmt.Errorf("%s: %w", ci.Plan, err)
			}
		}
		return nil, nil, nil, err
	}
	js, err := res.Marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	if ci.Journal != "" {
		if cb.journal, err = readCapacityJournal(files, ci, &res, js); err != nil {
			return nil, nil, nil, err
		}
	}
	return cb, &res, js, nil
}

// capacityMarkdown is the receipt of a capacity or concurrency study, one section after
// another.
func capacityMarkdown(cb *capacityBundle, r *capacity.Result) []byte {
	w := &mdWriter{}
	capHeader(w, r)
	capSelected(w, r)
	capQuality(w, r)
	capScaling(w, r)
	capServerTax(w, r)
	capRPC(w, r)
	capServing(w, r)
	capEnergy(w, r)
	capKVQuality(w, cb, r)
	capPredictions(w, cb, r)
	capMethodology(w, r)
	capProvenance(w, cb, r)
	capLaunch(w, cb)
	capNetwork(w, cb)
	w.heading(2, "Redaction")
	redactionSection(w, cb.redaction)
	plotsSection(w, capacityPlotNames(r))
	capReproduce(w, cb, r)
	w.heading(2, "Boundary")
	w.line("%s", capBoundary(r))
	w.blank()
	w.heading(2, "Metric definitions")
	definitionsSection(w, r.Definitions)
	return w.bytes()
}

// capHeader writes the title, scope, abbreviations and decision boundary.
func capHeader(w *mdWriter, r *capacity.Result) {
	p := r.Plan
	kind := "Capacity"
	if r.Kind == kinds.Concurrency {
		kind = "Concurrency"
	}
	w.line("# %s — %s receipt", inline(p.Name), strings.ToLower(kind))
	w.blank()
	w.line("> **%s study · plan SHA-256 %s**", kind, code(r.PlanSHA256))
	w.blank()
	if p.Description != "" {
		w.line("%s", inline(p.Description))
		w.blank()
	}
	passes := "the " + strings.Join(p.Passes, " and ") + " pass"
	if len(p.Passes) > 1 {
		passes = "counterbalanced " + strings.Join(p.Passes, " and ") + " passes"
	}
	w.line("**Scope:** a bounded fixed-concurrency study on one machine: llama-server slots × simultaneous clients for %s, measured in %s under predeclared gates.", candidatesText(p), passes)
	w.blank()
	w.line("`P` = llama-server slots · `C` = simultaneous clients · `TTFT` = time to first token · `E2E` = end-to-end latency · `RSS` = peak resident memory · `SLO` = the predeclared service-level limit.")
	w.blank()
	if len(r.Candidates) > 1 {
		w.line("**Decision boundary:** this receipt does not choose between the candidates. Choose the model candidate first, then use its row here to select a serving point.")
		w.blank()
	}
}

// capSelected writes the selected point of each candidate, the selection rule and each envelope.
func capSelected(w *mdWriter, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Selected operating points")
	var base capacity.PointRef
	if len(r.Candidates) > 0 {
		base = r.Candidates[0].Base
	}
	var rows [][]string
	for _, c := range r.Candidates {
		role := c.Role
		if role == "" {
			role = "—"
		}
		if s := c.Selected; s != nil {
			rows = append(rows, []string{cell(c.Label), cell(role), point(s.Slots, s.Clients), f2(s.GenerationRate) + " tok/s", fp(s.Gain, spct)})
		} else {
			rows = append(rows, []string{cell(c.Label), cell(role), "none: " + cell(c.SelectionNote), "—", "—"})
		}
	}
	w.table([]string{"Candidate", "Role", "Selected point", "Median generation rate", fmt.Sprintf("Generation rate vs P%d/C%d", base.Slots, base.Clients)}, "lllrr", rows)
	gates := "the load SLO and stability limits"
	if len(p.Passes) > 1 {
		gates = "both counterbalanced passes meet the load SLO and stability limits"
		if len(p.Passes) > 2 {
			gates = "every pass meets the load SLO and stability limits"
		}
	} else {
		gates = "the pass meets the load SLO and stability limits"
	}
	quality := ""
	if p.Limits.QualityGated() {
		quality = ", the quality gate passes"
	}
	markers := ""
	for _, c := range p.Candidates {
		if len(c.Markers.Must)+len(c.Markers.MustNot) > 0 {
			markers = ", the backend markers hold"
		}
	}
	w.line("Selection maximizes the median generated-token rate only among cells where %s%s%s, and peak server RSS stays within the predeclared limit. Points within the %s objective tolerance use lower observed-p95 E2E, lower observed-p95 TTFT, lower RSS, fewer server slots, then fewer clients.",
		gates, quality, markers, pct(p.Limits.ObjectiveTolerance))
	w.blank()

	for _, c := range r.Candidates {
		envelope(w, p, c)
	}
}

// capQuality writes the quality guard's scores and its gate.
func capQuality(w *mdWriter, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Quality guard")
	if !p.Limits.QualityGated() {
		w.line("The plan declares no quality guard.")
		w.blank()
	} else {
		var qrows [][]string
		for _, c := range r.Candidates {
			for _, q := range c.Quality {
				stab := "Matched"
				if !q.Stable {
					stab = "Changed"
				}
				res := "PASS"
				if !q.Passed {
					res = "FAIL (" + strings.Join(q.Why, ", ") + ")"
				}
				qrows = append(qrows, []string{cell(c.Label), fmt.Sprint(q.Slots), fmt.Sprintf("%d/%d", q.Score, q.Cases), fp(q.Retention, pct), stab, cell(res)})
			}
		}
		w.table([]string{"Candidate", "Server slots", "Score", "Reference retention", "Outcome stability", "Result"}, "lrrrll", qrows)
		floor := "none"
		if f := p.Limits.QualityFloor; f != nil {
			floor = pct(*f)
		}
		ret := "none"
		if m := p.Limits.QualityRetentionMin; m != nil {
			ret = pct(*m)
		}
		ref := p.Limits.QualityReference
		if ref == "" && len(p.Candidates) > 0 {
			ref = p.Candidates[0].ID
		}
		w.line("Gate: score at least %s of the cases (floor), retention against %s at least %s, and identical per-case outcomes at every slot count.", floor, code(ref), ret)
		w.blank()
	}
}

// capScaling writes scaling along the clients = slots diagonal.
func capScaling(w *mdWriter, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Scaling along the diagonal")
	var srows [][]string
	for _, c := range r.Candidates {
		if c.Scaling == nil {
			srows = append(srows, []string{cell(c.Label), "—", "—", "—", "—", cell(c.ScalingNote)})
			continue
		}
		var steps []string
		for _, d := range c.Scaling.Doubling {
			steps = append(steps, fmt.Sprintf("P%g→P%g %s", d.From, d.To, spct(d.Gain)))
		}
		knee := "none in range"
		if k := c.Scaling.Knee; k != nil {
			knee = "P" + num(*k)
		}
		tax := "—"
		if c.ServingTax != nil {
			tax = pct(*c.ServingTax)
		} else if c.ServingTaxNote != "" {
			tax = cell(c.ServingTaxNote)
		}
		srows = append(srows, []string{cell(c.Label), f2(c.Scaling.Speedup) + "×", strings.Join(steps, "<br>"), knee, fp(c.Scaling.TTFTGrowth, f2) + "×", tax})
	}
	w.table([]string{"Candidate", "Aggregate speedup", "Gain per doubling", "Knee", "TTFT growth", "Serving tax"}, "lrllrr", srows)
	w.line("Along the cells where clients = slots: speedup = rate at the largest P / rate at the smallest; the knee is the first P whose gain per doubling is below %s; TTFT growth is the observed-p95 TTFT ratio between the same two points.", pct(p.KneeThreshold))
	w.blank()
}

// capServerTax writes the server tax of the candidates that were given a llama-batched-bench
// file (nothing when none was).
func capServerTax(w *mdWriter, r *capacity.Result) {
	var rows [][]string
	var notes []string
	for _, c := range r.Candidates {
		st := c.ServerTax
		if st == nil {
			continue
		}
		for _, p := range st.Points {
			rows = append(rows, []string{cell(c.Label), fmt.Sprintf("P%d/C%d", p.B, p.B), fmt.Sprintf("B=%d (pp%d+tg%d)", p.B, st.PP, st.TG),
				f2(p.ServerRate) + " tok/s", f2(p.BatchedRate) + " tok/s", fmt.Sprintf("%.4f", p.Tax)})
		}
		if len(st.Points) == 0 {
			rows = append(rows, []string{cell(c.Label), "—", fmt.Sprintf("pp%d+tg%d", st.PP, st.TG), "—", "—", "—"})
		}
		if st.Note != "" {
			notes = append(notes, code(c.ID)+": "+inline(st.Note)+".")
		}
	}
	if len(rows) == 0 {
		return
	}
	w.heading(2, "Server tax")
	w.table([]string{"Candidate", "Server cell", "llama-batched-bench", "Server generation rate", "Batched generation rate (B×TG/T)", "Server tax"}, "lllrrr", rows)
	w.line("%s", "Server tax = the cell generation rate at P = C = B / llama-batched-bench's generated tokens over its whole measurement, B×TG / T, at the same B (same model and build; prompt processing included on both sides). 0.80 means the server delivers 80% of the batched engine's throughput; above 1 it beat the engine's own loop. The batched-bench output is a raw file of this bundle.")
	w.blank()
	for _, n := range notes {
		w.line("%s", n)
		w.blank()
	}
}

// capPredictions writes the predictions and their verdicts (when the plan has any).
func capPredictions(w *mdWriter, cb *capacityBundle, r *capacity.Result) {
	p := r.Plan
	if len(r.Verdicts) > 0 {
		w.heading(2, "Predictions")
		texts := map[string]string{}
		for _, pr := range p.Predictions {
			texts[pr.ID] = pr.Text
		}
		var prow [][]string
		for _, v := range r.Verdicts {
			obs := "—"
			if v.Value != nil {
				obs = num(*v.Value)
			}
			word := capWord(v)
			if v.Problem != "" {
				word += ": " + v.Problem
			}
			prow = append(prow, []string{cell(v.Prediction), cell(texts[v.Prediction]), cell(v.Expected), obs, cell(word)})
		}
		w.table([]string{"Prediction", "Claim", "Expectation", "Observed", "Verdict"}, "lllrl", prow)
		if cb.journal != nil {
			w.line("Predictions were registered with the plan (its SHA-256 covers them), in the notebook's hash-chained journal (this bundle's excerpt, under *Provenance and fingerprints*), and are answered from the assembled figures.")
		} else {
			w.line("Predictions were registered with the plan (its SHA-256 covers them) and are answered from the assembled figures.")
		}
		w.blank()
	}
}

// capMethodology writes how the study was run: slots, clients, passes, requests, servers, gates.
func capMethodology(w *mdWriter, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Methodology")
	w.line("- Server slots: %s.", code(joinInts(p.Slots)))
	if r.Kind == kinds.Concurrency {
		w.line("- Simultaneous clients equal the server slots (the diagonal); arms vary %s.", code(p.ArmAxis))
	} else {
		w.line("- Simultaneous clients: %s.", code(joinInts(p.Clients)))
	}
	w.line("- Context is held at %s tokens per server slot; total context therefore scales with `--parallel`.", code(fmt.Sprint(p.CtxPerSlot)))
	var orders []string
	for _, ps := range p.Passes {
		var ids []string
		for _, c := range p.Candidates {
			ids = append(ids, c.ID)
		}
		sl := make([]string, len(p.Slots))
		for i, s := range p.Slots {
			sl[i] = fmt.Sprintf("P%d", s)
		}
		var cl []string
		for _, c := range p.Clients {
			cl = append(cl, fmt.Sprintf("C%d", c))
		}
		if ps == capacity.PassReverse {
			reverse(ids)
			reverse(sl)
			reverse(cl)
		}
		o := fmt.Sprintf("%s (%s; %s", code(ps), strings.Join(ids, " → "), strings.Join(sl, " → "))
		if len(cl) > 0 {
			o += "; " + strings.Join(cl, " → ")
		}
		orders = append(orders, o+")")
	}
	w.line("- Passes: %s.", strings.Join(orders, "; "))
	w.line("- Every load request uses the checksummed fixed prompt plan (%s), %s output tokens with `ignore_eos`, prompt caching disabled, temperature 0 and seed %s; %s warmups are sent and discarded and %s measured requests are sent at each client level.",
		code(p.PromptPlan.SHA256), code(fmt.Sprint(p.NPredict)), code(fmt.Sprint(p.Seed)), code(fmt.Sprint(p.WarmupCount())), code(fmt.Sprint(p.Measured)))
	w.line("- Performance servers are restarted for every candidate and slot count; clients sweep within one server lifetime. Peak RSS is the server process's VmHWM (the number GNU `time -v` reports) for each lifetime.")
	if p.Limits.QualityGated() {
		w.line("- A fresh server per candidate and slot count runs the sequential quality guard after the performance matrix.")
	}
	w.line("- Candidates differ from their own configurations only in `--parallel`, the formula-bound `--ctx-size` and the port.")
	for _, c := range p.Candidates {
		var ms []string
		for _, m := range c.Markers.Must {
			ms = append(ms, "requires "+code(m))
		}
		for _, m := range c.Markers.MustNot {
			ms = append(ms, "forbids "+code(m))
		}
		if len(ms) > 0 {
			w.line("- %s: server flags %s; backend markers in the last model-load block of every server log: %s. A log marker is not a kernel trace.", code(c.ID), code(strings.Join(c.ServerFlags, " ")), strings.Join(ms, ", "))
		} else {
			w.line("- %s: server flags %s.", code(c.ID), code(strings.Join(c.ServerFlags, " ")))
		}
	}
	w.line("- Gate limits: observed-p95 TTFT at most %s ms and E2E at most %s ms in every pass, completion rate at least %s, generation-rate spread at most %s, observed-p95 E2E spread at most %s, peak RSS at most %s MiB.",
		f1(p.Limits.TTFTMsP95Max), f1(p.Limits.E2EMsP95Max), pct(p.Limits.CompletionRateMin), pct(p.Limits.GenRateSpreadMax), pct(p.Limits.E2EP95SpreadMax), f1(p.Limits.PeakRSSMiBMax))
	if t := p.Telemetry; t != nil {
		w.line("- Telemetry: each server lifetime sampled every %s ms; machine-state gates on each cell's window: %s (see `machine_gate`).", code(fmt.Sprint(t.Interval().Milliseconds())), machineGatesText(t.Gates))
	}
	w.blank()
}

// capProvenance writes what identifies the plan, the build, the models, the machine and the journal.
func capProvenance(w *mdWriter, cb *capacityBundle, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Provenance and fingerprints")
	prov := [][]string{
		{"Classification", code(r.Kind)},
		{"Plan SHA-256", code(r.PlanSHA256)},
	}
	if cb.planSHA != r.PlanSHA256 {
		prov = append(prov, []string{"Plan file SHA-256", code(cb.planSHA) + " (the file's bytes; the identity above is its canonical JSON with defaults)"})
	}
	pp := code(p.PromptPlan.SHA256)
	switch {
	case cb.promptSHA == "":
		pp += " · the prompt plan file is not in the bundle"
	case cb.promptSHA == p.PromptPlan.SHA256:
		pp += " · matches " + code(cb.ix.Capacity.PromptPlan)
	default:
		pp += " · MISMATCH: " + code(cb.ix.Capacity.PromptPlan) + " hashes to " + code(cb.promptSHA)
	}
	prov = append(prov, []string{"Prompt plan SHA-256", pp})
	if cb.manifest != nil {
		prov = append(prov, []string{"Run manifest SHA-256", code(cb.manifestSH) + " · " + code(cb.ix.Capacity.Manifest)})
		if b := cb.manifest.Build; b != nil {
			prov = append(prov, []string{"Build", code(b.VersionLine) + " · " + code(strings.Join(b.Backends, ", "))})
			for _, bin := range b.Binaries {
				prov = append(prov, []string{"Binary " + code(bin.Name), "SHA-256 " + code(bin.SHA256) + " · " + code(fmt.Sprintf("%d bytes", bin.Size))})
			}
		} else {
			prov = append(prov, []string{"Build", "not recorded in the run manifest"})
		}
		if cb.manifest.Started != "" {
			prov = append(prov, []string{"Run started", code(cb.manifest.Started)})
		}
	} else {
		prov = append(prov, []string{"Run manifest", "none: the bundle was assembled from raw files without a run manifest, so no build or binary hashes are recorded"})
	}
	for _, c := range p.Candidates {
		prov = append(prov, []string{"Model " + code(c.ID), code(path.Base(filepath.ToSlash(c.Model.Path))) + " · SHA-256 " + code(c.Model.SHA256) + " (as the plan declares it)"})
	}
	prov = append(prov,
		machineRow(cb.manifest),
		[]string{"Capacity source artefacts", code(fmt.Sprintf("%d", len(r.Inputs))) + " files (fingerprinted in " + code(FileStudy) + ")"},
		[]string{"Raw files in the bundle", code(fmt.Sprintf("%d files, %d bytes", cb.rawFiles, cb.rawBytes))},
	)
	if cb.journal != nil {
		prov = append(prov, cb.journal.journalRows()...)
	} else {
		prov = append(prov, []string{"Notebook chain head", "not in this bundle: it was written from a run folder (" + code("sparkbench receipt --capacity-run") + "), without the notebook's journal; " + code("sparkbench receipt STUDY") + " on the notebook that ran the study adds the study's journal excerpt"})
	}
	prov = append(prov, []string{"Written by", code(cb.ix.Sparkbench)})
	w.table([]string{"Field", "Value"}, "ll", prov)
	if cb.journal != nil {
		w.line("%s holds the notebook's journal entries from the study's first to its last, with their hashes; %s re-walks the chain and the assembly holds it to %s and to the selected points re-assembled from the raw files. These entries are a slice of the notebook's chain: %s on the machine that holds the notebook re-walks all of it, and prints this head when nothing was journaled after the study.",
			code(FileJournal), code("sparkbench verify"), code(FilePlan), code("sparkbench notebook verify"))
		w.blank()
	}
}
