package studyrun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/membw"
	"sparkbench/runner/remote"
)

// QueueRun is a running runner queue (*runner.Queue): its events, then its legs' results.
type QueueRun interface {
	Events() <-chan runner.Event
	Results() []*runner.LegResult
}

// BandwidthMeasurement is what the bandwidth probe reports.
type BandwidthMeasurement struct {
	GBs    float64 // the figure ceilings use (STREAM triad)
	Report any     // the probe's full report, journaled with the study
}

// Engine runs registered throughput studies: it expands the plan into legs, runs each through
// the runner (one queue per leg, with the plan's CV gates and canary), streams every row into
// the notebook as it arrives, marks the rows when the leg ends, and journals each prediction's
// verdict as soon as the legs it reads have finished. Its dependencies are fields, so tests
// can replace the runner, the probes and the notebook.
type Engine struct {
	Rec   study.Recorder
	Bench string         // llama-bench
	Hash  study.HashFunc // model hashing (cmd passes the notebook-cached one); nil: hashing.File
	// RemoteModels says the models are files of a bench host (app/fleet): a leg's model is
	// then checked by what llama-bench's rows report of it only, not by its file's identity
	// on this machine (modelcheck.go).
	RemoteModels bool
	// Start runs a queue; nil: runner.StartQueue with one Fingerprinter for the whole run.
	Start func(ctx context.Context, spec runner.QueueSpec) QueueRun
	// Probe fingerprints the machine and the build once per run; nil: the runner's
	// Fingerprinter on Bench.
	Probe func(ctx context.Context) (study.Environment, error)
	// MeasureBandwidth runs the bandwidth probe for plans with bandwidth.measure; nil: membw
	// (3 x 256 MiB, best of 10).
	MeasureBandwidth func(ctx context.Context) (BandwidthMeasurement, error)
	// OnEvent receives every engine event, synchronously: it must return quickly (the GUI
	// hands them to its own goroutine; the CLI prints them).
	OnEvent func(study.Event)
	Now     func() time.Time
	// BenchFlags lists the flags llama-bench accepts (nil: llamacpp.HelpFlags); a build that
	// cannot say leaves extra_args unchecked.
	BenchFlags func(ctx context.Context, bench string) (map[string]bool, error)
	// Retry names plan legs to attempt once more although their failures reached the plan's
	// retry limit (`study run ID --retry LEG`). Only a leg that ended without results can be
	// retried; the verdicts that read it are journaled again once it is final.
	Retry []string
	// Telemetry samples the machine during each plan leg and checks the machine-state gates
	// (docs/telemetry.md); nil: no telemetry, as before.
	Telemetry energy.LegHook
	// RPCHosts reads the hosts file a plan's rpc_servers name (nil: DefaultHosts).
	RPCHosts func() (*remote.HostsFile, error)
	// Leased says the caller holds the study's run lease (Rec.Lease) for the whole run, and
	// for what it does after it (the KV quality check); unset, Run takes it itself.
	Leased bool

	fp *runner.Fingerprinter
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// run is one Run call's state.
type run struct {
	e         *Engine
	l         *study.Loaded
	models    map[string]study.ModelInfo
	artefacts map[string]int64
	machineID int64
	buildID   int64
	bandwidth float64
	baseline  map[string]float64
	done      map[string]bool
	attempts  map[string]int
	recorded  map[string]bool
	start     time.Time
	legTime   time.Duration // spent in legs run by this call
	legsRun   int
	progress  study.Progress
	verdicts  []study.Verdict
	legStart  time.Time
	// adaptiveFinal: the plan legs the stopping rule (or their failures) made final.
	adaptiveFinal map[string]bool
	chunk         *study.ChunkProgress // the adaptive chunk running now (its leg_started event)
	rpc           *rpcTopology         // the plan's ggml-rpc-servers while they run
	// files: each model as the run read it (modelcheck.go); modelHalted: the halt after a
	// leg that ran on another file.
	files       map[string]*modelFile
	modelHalted *runner.QueueStatus
}

func (r *run) emit(ev study.Event) {
	if r.e.OnEvent == nil {
		return
	}
	ev.At = r.e.now()
	ev.StudyID = r.l.St.ID
	p := r.progress
	p.Elapsed = ev.At.Sub(r.start)
	p.ETA = -1
	// An adaptive plan's legs run until the stopping rule stops them: how many chunks are
	// left is not known, so neither is the time (LegsDone stays below LegsTotal until then).
	if r.legsRun > 0 && r.l.Plan.Adaptive == nil {
		left := time.Duration(p.LegsTotal-p.LegsDone) * (r.legTime / time.Duration(r.legsRun))
		if p.Current != "" {
			left -= ev.At.Sub(r.legStart)
		}
		p.ETA = max(left, 0)
	}
	ev.Progress = p
	r.e.OnEvent(ev)
}

// Run runs the study's unfinished legs in plan order: a study run before (and interrupted,
// stopped or halted) resumes at its first unfinished leg; nothing that finished runs again.
// Models are hashed first and a MISMATCH refuses the run (RefusedError).
func (e *Engine) Run(ctx context.Context, studyID int64) (study.RunSummary, error) {
	if e.Rec == nil {
		return study.RunSummary{}, errors.New("study engine: no notebook")
	}
	// One run per study at a time: the lease is taken before the study is read, so what this
	// run reads (the legs finished, the verdicts journaled) is not another run's past.
	if !e.Leased {
		release, err := e.Rec.Lease(ctx, studyID)
		if err != nil {
			return study.RunSummary{StudyID: studyID}, err
		}
		defer release()
	}
	l, err := study.LoadStudy(ctx, e.Rec, studyID)
	if err != nil {
		return study.RunSummary{}, err
	}
	r := &run{e: e, l: l, artefacts: map[string]int64{}, done: map[string]bool{}, attempts: map[string]int{},
		recorded: map[string]bool{}, start: e.now()}
	sum := study.RunSummary{StudyID: studyID, LegsTotal: len(l.Legs)}
	// The notebook marks legs of dead processes interrupted when it opens: a leg still running
	// belongs to a live process, and a second run would duplicate its legs.
	for _, s := range l.Stored {
		if s.State == study.LegRunning {
			return sum, fmt.Errorf("%w: leg %s (%d) is running; wait for it, or stop that run", study.ErrBusy, s.Label, s.ID)
		}
	}
	if err := r.l.Reopen(r.e.Retry); err != nil {
		return sum, err
	}
	if err := r.prepare(ctx); err != nil {
		return sum, err
	}
	r.resume()
	sum.LegsSkipped = r.progress.LegsDone
	if err := e.Rec.SetStatus(ctx, studyID, study.StatusRunning); err != nil {
		return sum, err
	}
	note := map[string]any{"legs_done": r.progress.LegsDone, "legs_total": len(l.Legs), "bench": e.Bench, "bandwidth_gbs": r.bandwidth}
	if st := energy.Statuses(e.Telemetry); st != nil { // docs/telemetry.md: which samplers read, and why the others did not
		note["samplers"] = st
	}
	if err := e.Rec.Note(ctx, studyID, study.NoteRun, note); err != nil {
		return sum, err
	}
	r.emit(study.Event{Kind: study.EventRunStarted})
	// Verdicts whose legs finished in an earlier run but were not journaled (the process died
	// in between) are journaled now.
	if err := r.updateVerdicts(ctx); err != nil {
		return sum, err
	}
	finish := func(err error) (study.RunSummary, error) {
		if serr := r.stopRPC(ctx); serr != nil && err == nil {
			err = serr // a ggml-rpc-server stayed on its host
		}
		sum.LegsDone, sum.LegsRun, sum.Verdicts = r.progress.LegsDone, r.legsRun, r.verdicts
		sum.Elapsed = e.now().Sub(r.start)
		st, serr := e.Rec.Study(context.WithoutCancel(ctx), studyID)
		if serr == nil {
			sum.Status = st.Status
		}
		return sum, err
	}
	if err := r.startRPC(ctx); err != nil { // before any leg: a port taken, a host unreachable
		if herr := r.halt(ctx, "", "rpc", err.Error(), &sum); herr != nil {
			return finish(herr)
		}
		return finish(err)
	}
	if l.Plan.Adaptive != nil {
		halted, err := r.runAdaptive(ctx, &sum)
		if err != nil || halted {
			return finish(err)
		}
	}
	for _, lp := range l.Legs {
		if l.Plan.Adaptive != nil {
			break // run in chunks above
		}
		if r.done[lp.ID] {
			r.emit(study.Event{Kind: study.EventLegSkipped, Leg: lp.ID})
			continue
		}
		if ctx.Err() != nil {
			return finish(r.halt(ctx, lp.ID, string(runner.ClassStoppedByUser), "stopped by the user before "+lp.ID, &sum))
		}
		if r.l.Plan.Canary != nil && r.baseline == nil {
			if err := r.canaryBaseline(ctx); err != nil {
				return finish(err)
			}
		}
		out, err := r.runLeg(ctx, lp, nil)
		if err != nil {
			return finish(err)
		}
		if out.halted != nil {
			return finish(r.halt(ctx, lp.ID, string(out.halted.Class), out.halted.Reason, &sum))
		}
	}
	wctx := context.WithoutCancel(ctx)
	// Legs still without results make the study incomplete, never complete: a later run retries
	// those whose failures have not reached the plan's retry limit.
	for _, st := range study.LegStatuses(l.Plan, l.Legs, l.Stored) {
		if !st.Results || (l.Plan.Adaptive != nil && !r.adaptiveFinal[st.Leg]) {
			sum.Incomplete = append(sum.Incomplete, st)
		}
	}
	status := study.StatusComplete
	if len(sum.Incomplete) > 0 {
		status = study.StatusIncomplete
		var legs []map[string]any
		for _, st := range sum.Incomplete {
			legs = append(legs, map[string]any{"leg": st.Leg, "class": st.Last.Class, "reason": st.Last.Reason,
				"attempts": st.Attempts, "failed": st.Failed, "max_attempts": st.MaxAttempts, "final": st.Final})
		}
		if err := e.Rec.Note(wctx, studyID, study.NoteIncomplete, map[string]any{"legs": legs}); err != nil {
			return finish(err)
		}
	}
	if err := e.Rec.SetStatus(wctx, studyID, status); err != nil {
		return finish(err)
	}
	r.emit(study.Event{Kind: study.EventDone})
	return finish(nil)
}

// resume takes up what earlier runs left: the verdicts already journaled (a verdict that reads
// a leg reopened by a forced retry is journaled again once that leg is final), each plan leg's
// attempts, the legs that are final, and the progress they make.
func (r *run) resume() {
	for key, v := range r.l.St.Verdicts {
		if v.Computed != nil {
			r.recorded[key] = true
		}
	}
	// A verdict journaled before a forced retry of a leg it reads is journaled again (a new
	// entry: the earlier one stays) once that leg is final.
	for _, p := range r.l.Preds {
		if r.recorded[p.ID] && study.ReadsAny(p, r.l.Legs, r.l.Reopened) {
			r.recorded[p.ID] = false
		}
	}
	for _, s := range r.l.Stored {
		if s.Role == study.RoleLeg {
			r.attempts[s.PlanLeg] = max(r.attempts[s.PlanLeg], s.Attempt)
		}
	}
	for _, st := range study.LegStatuses(r.l.Plan, r.l.Legs, r.l.Stored) {
		if st.Final && !r.l.Reopened[st.Leg] {
			r.done[st.Leg] = true
		}
	}
	r.progress = study.Progress{LegsTotal: len(r.l.Legs), ETA: -1}
	for _, lp := range r.l.Legs {
		if r.done[lp.ID] {
			r.progress.LegsDone++
		}
	}
}

// halt records why the study stopped early; a stop by the user returns ErrStopped.
func (r *run) halt(ctx context.Context, leg, class, reason string, sum *study.RunSummary) error {
	wctx := context.WithoutCancel(ctx)
	sum.Halted, sum.Reason = true, reason
	if err := r.e.Rec.Note(wctx, r.l.St.ID, study.NoteHalted, map[string]any{"leg": leg, "class": class, "reason": reason}); err != nil {
		return err
	}
	if err := r.e.Rec.SetStatus(wctx, r.l.St.ID, study.StatusHalted); err != nil {
		return err
	}
	r.progress.Current = ""
	r.emit(study.Event{Kind: study.EventHalted, Leg: leg, Reason: reason})
	if class == string(runner.ClassStoppedByUser) {
		return fmt.Errorf("%w: %s", study.ErrStopped, reason)
	}
	return nil
}

// prepare hashes and records the models (refusing a MISMATCH), records the machine and the
// build, and measures the bandwidth when the plan asks and no earlier run did.
func (r *run) prepare(ctx context.Context) error {
	e, l := r.e, r.l
	hash := e.Hash
	if hash == nil {
		hash = func(path string) (string, error) { return hashing.File(ctx, path, nil) }
	}
	devs, err := ListBuildDevices(ctx, e.Bench, l.Plan)
	if err != nil {
		return err // an RPC endpoint that refuses or hangs: no leg could run
	}
	probs, models := study.Validate(l.Plan, study.ValidateOptions{PlanDir: l.St.PlanDir, Hash: hash, BenchFlags: e.benchFlags(ctx), Devices: devs})
	r.models = models
	for _, m := range l.Plan.Models {
		info, ok := models[m.ID]
		if !ok || info.SHA256 == "" {
			continue
		}
		mr := study.ModelRecord{Path: info.Path, SHA256: info.SHA256, ExpectedSHA256: m.SHA256, Source: m.Source, Revision: m.Revision}
		if h := info.Header; h != nil {
			mr.Name, mr.Architecture, mr.Quant, mr.NParams = h.Name, h.Architecture, h.FileTypeName, int64(h.ParamCount)
		}
		id, err := e.Rec.Model(ctx, mr)
		if err != nil {
			return err
		}
		r.artefacts[m.ID] = id
	}
	if len(study.Errors(probs)) > 0 {
		return &study.RefusedError{Problems: probs}
	}
	if err := r.noteModelFiles(); err != nil {
		return err
	}
	if e.Bench == "" {
		return errors.New("study run: no llama-bench binary (pass --llama-dir or set build.dir in the plan)")
	}
	env, err := r.probe(ctx)
	if err != nil {
		return err
	}
	r.bandwidth = l.Bandwidth()
	if b := l.Plan.Bandwidth; b != nil && b.Measure && r.bandwidth == 0 {
		measure := e.MeasureBandwidth
		if measure == nil {
			measure = measureBandwidth
		}
		m, err := measure(ctx)
		if err != nil {
			return fmt.Errorf("measure memory bandwidth: %w", err)
		}
		r.bandwidth = m.GBs
		if err := e.Rec.Note(ctx, l.St.ID, study.NoteBandwidth, map[string]any{"gbs": m.GBs, "probe": m.Report}); err != nil {
			return err
		}
		env.Bandwidth = m.Report
		r.emit(study.Event{Kind: study.EventBandwidth, BandwidthGBs: m.GBs})
	}
	if b := l.Plan.Bandwidth; b != nil && b.Measure {
		env.BandwidthGBs = r.bandwidth
	}
	r.machineID, r.buildID, err = e.Rec.Environment(ctx, env)
	return err
}

// benchFlags lists the flags the build's llama-bench accepts, to refuse a plan whose
// extra_args it does not know before any leg; nil (not checked) when it cannot tell.
func (e *Engine) benchFlags(ctx context.Context) map[string]bool {
	if e.Bench == "" {
		return nil
	}
	get := e.BenchFlags
	if get == nil {
		get = llamacpp.HelpFlags
	}
	flags, err := get(ctx, e.Bench)
	if err != nil {
		return nil
	}
	return flags
}

// ListBuildDevices asks the build's llama-bench for its devices with the plan's env and RPC
// endpoints, for the device checks (study.CheckDevices). A plan without device axes or env asks
// nothing (nil). An RPC endpoint that refuses the connection or does not answer is an error
// naming it (*llamacpp.RPCError); a build that cannot be asked otherwise gives Listed false.
func ListBuildDevices(ctx context.Context, bench string, p *study.Plan) (*study.BuildDevices, error) {
	if bench == "" || !p.NeedsDevices() {
		return nil, nil
	}
	return ListDevices(ctx, bench, p)
}

// ListDevices is ListBuildDevices whether or not the plan has device axes or env (the window's
// New study form lists the devices to offer them).
func ListDevices(ctx context.Context, bench string, p *study.Plan) (*study.BuildDevices, error) {
	dl, err := llamacpp.ListDevices(ctx, bench, p.Build.EnvList(), p.Axes.RPC)
	var rpcErr *llamacpp.RPCError
	if errors.As(err, &rpcErr) {
		return nil, err
	}
	if err != nil {
		return &study.BuildDevices{}, nil
	}
	return &study.BuildDevices{Devices: dl.Devices, Backends: dl.Backends, Listed: true}, nil
}

func measureBandwidth(ctx context.Context) (BandwidthMeasurement, error) {
	res, err := membw.Measure(ctx, membw.Options{})
	if err != nil {
		return BandwidthMeasurement{}, err
	}
	return BandwidthMeasurement{GBs: res.TriadGBs, Report: res}, nil
}

func (r *run) probe(ctx context.Context) (study.Environment, error) {
	if r.e.Probe != nil {
		return r.e.Probe(ctx)
	}
	return EnvironmentOf(r.e.fingerprinter().Take(ctx, r.e.Bench, r.l.Plan.Build.EnvList()), r.e.Bench), nil
}

// EnvironmentOf is the machine and build a study records from a fingerprint of llama-bench at
// bench (a local one, or a bench host's: Engine.Probe).
func EnvironmentOf(fp *runner.Fingerprint, bench string) study.Environment {
	env := study.Environment{Machine: fp.Machine, BuildDir: filepath.Dir(bench), VersionLine: fp.VersionLine,
		BuildNumber: int64(fp.BuildNumber), Commit: fp.Commit, Backends: fp.Backends,
		Binaries: map[string]string{fp.Binary.Name: fp.Binary.SHA256}}
	for _, lib := range fp.Libraries { // the libraries hold the build's code: they identify it
		env.Binaries[lib.Name] = lib.SHA256
	}
	for _, d := range fp.Devices {
		env.Devices = append(env.Devices, d.Name+" ("+d.Description+")")
	}
	return env
}

func (e *Engine) fingerprinter() *runner.Fingerprinter {
	if e.fp == nil {
		e.fp = &runner.Fingerprinter{}
	}
	return e.fp
}

func (e *Engine) startQueue(ctx context.Context, spec runner.QueueSpec) QueueRun {
	if e.Start != nil {
		return e.Start(ctx, spec)
	}
	return runner.StartQueue(ctx, spec, runner.WithFingerprinter(e.fingerprinter()))
}

// updateVerdicts journals every prediction whose verdict left PENDING since the last call.
func (r *run) updateVerdicts(ctx context.Context) error {
	var err error
	if r.l.Stored, err = r.e.Rec.Legs(ctx, r.l.St.ID); err != nil {
		return err
	}
	if r.l.Rows, err = r.e.Rec.Rows(ctx, r.l.St.ID); err != nil {
		return err
	}
	res := study.BuildResults(r.l, r.models, r.bandwidth)
	for _, p := range r.l.Preds {
		if r.recorded[p.ID] {
			continue
		}
		v := res.Evaluate(p)
		if v.Outcome == study.Pending {
			continue
		}
		if err := r.e.Rec.RecordVerdict(ctx, r.l.St.ID, v); err != nil {
			return err
		}
		r.recorded[p.ID] = true
		r.verdicts = append(r.verdicts, v)
		vv := v
		r.emit(study.Event{Kind: study.EventVerdict, Verdict: &vv})
	}
	return nil
}
