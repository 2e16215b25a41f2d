package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sparkbench/runner/devlog"
	"sparkbench/runner/vocab"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
)

// InputFile is one raw file: Name (its path) appears in error messages only, never in the
// result, so the same bundle assembles to the same bytes from any folder.
type InputFile struct {
	Name string
	Data []byte
}

// Inputs are a study's raw files, keyed as on the CLI.
type Inputs struct {
	Requests   map[LifetimeKey]InputFile // request records (docs/requests.md)
	RSS        map[LifetimeKey]InputFile // GNU time -v output or {"vmhwm_kib": N}
	ServerLogs map[LifetimeKey]InputFile // llama-server stderr
	Quality    map[QualityKey]InputFile  // quality evidence; required iff the plan gates quality
	BenchTG    map[string]float64        // candidate ID -> llama-bench tg (t/s), for the serving tax
	// Batched is candidate ID -> llama-batched-bench output of the same model and build, for
	// the server tax (optional; see ReadBatched).
	Batched map[string]InputFile
	// Serving are the open-loop request records of a serving plan, one per lifetime, and
	// Harness the harness floor record (docs/serving.md).
	Serving map[LifetimeKey]InputFile
	Harness *InputFile
	// Telemetry are the sampled lifetimes' telemetry.jsonl (optional; docs/telemetry.md).
	Telemetry map[LifetimeKey]InputFile
}

// Input roles, as CLI flags.
const (
	FlagPlan      = "--plan"
	FlagRequests  = "--requests"
	FlagRSS       = "--rss"
	FlagServerLog = "--server-log"
	FlagQuality   = "--quality"
	FlagBenchTG   = "--bench-tg"
)

// InputError is bad input: a missing, unexpected or malformed file. Flag and Key say which
// CLI argument it concerns (Key may be empty).
type InputError struct {
	Flag string
	Key  string
	Err  error
}

func (e *InputError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %v", e.Flag, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Flag, e.Key, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

func inputErr(flag, key string, format string, a ...any) error {
	return &InputError{Flag: flag, Key: key, Err: fmt.Errorf(format, a...)}
}

// PassOrder is the fixed order passes appear in results and gate codes.
var PassOrder = []string{PassForward, PassReverse}

// lifetime is one parsed server lifetime.
type lifetime struct {
	key      LifetimeKey
	byLevel  map[int][]RequestRecord // measured records by client level
	requests int
	rssKiB   int64
	rssFmt   string
	block    LoadBlock
	markers  []MarkerCheck
	evidence vocab.Evidence             // device plans only (limits.max_device_mib)
	energy   map[int]energy.CellFigures // by client level, when the lifetime was sampled
	breaches map[int][]energy.Breach    // by client level, when sampled under a telemetry block
	rpc      *LifetimeRPC               // RPC candidates of plans with rpc_servers only
}

// Assemble turns a plan and its raw files into the study result. It is pure and
// deterministic: maps are only looked up, never ranged over for output, and every sum runs in
// a fixed order. Errors are *InputError (bad input) unless the result cannot be encoded.
func Assemble(plan *Plan, in Inputs) (Result, error) {
	p, err := ClonePlan(plan)
	if err != nil {
		return Result{}, err
	}
	p.Defaults()
	if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Path + ": " + e.Msg
		}
		return Result{}, &InputError{Flag: FlagPlan, Err: fmt.Errorf("plan refused: %s", strings.Join(msgs, "; "))}
	}
	sha, _, err := p.SHA256()
	if err != nil {
		return Result{}, err
	}
	a := &assembler{p: p, in: in, sha: sha, lives: map[LifetimeKey]*lifetime{}}
	if err := a.read(); err != nil {
		return Result{}, err
	}
	if err := a.readServing(); err != nil {
		return Result{}, err
	}
	res := Result{Schema: SchemaResult, Kind: kinds.Capacity, PlanSHA256: sha, Plan: p,
		Definitions: definitions, Inputs: a.refs, Candidates: []CandidateResult{}}
	if len(a.batched) > 0 || p.Limits.MaxDeviceMiB > 0 || p.Serving != nil || len(in.Telemetry) > 0 || p.Telemetry != nil || len(p.RPCServers) > 0 {
		res.Definitions = maps.Clone(definitions)
	}
	if p.Telemetry != nil {
		res.Definitions["machine_gate"] = machineGateDefinition
	}
	if len(in.Telemetry) > 0 {
		maps.Copy(res.Definitions, energyDefinitions)
	}
	if p.Serving != nil {
		maps.Copy(res.Definitions, servingDefinitions)
		for _, sr := range a.serving {
			if sr.Saturation != nil { // the sustain rules' files (a version 1 file's result keeps its bytes)
				res.Definitions["serving_sustained"] = servingSustainedDefinition
			}
		}
		res.HarnessFloor = a.harness
	}
	if len(a.batched) > 0 {
		res.Definitions["server_tax"] = serverTaxDefinition
	}
	if p.Limits.MaxDeviceMiB > 0 {
		res.Definitions["device_memory_gate"] = deviceGateDefinition
	}
	if len(p.RPCServers) > 0 {
		res.Definitions["rpc_gate"], res.Definitions["network_tax"] = rpcGateDefinition, networkTaxDefinition
	}
	if p.Concurrency() {
		res.Kind = kinds.Concurrency
	}
	for _, c := range p.Candidates {
		res.Candidates = append(res.Candidates, a.candidate(c))
	}
	res.NetworkTax = networkTax(p, res.Candidates)
	res.Verdicts = Evaluate(p, &res)
	return res, nil
}

// Clone is a deep copy of the plan (its JSON, read back), which fields it wrote included.
func (p *Plan) Clone() (*Plan, error) { return ClonePlan(p) }

func ClonePlan(p *Plan) (*Plan, error) {
	if p == nil {
		return nil, &InputError{Flag: FlagPlan, Err: errors.New("no plan")}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("copy plan: %w", err)
	}
	var c Plan
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("copy plan: %w", err)
	}
	c.given = p.given
	c.given.noiseFloor = slices.Clone(p.given.noiseFloor)
	return &c, nil
}

type assembler struct {
	p       *Plan
	in      Inputs
	sha     string
	lives   map[LifetimeKey]*lifetime
	quality map[QualityKey]*QualityEvidence
	batched map[string]*batchedInput
	refs    []InputRef
	serving map[LifetimeKey]*ServingResult
	harness *HarnessFloor
}

// passes are the plan's passes in the fixed order.
func (a *assembler) passes() []string {
	var out []string
	for _, ps := range PassOrder {
		if slices.Contains(a.p.Passes, ps) {
			out = append(out, ps)
		}
	}
	return out
}

// keys lists every server lifetime of the plan: passes in fixed order, candidates in plan
// order, slots ascending.
func (a *assembler) keys() []LifetimeKey {
	var out []LifetimeKey
	for _, ps := range a.passes() {
		for _, c := range a.p.Candidates {
			for _, s := range a.p.Slots {
				out = append(out, LifetimeKey{ps, c.ID, s})
			}
		}
	}
	return out
}

func (a *assembler) inPlan(k LifetimeKey) bool {
	_, ok := a.p.Candidate(k.Candidate)
	return ok && slices.Contains(a.p.Passes, k.Pass) && slices.Contains(a.p.Slots, k.Slots)
}

func (a *assembler) read() error {
	p := a.p
	keys := a.keys()
	for _, role := range []struct {
		flag  string
		files map[LifetimeKey]InputFile
	}{{FlagRequests, a.in.Requests}, {FlagRSS, a.in.RSS}, {FlagServerLog, a.in.ServerLogs}} {
		extra := slices.SortedFunc(maps.Keys(role.files), func(x, y LifetimeKey) int { return strings.Compare(x.String(), y.String()) })
		for _, k := range extra {
			if !a.inPlan(k) {
				return inputErr(role.flag, k.String(), "not a server lifetime of this plan (passes %v, candidates %s, slots %v); remove it or fix the key",
					p.Passes, candidateIDs(p), p.Slots)
			}
		}
		for _, k := range keys {
			if _, ok := role.files[k]; !ok {
				return inputErr(role.flag, k.String(), "missing: the plan needs one file per pass, candidate and slot count (%d here); add %s %s=FILE", len(keys), role.flag, k)
			}
		}
	}
	for _, k := range keys {
		l, err := a.readLifetime(k)
		if err != nil {
			return err
		}
		a.lives[k] = l
	}
	for _, role := range []struct {
		name  string
		files map[LifetimeKey]InputFile
	}{{"requests", a.in.Requests}, {"rss", a.in.RSS}, {"server_log", a.in.ServerLogs}} {
		for _, k := range keys {
			f := role.files[k]
			a.refs = append(a.refs, InputRef{Role: role.name, Key: k.String(), SHA256: canon.SHA256Hex(f.Data), Bytes: len(f.Data)})
		}
	}
	if err := a.readQuality(); err != nil {
		return err
	}
	if err := a.readTelemetry(); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(a.in.BenchTG)) {
		v := a.in.BenchTG[id]
		if _, ok := p.Candidate(id); !ok {
			return inputErr(FlagBenchTG, id, "not a candidate of this plan (%s)", candidateIDs(p))
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return inputErr(FlagBenchTG, id, "%g: want llama-bench's tg in t/s (> 0)", v)
		}
	}
	return a.readBatchedInputs()
}

func (a *assembler) readLifetime(k LifetimeKey) (*lifetime, error) {
	p := a.p
	key := k.String()
	rf := a.in.Requests[k]
	file, err := ReadRequests(rf.Name, rf.Data)
	if err != nil {
		return nil, &InputError{Flag: FlagRequests, Key: key, Err: err}
	}
	if hk := file.Header.Key(); hk != k {
		return nil, inputErr(FlagRequests, key, "%s: the header names server lifetime %s; pass the file as %s=%s, or give the right file", rf.Name, hk, hk, rf.Name)
	}
	if h := file.Header.PlanSHA256; h != "" && h != a.sha {
		return nil, inputErr(FlagRequests, key, "%s: recorded for plan %s, not this plan (%s): the plan changed after the run", rf.Name, h, a.sha)
	}
	l := &lifetime{key: k, byLevel: map[int][]RequestRecord{}, requests: len(file.Records)}
	levels := p.ClientLevels(k.Slots)
	type count struct{ warm, meas int }
	counts := map[int]*count{}
	for _, c := range levels {
		counts[c] = &count{}
	}
	for _, r := range file.Records {
		cnt, ok := counts[r.Clients]
		if !ok {
			return nil, inputErr(FlagRequests, key, "%s:%d: clients %d is not a client level of this server (plan: %v)", rf.Name, r.Line, r.Clients, levels)
		}
		want := p.Measured
		if r.Phase == PhaseWarmup {
			want = p.WarmupCount()
			cnt.warm++
		} else {
			cnt.meas++
			l.byLevel[r.Clients] = append(l.byLevel[r.Clients], r)
		}
		if r.Seq >= want {
			return nil, inputErr(FlagRequests, key, "%s:%d: %s seq %d is outside 0-%d: the plan sends %d %s requests per client level", rf.Name, r.Line, r.Phase, r.Seq, want-1, want, r.Phase)
		}
	}
	for _, c := range levels {
		cnt := counts[c]
		if cnt.warm != p.WarmupCount() || cnt.meas != p.Measured {
			return nil, inputErr(FlagRequests, key, "%s: clients %d has %d warmup and %d measured requests, the plan says %d and %d: the sweep is incomplete; re-run this server lifetime",
				rf.Name, c, cnt.warm, cnt.meas, p.WarmupCount(), p.Measured)
		}
	}
	rss := a.in.RSS[k]
	if l.rssKiB, l.rssFmt, err = ReadRSS(rss.Name, rss.Data); err != nil {
		return nil, &InputError{Flag: FlagRSS, Key: key, Err: err}
	}
	cand, _ := p.Candidate(k.Candidate)
	log := a.in.ServerLogs[k]
	if l.block, l.markers, err = CheckMarkers(log.Name, log.Data, cand.Markers); err != nil {
		return nil, &InputError{Flag: FlagServerLog, Key: key, Err: err}
	}
	if p.Limits.MaxDeviceMiB > 0 {
		l.evidence = devlog.ScanText(log.Data, nil).Evidence
	}
	l.rpc = p.RPCLifetime(cand, log.Data)
	return l, nil
}

func (a *assembler) readQuality() error {
	p := a.p
	var qkeys []QualityKey
	for _, c := range p.Candidates {
		for _, s := range p.Slots {
			qkeys = append(qkeys, QualityKey{c.ID, s})
		}
	}
	given := slices.SortedFunc(maps.Keys(a.in.Quality), func(x, y QualityKey) int { return strings.Compare(x.String(), y.String()) })
	if !p.Limits.QualityGated() {
		if len(given) > 0 {
			return inputErr(FlagQuality, given[0].String(), "the plan declares no quality gate (limits.quality_floor / quality_retention_min); remove --quality or add the limits before the study runs")
		}
		return nil
	}
	for _, k := range given {
		if !slices.Contains(qkeys, k) {
			return inputErr(FlagQuality, k.String(), "not a (candidate, slots) of this plan (candidates %s, slots %v)", candidateIDs(p), p.Slots)
		}
	}
	a.quality = map[QualityKey]*QualityEvidence{}
	var firstKey QualityKey
	var firstIDs []string
	for i, k := range qkeys {
		f, ok := a.in.Quality[k]
		if !ok {
			return inputErr(FlagQuality, k.String(), "missing: the plan gates quality, so every candidate and slot count needs its guard evidence (%d here); add %s %s=FILE", len(qkeys), FlagQuality, k)
		}
		q, err := ReadQuality(f.Name, f.Data)
		if err != nil {
			return &InputError{Flag: FlagQuality, Key: k.String(), Err: err}
		}
		if got := (QualityKey{q.Candidate, q.Slots}); got != k {
			return inputErr(FlagQuality, k.String(), "%s: the evidence is for %s; pass it as %s=%s, or give the right file", f.Name, got, got, f.Name)
		}
		ids := make([]string, len(q.Cases))
		for j, c := range q.Cases {
			ids[j] = c.ID
		}
		slices.Sort(ids)
		if i == 0 {
			firstKey, firstIDs = k, ids
		} else if !slices.Equal(ids, firstIDs) {
			return inputErr(FlagQuality, k.String(), "%s: its case list differs from %s's; the guard is one fixed list of cases for every candidate and slot count", f.Name, firstKey)
		}
		a.quality[k] = q
		a.refs = append(a.refs, InputRef{Role: "quality", Key: k.String(), SHA256: canon.SHA256Hex(f.Data), Bytes: len(f.Data)})
	}
	return nil
}

func candidateIDs(p *Plan) string {
	ids := make([]string, len(p.Candidates))
	for i, c := range p.Candidates {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

// candidate assembles one candidate's envelope.
func (a *assembler) candidate(c Candidate) CandidateResult {
	p := a.p
	cr := CandidateResult{ID: c.ID, Label: c.Label, Role: c.Role, Arm: c.Arm,
		Lifetimes: []LifetimeResult{}, Cells: []CellResult{}, Quality: []QualityResult{}}
	for _, ps := range a.passes() {
		for _, s := range p.Slots {
			l := a.lives[LifetimeKey{ps, c.ID, s}]
			cr.Lifetimes = append(cr.Lifetimes, LifetimeResult{Pass: ps, Slots: s, Requests: l.requests,
				PeakRSSKiB: l.rssKiB, PeakRSSMiB: float64(l.rssKiB) / 1024, RSSFormat: l.rssFmt,
				LoadBlockLine: l.block.StartLine, LoadBlocks: l.block.Loads, Markers: l.markers,
				Offloaded: l.evidence.Offloaded, Devices: deviceMemory(l.evidence), RPC: l.rpc})
		}
	}
	quality := map[int]QualityResult{}
	if p.Limits.QualityGated() {
		cr.Quality = a.qualityOf(c)
		for _, q := range cr.Quality {
			quality[q.Slots] = q
		}
	}
	for _, s := range p.Slots {
		for _, cl := range p.ClientLevels(s) {
			q, gated := quality[s]
			cr.Cells = append(cr.Cells, a.cell(c, s, cl, q, gated))
		}
	}
	base := cr.Cells[0]
	cr.Base = PointRef{Slots: base.Slots, Clients: base.Clients, GenerationRate: base.GenerationRate}
	cr.Selected, cr.SelectionNote = selectPoint(cr.Cells, p.Limits.ObjectiveTolerance, base.GenerationRate)
	cr.Scaling, cr.ScalingNote = scalingOf(cr.Cells, p.KneeThreshold)
	cr.ServerTax = a.serverTax(c.ID, cr.Cells)
	cr.Serving = a.servingOf(c)
	if tg, ok := a.in.BenchTG[c.ID]; ok {
		cr.BenchTG = fptr(tg)
		single := findCell(cr.Cells, p.Slots[0], 1)
		switch {
		case single == nil:
			cr.ServingTaxNote = fmt.Sprintf("no single-client cell at P%d: the serving tax needs clients 1", p.Slots[0])
		case single.PerStreamRate == nil:
			cr.ServingTaxNote = fmt.Sprintf("P%d/C1 has no per-stream rate (no completed request)", p.Slots[0])
		default:
			if t, err := analysis.ServingTax(*single.PerStreamRate, tg); err == nil {
				cr.ServingTax = fptr(t)
			}
		}
	}
	return cr
}

func findCell(cells []CellResult, slots, clients int) *CellResult {
	for i := range cells {
		if cells[i].Slots == slots && cells[i].Clients == clients {
			return &cells[i]
		}
	}
	return nil
}

// qualityOf scores the guard of one candidate at every slot count.
func (a *assembler) qualityOf(c Candidate) []QualityResult {
	p := a.p
	l := p.Limits
	stable := true
	first := a.quality[QualityKey{c.ID, p.Slots[0]}].outcomes()
	for _, s := range p.Slots[1:] {
		stable = stable && maps.Equal(first, a.quality[QualityKey{c.ID, s}].outcomes())
	}
	var out []QualityResult
	for _, s := range p.Slots {
		q := a.quality[QualityKey{c.ID, s}]
		ref := a.quality[QualityKey{l.QualityReference, s}]
		r := QualityResult{Slots: s, Score: q.Score(), Cases: len(q.Cases), Reference: l.QualityReference,
			Stable: stable, Why: []string{}}
		r.Fraction = float64(r.Score) / float64(r.Cases)
		if rs := ref.Score(); rs > 0 {
			r.Retention = fptr(float64(r.Score) / float64(rs))
		}
		if l.QualityFloor != nil && r.Fraction < *l.QualityFloor {
			r.Why = append(r.Why, "below_floor")
		}
		if l.QualityRetentionMin != nil && (r.Retention == nil || *r.Retention < *l.QualityRetentionMin) {
			r.Why = append(r.Why, "retention_below_minimum")
		}
		if !stable {
			r.Why = append(r.Why, "outcomes_unstable")
		}
		r.Passed = len(r.Why) == 0
		out = append(out, r)
	}
	return out
}

// cell computes one (candidate, P, C) across passes and applies its gates.
func (a *assembler) cell(c Candidate, slots, clients int, q QualityResult, qualityGated bool) CellResult {
	p := a.p
	l := p.Limits
	cell := CellResult{Slots: slots, Clients: clients, Passes: []PassMetrics{}, Checks: []GateCheck{}, Failures: []string{}}
	var rates, streams, t50, t95, e50, e95 []*float64
	cell.CompletionRateWorst = math.Inf(1)
	var worstKiB int64
	var lives []*lifetime
	for _, ps := range a.passes() {
		life := a.lives[LifetimeKey{ps, c.ID, slots}]
		lives = append(lives, life)
		m := CellMetrics(ps, life.byLevel[clients], p.NPredict)
		cell.Passes = append(cell.Passes, m)
		rates, streams = append(rates, m.GenerationRate), append(streams, m.PerStreamRate)
		t50, t95 = append(t50, m.TTFTMsP50), append(t95, m.TTFTMsP95)
		e50, e95 = append(e50, m.E2EMsP50), append(e95, m.E2EMsP95)
		cell.CompletionRateWorst = min(cell.CompletionRateWorst, m.CompletionRate)
		worstKiB = max(worstKiB, life.rssKiB)
	}
	cell.GenerationRate, cell.PerStreamRate = medianOf(rates), medianOf(streams)
	cell.TTFTMsP50, cell.TTFTMsP95 = medianOf(t50), medianOf(t95)
	cell.E2EMsP50, cell.E2EMsP95 = medianOf(e50), medianOf(e95)
	cell.GenerationRateSpread, cell.E2EP95Spread = spreadOf(rates), spreadOf(e95)
	cell.PeakRSSMiB = float64(worstKiB) / 1024
	cellEnergy(&cell, lives)

	check := func(g GateCheck, code string) {
		if !g.Passed {
			g.Failure = code
			cell.Failures = append(cell.Failures, code)
		}
		cell.Checks = append(cell.Checks, g)
	}
	above := func(gate string, obs *float64, limit float64, code, undefined string) {
		g := GateCheck{Gate: gate, Observed: obs, Limit: fptr(limit), Passed: obs != nil && *obs <= limit}
		if obs == nil {
			g.Detail = undefined
		}
		check(g, code)
	}
	anyPassFailed := false
	var failedPasses []string
	for _, m := range cell.Passes {
		n := len(cell.Failures)
		for _, g := range PassLoadGates(m, l) {
			check(g, g.Failure)
		}
		if len(cell.Failures) > n {
			anyPassFailed = true
			failedPasses = append(failedPasses, m.Pass)
		}
	}
	g := GateCheck{Gate: "load_slo_every_pass", Passed: !anyPassFailed}
	if anyPassFailed {
		g.Detail = "failed: " + strings.Join(failedPasses, ", ")
	}
	check(g, CodePassesFailedLoadSLO)
	above("generation_rate_spread", cell.GenerationRateSpread, l.GenRateSpreadMax, CodeRateSpreadAbove, "a pass has no generation rate: the spread is undefined")
	above("e2e_p95_spread", cell.E2EP95Spread, l.E2EP95SpreadMax, CodeE2ESpreadAbove, "a pass has no observed-p95 E2E: the spread is undefined")
	above("peak_rss_mib", fptr(cell.PeakRSSMiB), l.PeakRSSMiBMax, CodePeakRSSAbove, "")
	if l.MaxDeviceMiB > 0 {
		cell.PeakDeviceMiB = a.deviceGates(c, lives, check, above)
	}
	a.machineGates(&cell, lives, check)
	if c.RPC && len(p.RPCServers) > 0 {
		p.rpcGates(lives, check)
	}
	if qualityGated {
		qg := GateCheck{Gate: "quality", Observed: fptr(q.Fraction), Limit: l.QualityFloor, Passed: q.Passed,
			Detail: fmt.Sprintf("score %d/%d", q.Score, q.Cases)}
		if q.Retention != nil {
			qg.Detail += fmt.Sprintf(", retention %s vs %s", ms(*q.Retention), q.Reference)
		}
		if len(q.Why) > 0 {
			qg.Detail += "; " + strings.Join(q.Why, ", ")
		}
		check(qg, CodeQualityFailed)
	}
	for _, rule := range []struct {
		name, gate, code string
		n                int
	}{{"must", "backend_markers_required", CodeMarkerMissing, len(c.Markers.Must)},
		{"must_not", "backend_markers_forbidden", CodeMarkerForbidden, len(c.Markers.MustNot)}} {
		if rule.n == 0 {
			continue
		}
		var bad []string
		for _, life := range lives {
			for _, mk := range life.markers {
				if mk.Rule == rule.name && !mk.Ok {
					what := "missing from"
					if rule.name == "must_not" {
						what = fmt.Sprintf("present (line %d) in", mk.Line)
					}
					bad = append(bad, fmt.Sprintf("%s: %q %s the last load block (from line %d)", life.key.Pass, mk.Regex, what, life.block.StartLine))
				}
			}
		}
		mg := GateCheck{Gate: rule.gate, Passed: len(bad) == 0}
		if len(bad) > 0 {
			mg.Detail = strings.Join(bad, "; ")
		}
		check(mg, rule.code)
	}
	cell.Passed = len(cell.Failures) == 0
	return cell
}
