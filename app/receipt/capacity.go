package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
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
			Argv []string `json:"argv"`
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
		ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{}, Quality: map[capacity.QualityKey]capacity.InputFile{}, BenchTG: ci.BenchTG}
	for _, role := range []struct {
		flag  string
		m     map[string]string
		files map[capacity.LifetimeKey]capacity.InputFile
	}{{capacity.FlagRequests, ci.Requests, in.Requests}, {capacity.FlagRSS, ci.RSS, in.RSS}, {capacity.FlagServerLog, ci.ServerLogs, in.ServerLogs}} {
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
	for _, name := range ci.Evidence {
		if _, err := need(files, name); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: evidence: %w", FileIndex, err)
		}
	}
	res, err := capacity.Assemble(cb.plan, in)
	if err != nil {
		var ie *capacity.InputError
		if errors.As(err, &ie) {
			m := map[string]map[string]string{capacity.FlagRequests: ci.Requests, capacity.FlagRSS: ci.RSS,
				capacity.FlagServerLog: ci.ServerLogs, capacity.FlagQuality: ci.Quality}[ie.Flag]
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

// failure codes in words, for the rejected-points table.
func failureWords(code string) string {
	pass, c, ok := strings.Cut(code, ":")
	prefix := ""
	if ok {
		prefix = strings.ToUpper(pass[:1]) + pass[1:] + " pass: "
	} else {
		c = code
	}
	w := map[string]string{
		capacity.CodeTTFTAbove:           "observed-p95 TTFT exceeded the limit",
		capacity.CodeE2EAbove:            "observed-p95 E2E exceeded the limit",
		capacity.CodeCompletionBelow:     "completion rate fell below the minimum",
		capacity.CodePassesFailedLoadSLO: "At least one pass missed the load SLO",
		capacity.CodeRateSpreadAbove:     "Generation-rate spread between passes exceeded the limit",
		capacity.CodeE2ESpreadAbove:      "Observed-p95 E2E spread between passes exceeded the limit",
		capacity.CodePeakRSSAbove:        "Peak server RSS exceeded the limit",
		capacity.CodeQualityFailed:       "The quality guard failed",
		capacity.CodeMarkerMissing:       "A required backend marker is missing from the last load block",
		capacity.CodeMarkerForbidden:     "A forbidden backend marker is present in the last load block",
	}[c]
	if w == "" {
		w = "Gate failed"
	}
	return prefix + w
}

func point(slots, clients int) string { return fmt.Sprintf("P%d / C%d", slots, clients) }

func capWord(v study.Verdict) string {
	if v.Outcome == study.Answered && v.Value != nil {
		return "ANSWERED " + num(*v.Value)
	}
	return v.Word()
}

func capacityMarkdown(cb *capacityBundle, r *capacity.Result) []byte {
	w := &mdWriter{}
	p := r.Plan
	kind := "Capacity"
	if r.Kind == "concurrency" {
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

	w.heading(2, "Methodology")
	w.line("- Server slots: %s.", code(joinInts(p.Slots)))
	if r.Kind == "concurrency" {
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
	w.blank()

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

	w.heading(2, "Redaction")
	redactionSection(w, cb.redaction)

	if names := capacityPlotNames(r); len(names) > 0 {
		w.heading(2, "Plots")
		for _, n := range names {
			if strings.HasSuffix(n, ".png") {
				w.line("![%s](%s) ([SVG](%s))", inline(strings.TrimSuffix(strings.TrimPrefix(n, DirPlots), ".png")), n, strings.TrimSuffix(n, ".png")+".svg")
				w.blank()
			}
		}
	}

	w.heading(2, "Reproduce and compare")
	w.line("Run from the extracted bundle with %s. This first verifies every archived file, then requires byte-for-byte matches for both derived outputs.", code(cb.ix.Sparkbench))
	w.blank()
	w.line("<details>")
	w.line("<summary>Show exact commands</summary>")
	w.blank()
	w.line("```bash")
	w.line("sha256sum --check SHA256SUMS")
	w.line("sparkbench verify .")
	w.line("sparkbench capacity assemble \\")
	ci := cb.ix.Capacity
	w.line("  --plan %s \\", ci.Plan)
	keys := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, lt := range capacity.Schedule(p, "") {
		k := lt.Key.String()
		w.line("  --requests %s=%s \\", k, ci.Requests[k])
		w.line("  --rss %s=%s \\", k, ci.RSS[k])
		w.line("  --server-log %s=%s \\", k, ci.ServerLogs[k])
	}
	for _, k := range keys(ci.Quality) {
		w.line("  --quality %s=%s \\", k, ci.Quality[k])
	}
	tgs := make([]string, 0, len(ci.BenchTG))
	for k := range ci.BenchTG {
		tgs = append(tgs, k)
	}
	sort.Strings(tgs)
	for _, k := range tgs {
		w.line("  --bench-tg %s=%s \\", k, num(ci.BenchTG[k]))
	}
	w.line("  --output study.reproduced.json")
	w.line("cmp study.json study.reproduced.json")
	w.line("```")
	w.blank()
	w.line("</details>")
	w.blank()

	w.heading(2, "Boundary")
	w.line("This is a bounded fixed-concurrency study on one machine. It is not an open-loop production-capacity benchmark, a cost or energy claim, or a model-quality evaluation beyond its guard. Backend log markers establish only that llama.cpp logged them; they are not kernel-level proof.")
	w.blank()

	w.heading(2, "Metric definitions")
	dk := make([]string, 0, len(r.Definitions))
	for k := range r.Definitions {
		dk = append(dk, k)
	}
	sort.Strings(dk)
	for _, k := range dk {
		w.line("- %s: %s", code(k), inline(r.Definitions[k]))
	}
	return w.bytes()
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func candidatesText(p *capacity.Plan) string {
	var ls []string
	for _, c := range p.Candidates {
		ls = append(ls, inline(c.Label))
	}
	switch len(ls) {
	case 0:
		return "no candidates"
	case 1:
		return ls[0]
	}
	return strings.Join(ls[:len(ls)-1], ", ") + " and " + ls[len(ls)-1]
}

// envelope writes one candidate's grid, its selected point's gates and its rejected points.
func envelope(w *mdWriter, p *capacity.Plan, c capacity.CandidateResult) {
	w.heading(2, "Capacity envelope — "+c.Label)
	clients := []int{}
	seen := map[int]bool{}
	for _, cell := range c.Cells {
		if !seen[cell.Clients] {
			seen[cell.Clients] = true
			clients = append(clients, cell.Clients)
		}
	}
	sort.Ints(clients)
	header := []string{"Server slots"}
	align := "r"
	for _, k := range clients {
		header = append(header, fmt.Sprintf("C%d", k))
		align += "l"
	}
	var rows [][]string
	for _, s := range p.Slots {
		row := []string{fmt.Sprintf("P%d", s)}
		for _, k := range clients {
			txt := "—"
			for _, cell := range c.Cells {
				if cell.Slots == s && cell.Clients == k {
					verdict := "FAIL"
					if cell.Passed {
						verdict = "PASS"
					}
					txt = fmt.Sprintf("**%s · %s**<br>E2E p95 %s<br>TTFT p95 %s", verdict, fp(cell.GenerationRate, func(x float64) string { return f2(x) + " tok/s" }),
						fp(cell.E2EMsP95, func(x float64) string { return f1(x) + " ms" }), fp(cell.TTFTMsP95, func(x float64) string { return f1(x) + " ms" }))
				}
			}
			row = append(row, txt)
		}
		rows = append(rows, row)
	}
	w.table(header, align, rows)
	sel := c.Selected
	if sel == nil {
		w.line("**Envelope result:** no point selected: %s.", inline(c.SelectionNote))
		w.blank()
	} else {
		how := ""
		if sel.DecidedBy != capacity.DecidedByRate && len(sel.WithinTolerance) > 1 {
			how = fmt.Sprintf(" %s cells were within the objective tolerance; %s decided (%s).", fmt.Sprint(len(sel.WithinTolerance)), code(sel.DecidedBy), pointsText(sel.WithinTolerance))
		}
		w.line("**Envelope result:** %s is the best observed passing point under the fixed objective.%s", point(sel.Slots, sel.Clients), how)
		w.blank()
		for _, cell := range c.Cells {
			if cell.Slots == sel.Slots && cell.Clients == sel.Clients {
				gateTable(w, p, cell)
			}
		}
	}
	var rej [][]string
	for _, cell := range c.Cells {
		if cell.Passed {
			continue
		}
		codes := append([]string(nil), cell.Failures...)
		// The summary code first, as the seed receipt lists it; then the rest in gate order.
		sort.SliceStable(codes, func(i, j int) bool {
			return codes[i] == capacity.CodePassesFailedLoadSLO && codes[j] != capacity.CodePassesFailedLoadSLO
		})
		var lines []string
		for _, cd := range codes {
			lines = append(lines, failureWords(cd)+" ("+code(cd)+")")
		}
		rej = append(rej, []string{point(cell.Slots, cell.Clients), strings.Join(lines, "<br>")})
	}
	w.heading(3, "Rejected points")
	if len(rej) == 0 {
		w.line("None: every cell passes every gate.")
		w.blank()
	} else {
		w.table([]string{"Point", "Exact gate failures"}, "ll", rej)
	}
}

func pointsText(ps []capacity.PointRef) string {
	var out []string
	for _, p := range ps {
		out = append(out, point(p.Slots, p.Clients))
	}
	return strings.Join(out, ", ")
}

func gateTable(w *mdWriter, p *capacity.Plan, cell capacity.CellResult) {
	check := map[string]capacity.GateCheck{}
	for _, g := range cell.Checks {
		check[g.Gate] = g
	}
	res := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	yes := func(ok bool) string {
		if ok {
			return "Yes"
		}
		return "No"
	}
	var rows [][]string
	if g, ok := check["load_slo_every_pass"]; ok {
		name := "Every pass meets the load SLO"
		switch len(p.Passes) {
		case 1:
			name = "The pass meets the load SLO"
		case 2:
			name = "Both counterbalanced passes meet load SLO"
		}
		rows = append(rows, []string{name, yes(g.Passed), res(g.Passed)})
	}
	for _, ps := range p.Passes {
		title := strings.ToUpper(ps[:1]) + ps[1:] + " pass"
		for _, gd := range []struct{ gate, what string }{{":ttft_ms_p95", "observed-p95 TTFT"}, {":e2e_latency_ms_p95", "observed-p95 E2E"}} {
			if g, ok := check[ps+gd.gate]; ok {
				rows = append(rows, []string{title + ": " + gd.what, fp(g.Observed, func(x float64) string { return f1(x) + " ms" }) + " / " + fp(g.Limit, func(x float64) string { return f1(x) + " ms" }), res(g.Passed)})
			}
		}
	}
	if g, ok := check["quality"]; ok {
		rows = append(rows, []string{"Quality floor and retention", yes(g.Passed), res(g.Passed)})
	}
	if g, ok := check["peak_rss_mib"]; ok {
		rows = append(rows, []string{"Peak server RSS", fp(g.Observed, func(x float64) string { return f1(x) + " MiB" }) + " / " + fp(g.Limit, func(x float64) string { return f1(x) + " MiB" }), res(g.Passed)})
	}
	rows = append(rows, []string{"Completion rate, worst pass", pct(cell.CompletionRateWorst) + " / " + pct(p.Limits.CompletionRateMin), res(cell.CompletionRateWorst >= p.Limits.CompletionRateMin)})
	if g, ok := check["generation_rate_spread"]; ok {
		rows = append(rows, []string{"Generation-rate spread", fp(g.Observed, pct) + " / " + fp(g.Limit, pct), res(g.Passed)})
	}
	if g, ok := check["e2e_p95_spread"]; ok {
		rows = append(rows, []string{"Observed-p95 E2E spread", fp(g.Observed, pct) + " / " + fp(g.Limit, pct), res(g.Passed)})
	}
	if g, ok := check["backend_markers_required"]; ok {
		rows = append(rows, []string{"Required backend markers present", yes(g.Passed), res(g.Passed)})
	}
	if g, ok := check["backend_markers_forbidden"]; ok {
		rows = append(rows, []string{"Forbidden backend markers absent", yes(g.Passed), res(g.Passed)})
	}
	w.table([]string{"Gate", "Observed", "Result"}, "lrl", rows)
}

func machineRow(m *runManifest) []string {
	if m == nil || m.Machine == nil {
		return []string{"Machine fingerprint", "not recorded in the run manifest"}
	}
	mc := m.Machine
	return []string{"Machine fingerprint", code(mc.String()) + " · " + code(mc.OS+"/"+mc.Arch)} // no host name: receipts are shared
}
