// Package quantrun runs a registered quantization ladder (app/quant): it makes or reuses each
// candidate (llama-quantize, through the derived-model cache), writes the reference's base
// logits once (llama-perplexity --kl-divergence-base), measures each candidate's KL divergence
// against them and its speed at the plan's depths (llama-bench), records every process as a
// leg in the notebook and every candidate's raw record in the journal, and assembles the
// candidates table and the rule's choice. It is the kind's process half.
package quantrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sparkbench/app/energy"
	"strconv"
	"strings"
	"time"

	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

// Options are how a run goes: the llama.cpp folder ("": the plan's build.dir, else the usual
// search), the data folder (derived models under quant-cache/, base logits under runs/), the
// hasher (the notebook's cache) and where each step's line goes.
type Options struct {
	LlamaDir string
	DataDir  string
	Hash     study.HashFunc
	Event    func(line string)
	// Record, when set, receives each candidate's raw record as soon as it is measured and
	// journaled (the window's live chart).
	Record func(quant.Record)
	// Telemetry, when the plan has a telemetry block, gives the hook that samples each
	// candidate's llama-bench legs and a function that closes its samplers (nil: no sampling).
	Telemetry func(*energy.Plan) (energy.LegHook, func() error)
	// Previous are the records of the study's last run (its journal): a run resumes them. A
	// candidate measured in full there, of the same derived file, is kept as it was; one that
	// names the legs it is missing keeps what was measured and runs only those legs; any other
	// is measured again.
	Previous []quant.Record
}

// Summary is what a run did: its status, the assembled result, the legs it recorded, the
// derived models it reused, and the wall time of each phase (quantize, kld, bench).
type Summary struct {
	Status   string
	Result   *quant.Result
	Legs     int
	Reused   int
	Phases   map[string]time.Duration
	Elapsed  time.Duration
	Complete bool
}

// Journal entry kinds the run appends.
const (
	EntryStarted    = "quant.started"    // a run began: the records after it are its own
	EntryRecord     = "quant.record"     // a candidate's raw record (quant.Record), once measured
	EntryStale      = "quant.stale"      // a cache file set aside: it no longer hashed as recorded
	EntryImatrix    = "quant.imatrix"    // the importance matrix the candidates are quantized with
	EntryProvenance = "quant.provenance" // the build and machine the run measures on (quant.Provenance)
	EntryAssembled  = "quant.assembled"  // the rule's choice over the records
)

type engine struct {
	nb       *store.Notebook
	study    store.Study
	plan     *quant.Plan
	planSHA  string
	opts     Options
	loc      llamacpp.Location
	qtool    string
	ptool    string
	itool    string      // llama-imatrix, when the plan makes a matrix
	ftool    string      // llama-fit-params, when the plan projects memory
	imatrix  imatrixFile // the matrix every candidate is quantized with (none: zero)
	build    string
	cacheDir string
	tel      energy.LegHook // samples the bench legs (nil: none)
	runDir   string
	env      []string
	legs     int
	reused   int
	phases   map[string]time.Duration
	files    map[string]fileID // each candidate file as the run hashed it (modelcheck.go)
}

func (e *engine) say(line string) {
	if e.opts.Event != nil {
		e.opts.Event(line)
	}
}

func (e *engine) hash(path string) (string, error) {
	if e.opts.Hash == nil {
		return "", fmt.Errorf("no hasher")
	}
	return e.opts.Hash(path)
}

func (e *engine) timed(phase string, f func() error) error {
	t0 := time.Now()
	err := f()
	e.phases[phase] += time.Since(t0)
	return err
}

// Run runs study s's ladder from the start (derived models found in the cache are reused).
func Run(ctx context.Context, nb *store.Notebook, s store.Study, o Options) (*Summary, error) {
	start := time.Now()
	e, err := newEngine(ctx, nb, s, o)
	if err != nil {
		return nil, err
	}
	if e.plan.Telemetry != nil && o.Telemetry != nil {
		hook, closeSamplers := o.Telemetry(e.plan.Telemetry)
		defer closeSamplers()
		e.tel = hook
	}
	if err := nb.SetStudyStatus(ctx, s.ID, store.StatusRunning); err != nil {
		return nil, err
	}
	if _, err := nb.AppendJournal(ctx, EntryStarted, map[string]any{"study": s.ID, "plan_sha256": e.planSHA}, store.ForStudy(s.ID)); err != nil {
		return nil, err
	}
	if _, err := nb.AppendJournal(ctx, EntryProvenance, map[string]any{"study": s.ID, "provenance": e.provenance(ctx)}, store.ForStudy(s.ID)); err != nil {
		return nil, err
	}
	recs, err := e.candidates(ctx)
	sum := &Summary{Legs: e.legs, Reused: e.reused, Phases: e.phases}
	if err != nil {
		_ = nb.SetStudyStatus(context.WithoutCancel(ctx), s.ID, store.StatusHalted)
		sum.Status, sum.Elapsed = store.StatusHalted, time.Since(start)
		return sum, err
	}
	res, err := quant.Assemble(e.plan, e.planSHA, recs)
	if err != nil {
		return sum, err
	}
	if _, err := nb.AppendJournal(ctx, EntryAssembled, map[string]any{"study": s.ID, "plan_sha256": e.planSHA,
		"selected": res.Selection.Selected, "runner_up": res.Selection.RunnerUp, "why": res.Selection.Why, "verdicts": res.Verdicts}, store.ForStudy(s.ID)); err != nil {
		return sum, err
	}
	sum.Result, sum.Complete = res, true
	for _, r := range recs {
		if len(r.Incomplete) > 0 {
			sum.Complete = false
		}
	}
	sum.Status = store.StatusComplete
	if !sum.Complete {
		sum.Status = store.StatusIncomplete
	}
	sum.Legs, sum.Reused, sum.Elapsed = e.legs, e.reused, time.Since(start)
	return sum, nb.SetStudyStatus(ctx, s.ID, sum.Status)
}

func newEngine(ctx context.Context, nb *store.Notebook, s store.Study, o Options) (*engine, error) {
	pl, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	p, err := quant.Decode(fmt.Sprintf("study %d plan", s.ID), pl.JSON)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	dir := o.LlamaDir
	if dir == "" {
		dir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		return nil, err
	}
	e := &engine{nb: nb, study: s, plan: p, planSHA: pl.SHA256, opts: o, loc: loc, env: p.Build.EnvList(), phases: map[string]time.Duration{}}
	if e.qtool, err = runner.QuantizeToolPath(loc); err != nil {
		return nil, err
	}
	if e.ptool, err = runner.PerplexityToolPath(loc); err != nil {
		return nil, err
	}
	if p.Imatrix != nil {
		if e.itool, err = runner.ImatrixToolPath(loc); err != nil {
			return nil, err
		}
	}
	if p.MemoryCtx > 0 {
		if e.ftool, err = llamacpp.FitParamsTool(loc); err != nil {
			return nil, err
		}
	}
	if e.build, err = e.hash(e.qtool); err != nil {
		return nil, fmt.Errorf("hash %s: %w", e.qtool, err)
	}
	data := o.DataDir
	if data == "" {
		return nil, fmt.Errorf("no data folder for the derived models")
	}
	e.cacheDir = CacheDir(data)
	e.runDir = filepath.Join(data, "runs", fmt.Sprintf("quant-%d-%s", s.ID, time.Now().UTC().Format("20060102-150405")))
	for _, d := range []string{e.cacheDir, e.runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if got, err := e.hash(p.Reference.Path); err != nil || got != p.Reference.SHA256 {
		if err == nil {
			err = fmt.Errorf("MISMATCH: %s hashes to %s, the registered plan expects %s", p.Reference.Path, got, p.Reference.SHA256)
		}
		return nil, fmt.Errorf("reference: %w", err)
	}
	return e, nil
}

// candidates makes or reuses every candidate, writes the base logits, and measures each: its
// records in plan order, journaled.
func (e *engine) candidates(ctx context.Context) ([]quant.Record, error) {
	p := e.plan
	ref, err := gguf.ReadFile(p.Reference.Path)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	refSt, err := os.Stat(p.Reference.Path)
	if err != nil {
		return nil, err
	}
	// The base logits first: a corpus too short for the quality settings stops the run here,
	// before anything is quantized; then the importance matrix, if any, whose SHA-256 is part
	// of every candidate's cache key; then the disk check of what is left to make.
	base := filepath.Join(e.runDir, "base-logits.kld")
	baseDone := false
	writeBase := func() error {
		if baseDone {
			return nil
		}
		baseDone = true
		return e.timed("kld", func() error { return e.baseLogits(ctx, base) })
	}
	if e.needsKLD() {
		if err := writeBase(); err != nil {
			return nil, err
		}
	}
	if err := e.timed("quantize", func() error { return e.makeImatrix(ctx) }); err != nil {
		return nil, err
	}
	var todo []string
	for _, typ := range p.Quants {
		if _, ok, _, _ := e.lookup(quant.CacheKey(p.Reference.SHA256, typ, e.imatrix.sha, e.build)); !ok {
			todo = append(todo, typ)
		}
	}
	if err := e.checkDisk(todo, refSt.Size(), ref.FileTypeName); err != nil {
		return nil, err
	}
	arms := p.Arms()
	recs := make([]quant.Record, len(arms))
	made := map[string]quant.Record{} // by quant type: its derived file, shared by its KV arms
	for i, arm := range arms {
		recs[i] = quant.Record{Type: arm.Quant, KV: arm.KV, Bench: []quant.BenchCell{}}
		if m, ok := made[arm.Quant]; ok {
			recs[i].Key, recs[i].File, recs[i].SHA256, recs[i].Bytes, recs[i].Bits = m.Key, m.File, m.SHA256, m.Bytes, m.Bits
			recs[i].Reused, recs[i].Quantize, recs[i].Imatrix, recs[i].Incomplete, recs[i].MissingLegs = m.Reused, m.Quantize, m.Imatrix, m.Incomplete, m.MissingLegs
			continue
		}
		if err := e.timed("quantize", func() error { return e.derive(ctx, &recs[i]) }); err != nil {
			return nil, err
		}
		made[arm.Quant] = recs[i]
	}
	for i := range recs {
		if recs[i].File == "" {
			continue
		}
		kept := e.resume(&recs[i])
		if recs[i].KLD == nil {
			if err := writeBase(); err != nil {
				return nil, err
			}
			if err := e.timed("kld", func() error { return e.kld(ctx, &recs[i], base) }); err != nil {
				return nil, err
			}
		}
		if err := e.timed("bench", func() error { return e.bench(ctx, &recs[i], kept) }); err != nil {
			return nil, err
		}
		// Cells kept from the last run and measured now, in the plan's depth order.
		slices.SortStableFunc(recs[i].Bench, func(a, b quant.BenchCell) int {
			return slices.Index(p.Speed.Depths, a.Depth) - slices.Index(p.Speed.Depths, b.Depth)
		})
		if recs[i].Projected == nil {
			if err := e.timed("memory", func() error { return e.project(ctx, &recs[i]) }); err != nil {
				return nil, err
			}
		}
		if err := e.journal(ctx, recs[i]); err != nil {
			return nil, err
		}
	}
	for _, r := range recs {
		if r.File == "" { // not made: journaled after the others, in plan order
			if err := e.journal(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	return recs, nil
}

// journal appends a candidate's raw record and hands it to the Record callback.
func (e *engine) journal(ctx context.Context, r quant.Record) error {
	if _, err := e.nb.AppendJournal(ctx, EntryRecord, map[string]any{"study": e.study.ID, "record": r}, store.ForStudy(e.study.ID)); err != nil {
		return err
	}
	if e.opts.Record != nil {
		e.opts.Record(r)
	}
	return nil
}

// provenance fingerprints llama-bench of the run's build (version, devices) and the machine.
func (e *engine) provenance(ctx context.Context) quant.Provenance {
	fp := (&runner.Fingerprinter{}).Take(ctx, e.loc.Bench, e.env)
	pv := quant.Provenance{VersionLine: fp.VersionLine, Commit: fp.Commit, BuildNumber: fp.BuildNumber,
		Backends: append([]string{}, fp.Backends...), Machine: fp.Machine.String()}
	for _, d := range fp.Devices {
		pv.Devices = append(pv.Devices, d.Name+" ("+d.Description+")")
	}
	return pv
}

// note adds what a record lacks, and the leg that ended without it, and says it.
func (e *engine) note(r *quant.Record, leg, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.Incomplete = append(r.Incomplete, msg)
	r.MissingLegs = append(r.MissingLegs, leg)
	e.say(r.Label() + ": " + msg)
}

func joinArgs(a []string) string { return strings.Join(a, " ") }

// previous is the last run's record of a candidate, when the run resumes it (nil: measure it
// from the start): measured in full, or naming the legs it is missing.
func (e *engine) previous(label string) *quant.Record {
	for i := range e.opts.Previous {
		p := &e.opts.Previous[i]
		if p.Label() == label && p.File != "" && (len(p.Incomplete) == 0 || len(p.MissingLegs) == len(p.Incomplete)) {
			return p
		}
	}
	return nil
}

// needsKLD says whether a candidate's KL divergence is left to measure (the base logits are
// written only then).
func (e *engine) needsKLD() bool {
	for _, a := range e.plan.Arms() {
		p := e.previous(a.Label())
		if p == nil || p.KLD == nil {
			return true
		}
	}
	return false
}

// resume takes into r (its derived file made or reused) what the last run measured of the
// same file: its KLD, projection, peak RSS, energy and the speed cells of the depths whose legs
// ended with results; the depths kept are returned. The legs the last run missed are left to
// measure (r's notes start empty).
func (e *engine) resume(r *quant.Record) map[int]bool {
	p := e.previous(r.Label())
	if p == nil || p.SHA256 != r.SHA256 {
		return nil
	}
	missing := func(leg string) bool { return slices.Contains(p.MissingLegs, leg) }
	if p.KLD != nil && !missing("kld/"+r.Label()) {
		r.KLD, r.KLDLeg, r.KLDLines = p.KLD, p.KLDLeg, p.KLDLines
	}
	if p.Projected != nil {
		r.Projected = p.Projected
	}
	kept := map[int]bool{}
	for _, d := range e.plan.Speed.Depths {
		if missing(fmt.Sprintf("bench/%s/d%d", r.Label(), d)) {
			continue
		}
		var cells []quant.BenchCell
		for _, c := range p.Bench {
			if c.Depth == d {
				cells = append(cells, c)
			}
		}
		if len(cells) > 0 {
			kept[d] = true
			r.Bench = append(r.Bench, cells...)
		}
	}
	for _, le := range p.Energy {
		if _, d, ok := benchLegDepth(le.Leg); ok && kept[d] {
			r.Energy = append(r.Energy, le)
		}
	}
	if len(kept) > 0 {
		r.PeakRSS = max(r.PeakRSS, p.PeakRSS)
	}
	what := []string{}
	if r.KLD != nil {
		what = append(what, "KLD")
	}
	if len(kept) > 0 {
		what = append(what, fmt.Sprintf("speed at %d of %d depths", len(kept), len(e.plan.Speed.Depths)))
	}
	if len(what) > 0 {
		e.say(fmt.Sprintf("%s: kept from the last run: %s", r.Label(), strings.Join(what, ", ")))
	}
	return kept
}

// benchLegDepth reads a bench leg's label (bench/LABEL/dD, an attempt's #N after it).
func benchLegDepth(leg string) (label string, depth int, ok bool) {
	leg, _, _ = strings.Cut(leg, "#")
	rest, found := strings.CutPrefix(leg, "bench/")
	i := strings.LastIndex(rest, "/d")
	if !found || i < 0 {
		return "", 0, false
	}
	d, err := strconv.Atoi(rest[i+2:])
	return rest[:i], d, err == nil
}
