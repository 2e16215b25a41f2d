package studyrun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/membw"
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
	if r.legsRun > 0 {
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
	for key, v := range l.St.Verdicts {
		if v.Computed != nil {
			r.recorded[key] = true
		}
	}
	// A verdict journaled before a forced retry of a leg it reads is journaled again (a new
	// entry: the earlier one stays) once that leg is final.
	for _, p := range l.Preds {
		if r.recorded[p.ID] && study.ReadsAny(p, l.Legs, l.Reopened) {
			r.recorded[p.ID] = false
		}
	}
	for _, s := range l.Stored {
		if s.Role == study.RoleLeg {
			r.attempts[s.PlanLeg] = max(r.attempts[s.PlanLeg], s.Attempt)
		}
	}
	for _, st := range study.LegStatuses(l.Plan, l.Legs, l.Stored) {
		if st.Final && !l.Reopened[st.Leg] {
			r.done[st.Leg] = true
		}
	}
	r.progress = study.Progress{LegsTotal: len(l.Legs), ETA: -1}
	for _, lp := range l.Legs {
		if r.done[lp.ID] {
			r.progress.LegsDone++
		}
	}
	sum.LegsSkipped = r.progress.LegsDone
	if err := e.Rec.SetStatus(ctx, studyID, study.StatusRunning); err != nil {
		return sum, err
	}
	if err := e.Rec.Note(ctx, studyID, study.NoteRun, map[string]any{"legs_done": r.progress.LegsDone, "legs_total": len(l.Legs),
		"bench": e.Bench, "bandwidth_gbs": r.bandwidth}); err != nil {
		return sum, err
	}
	r.emit(study.Event{Kind: study.EventRunStarted})
	// Verdicts whose legs finished in an earlier run but were not journaled (the process died
	// in between) are journaled now.
	if err := r.updateVerdicts(ctx); err != nil {
		return sum, err
	}
	finish := func(err error) (study.RunSummary, error) {
		sum.LegsDone, sum.LegsRun, sum.Verdicts = r.progress.LegsDone, r.legsRun, r.verdicts
		sum.Elapsed = e.now().Sub(r.start)
		st, serr := e.Rec.Study(context.WithoutCancel(ctx), studyID)
		if serr == nil {
			sum.Status = st.Status
		}
		return sum, err
	}
	for _, lp := range l.Legs {
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
		out, err := r.runLeg(ctx, lp)
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
		if !st.Results {
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
	probs, models := study.Validate(l.Plan, study.ValidateOptions{PlanDir: l.St.PlanDir, Hash: hash, BenchFlags: e.benchFlags(ctx)})
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
	fp := r.e.fingerprinter().Take(ctx, r.e.Bench, nil)
	env := study.Environment{Machine: fp.Machine, BuildDir: filepath.Dir(r.e.Bench), VersionLine: fp.VersionLine,
		BuildNumber: int64(fp.BuildNumber), Commit: fp.Commit, Backends: fp.Backends,
		Binaries: map[string]string{fp.Binary.Name: fp.Binary.SHA256}}
	for _, lib := range fp.Libraries { // the libraries hold the build's code: they identify it
		env.Binaries[lib.Name] = lib.SHA256
	}
	for _, d := range fp.Devices {
		env.Devices = append(env.Devices, d.Name+" ("+d.Description+")")
	}
	return env, nil
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

func (r *run) gate() runner.CVGate {
	g := r.l.Plan.Gates
	return runner.CVGate{TG: g.CVTG, PPDepth: g.CVPPDepth, PP: g.CVPPD0}
}

// canaryLeg is the plan's canary: a short bench of the canary model, never gated (its job is
// to complete at its usual speed).
func (r *run) canaryLeg(id string) runner.LegSpec {
	p := r.l.Plan
	c := p.Canary
	var path string
	for _, m := range p.Models {
		if m.ID == c.Model {
			path = study.ResolvePath(r.l.St.PlanDir, m.Path)
		}
	}
	args := []string{"-m", path, "-p", strconv.Itoa(c.NPrompt), "-n", strconv.Itoa(c.NGen), "-r", "3"}
	if len(p.Axes.Threads) > 0 {
		args = append(args, "-t", strconv.Itoa(p.Axes.Threads[0]))
	}
	if len(p.Axes.NGL) > 0 {
		args = append(args, "-ngl", strconv.Itoa(p.Axes.NGL[0]))
	}
	args = append(args, "-o", "jsonl")
	return runner.LegSpec{ID: id, Bench: r.e.Bench, Args: args, CVGate: runner.CVGate{Off: true}}
}

func (r *run) canaryTest() string { return benchfmt.TestName(0, int64(r.l.Plan.Canary.NGen), 0) }

// canaryBaseline sets the canary's baseline: the plan's baseline_tg, else the tg rate of the
// study's baseline canary run (run now, before the first leg, when no earlier run made one).
func (r *run) canaryBaseline(ctx context.Context) error {
	c := r.l.Plan.Canary
	r.baseline = map[string]float64{}
	if c.BaselineTG > 0 {
		r.baseline[r.canaryTest()] = c.BaselineTG
		return nil
	}
	attempt := 0
	for _, s := range r.l.Stored {
		if s.Role != study.RoleCanaryBaseline {
			continue
		}
		attempt = max(attempt, s.Attempt)
		if s.State == study.LegFinished && s.Class == string(runner.ClassOK) {
			for _, row := range r.l.Rows {
				if row.LegID == s.ID && row.Result.TestName() == r.canaryTest() && row.Result.AvgTs > 0 {
					r.baseline[r.canaryTest()] = row.Result.AvgTs
				}
			}
		}
	}
	if len(r.baseline) > 0 {
		return nil
	}
	label := "canary baseline"
	if attempt > 0 {
		label = fmt.Sprintf("canary baseline (attempt %d)", attempt+1)
	}
	spec := r.canaryLeg(label)
	st, err := r.stream(ctx, spec, study.LegStart{StudyID: r.l.St.ID, Label: label, Kind: "canary", Role: study.RoleCanaryBaseline,
		Attempt: attempt + 1, MachineID: r.machineID, BuildID: r.buildID, ArtefactID: r.artefacts[c.Model],
		Detail: map[string]any{"plan_sha256": r.l.St.PlanSHA256}}, nil, 2)
	if err != nil {
		return err
	}
	for _, row := range st.results[0].Results() {
		if row.Test == r.canaryTest() {
			r.baseline[row.Test] = row.AvgTs
		}
	}
	// A baseline run that failed leaves no baseline: a later canary must then only complete.
	return nil
}

// recordAfterTheFact records a finished runner leg (a canary) in one go: start, rows, finish.
func (r *run) recordAfterTheFact(ctx context.Context, res *runner.LegResult, label, planLeg, role string, attempt int) (int64, error) {
	wctx := context.WithoutCancel(ctx)
	id, sink, err := r.e.Rec.StartLeg(wctx, study.LegStart{StudyID: r.l.St.ID, Label: label, Kind: "canary", PlanLeg: planLeg,
		Role: role, Attempt: attempt, Argv: res.Argv, MachineID: r.machineID, BuildID: r.buildID,
		ArtefactID: r.artefacts[r.l.Plan.Canary.Model], Detail: map[string]any{"plan_sha256": r.l.St.PlanSHA256}})
	if err != nil {
		return 0, err
	}
	status := make([]string, 0, len(res.Rows))
	for _, row := range res.Rows {
		if err := sink.AddBench(row.Sample.Result); err != nil {
			return id, err
		}
		status = append(status, string(row.Status))
	}
	return id, r.e.Rec.FinishLeg(wctx, id, legEnd(res, status))
}

func legEnd(res *runner.LegResult, status []string) study.LegEnd {
	x := res.Exit
	end := study.LegEnd{Class: string(x.Class), Reason: x.Reason, Signal: x.Signal, PeakRSS: x.PeakRSS, RowStatus: status}
	if x.Code >= 0 {
		c := x.Code
		end.ExitCode = &c
	}
	if res.Transcript != nil {
		end.Transcript = res.Transcript.Bytes()
	}
	return end
}

type legRun struct {
	halted *runner.QueueStatus
}

// streamed is one leg run through a queue and recorded as it ran.
type streamed struct {
	legID   int64
	results []*runner.LegResult // the leg's, then the canary's when one ran
	out     study.LegOutcome
	canary  *runner.Canary
	halted  *runner.QueueStatus
}

// stream runs spec through a queue (with the canary cs after a crash-class end), recording it
// as the leg ls: each row is added to the notebook as it arrives; the leg is finished with
// its outcome, transcript and row statuses when the queue is done.
func (r *run) stream(ctx context.Context, spec runner.LegSpec, ls study.LegStart, cs *runner.CanarySpec, expected int) (streamed, error) {
	e, l := r.e, r.l
	ls.Argv = spec.Argv()
	legID, sink, err := e.Rec.StartLeg(ctx, ls)
	if err != nil {
		return streamed{}, err
	}
	st := streamed{legID: legID}
	event := ls.PlanLeg
	if ls.Role != study.RoleLeg {
		event = ls.Label
	}
	r.legStart = e.now()
	r.progress.Current, r.progress.LegTest, r.progress.LegTests = event, 0, expected
	r.emit(study.Event{Kind: study.EventLegStarted, Leg: event, LegID: legID, Role: ls.Role, Attempt: ls.Attempt, Argv: ls.Argv})

	wctx := context.WithoutCancel(ctx)
	q := e.startQueue(ctx, runner.QueueSpec{Legs: []runner.LegSpec{spec}, Canary: cs})
	seqOf := map[int]int64{}
	var n int64
	var addErr error
	for ev := range q.Events() {
		switch ev.Type {
		case runner.EventSample:
			if ev.Leg != spec.ID {
				continue // the canary's rows are recorded with the canary's own leg
			}
			if addErr == nil {
				addErr = sink.AddBench(ev.Sample.Result)
			}
			seqOf[ev.Sample.Row] = n
			n++
			r.progress.LegTest = int(n)
			r.emit(study.Event{Kind: study.EventSample, Leg: event, LegID: legID, Sample: ev.Sample})
		case runner.EventProgress:
			if ev.Leg == spec.ID && ev.Progress != nil {
				r.progress.LegTest = ev.Progress.Done
				if ev.Progress.Total > 0 {
					r.progress.LegTests = ev.Progress.Total
				}
				r.emit(study.Event{Kind: study.EventLegProgress, Leg: event, LegID: legID, LegProgress: ev.Progress})
			}
		case runner.EventFlagged:
			if ev.Leg == spec.ID && ev.Flagged != nil {
				f := ev.Flagged
				if err := e.Rec.RecordGate(wctx, study.GateRecord{StudyID: l.St.ID, LegID: legID, Name: "cv:" + f.Test, Code: "cv_above_limit",
					Observed: f.Value, Limit: f.Limit, Detail: f}); err != nil && addErr == nil {
					addErr = err
				}
				r.emit(study.Event{Kind: study.EventFlagged, Leg: event, LegID: legID, Flagged: f})
			}
		case runner.EventLine:
			if ev.Line != nil {
				label := event
				if ev.Leg != spec.ID {
					label = ev.Leg // the canary's output
				}
				r.emit(study.Event{Kind: study.EventLine, Leg: label, LegID: legID, Line: ev.Line})
			}
		case runner.EventCanary:
			st.canary = ev.Canary
		case runner.EventQueueHalted:
			st.halted = ev.Queue
		}
	}
	st.results = q.Results()
	if len(st.results) == 0 {
		return st, fmt.Errorf("leg %s: the runner returned no result", ls.Label)
	}
	res := st.results[0]
	status := make([]string, n)
	for i := range status {
		status[i] = string(runner.RowDiscarded) // a row the result does not list never counts
	}
	for _, row := range res.Rows {
		if s, ok := seqOf[row.Sample.Row]; ok {
			status[s] = string(row.Status)
		}
	}
	st.out = study.LegOutcome{Class: string(res.Exit.Class), Reason: res.Exit.Reason, Rows: int(n), Expected: expected, Duration: res.Exit.Duration}
	for _, s := range status {
		switch runner.RowStatus(s) {
		case runner.RowResult:
			st.out.Results++
		case runner.RowFlagged:
			st.out.Flagged++
		default:
			st.out.Discarded++
		}
	}
	if err := e.Rec.FinishLeg(wctx, legID, legEnd(res, status)); err != nil {
		return st, err
	}
	if addErr != nil {
		return st, fmt.Errorf("leg %s: recording its rows: %w", ls.Label, addErr)
	}
	r.progress.Current, r.progress.LegTest, r.progress.LegTests = "", 0, 0
	o := st.out
	r.emit(study.Event{Kind: study.EventLegFinished, Leg: event, LegID: legID, Role: ls.Role, Attempt: ls.Attempt, Outcome: &o})
	return st, nil
}

// runLeg runs one plan leg (and the canary after a crash-class end), then journals the
// verdicts its rows decide.
func (r *run) runLeg(ctx context.Context, lp study.LegPlan) (legRun, error) {
	e, l := r.e, r.l
	attempt := r.attempts[lp.ID] + 1
	r.attempts[lp.ID] = attempt
	label := lp.ID
	if attempt > 1 {
		label = fmt.Sprintf("%s (attempt %d)", lp.ID, attempt)
	}
	spec := runner.LegSpec{ID: lp.ID, Bench: e.Bench, Args: lp.Args, CVGate: r.gate()}
	var artefact int64
	if len(lp.Models) == 1 {
		artefact = r.artefacts[lp.Models[0]]
	}
	detail := map[string]any{"plan_sha256": l.St.PlanSHA256, "expected_rows": lp.ExpectedRows}
	if lp.Repeat != "" {
		detail["repeat"], detail["of"] = lp.Repeat, lp.Of
	}
	var cs *runner.CanarySpec
	if l.Plan.Canary != nil {
		cs = &runner.CanarySpec{Leg: r.canaryLeg("canary after " + label), Baseline: r.baseline, MaxDrop: l.Plan.Canary.MaxDrop}
	}
	st, err := r.stream(ctx, spec, study.LegStart{StudyID: l.St.ID, Label: label, Kind: "bench", PlanLeg: lp.ID, Role: study.RoleLeg,
		Attempt: attempt, Conditions: lp.Conditions, MachineID: r.machineID, BuildID: r.buildID, ArtefactID: artefact,
		Detail: detail}, cs, lp.ExpectedRows)
	if err != nil {
		return legRun{}, err
	}
	delete(l.Reopened, lp.ID) // a forced attempt ended: the leg is final again if it failed again
	if st.results[0].Exit.Class != runner.ClassStoppedByUser {
		r.done[lp.ID] = true
		r.progress.LegsDone++
		r.legsRun++
		r.legTime += e.now().Sub(r.legStart)
	}
	if len(st.results) > 1 {
		cl := "canary after " + label
		cid, err := r.recordAfterTheFact(ctx, st.results[1], cl, lp.ID, study.RoleCanary, attempt)
		if err != nil {
			return legRun{}, err
		}
		r.emit(study.Event{Kind: study.EventCanary, Leg: cl, LegID: cid, Role: study.RoleCanary, Canary: st.canary})
	}
	if err := r.updateVerdicts(context.WithoutCancel(ctx)); err != nil {
		return legRun{}, err
	}
	r.emit(study.Event{Kind: study.EventProgress})
	return legRun{halted: st.halted}, nil
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
