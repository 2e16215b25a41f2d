package caprun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/quality"
	"sparkbench/runner/server"
)

// RunSpec is a capacity (or concurrency) run: every server lifetime of the plan's schedule,
// then the assembly.
type RunSpec struct {
	PlanFile string // the plan; its bytes are copied into the run folder
	// Plan is the plan as loaded from PlanFile (Defaults are applied by the run).
	Plan   *capacity.Plan
	Server string // llama-server
	// OutDir is the run folder: created, and refused when it exists and is not empty, unless
	// Resume is set.
	OutDir string
	// Resume continues the run in OutDir, an existing run folder of this plan (its plan.json
	// hashes to the plan's SHA-256) written by a run that was stopped, halted or killed: the
	// server lifetimes and quality guards its run.json records as finished are kept (not run
	// again), the rest run, each pass keeps its clock origin (run.json's pass_origins), and
	// the whole folder is assembled. A folder that cannot be resumed is refused with a
	// *ResumeError before anything runs.
	Resume bool
	Env    []string
	// Build, when known, is recorded in run.json (version line, binary SHA-256s).
	Build *llamacpp.Build
	// StartTimeout bounds each server start (to /health 200); RequestTimeout each request;
	// Grace the SIGTERM → SIGKILL wait. Zero: the server and loadgen packages' defaults.
	StartTimeout, RequestTimeout, Grace time.Duration
	// Hash verifies the model and prompt-plan files against the plan before anything runs;
	// nil skips the check (tests).
	Hash study.HashFunc
	// QualityCases is the quality guard's case list (runner/quality), required exactly when
	// the plan has a quality gate: after the load passes, the cases run one at a time on a
	// fresh server per (candidate, P). The plan format has no field for it yet, so its
	// SHA-256 is recorded in run.json, not in the plan's identity.
	QualityCases string
}

// SchemaRun identifies run.json.
const SchemaRun = "sparkbench.capacity-run/v1"

// Run is a capacity run in progress: a producer with a channel of events, an idempotent Stop.
type Run struct {
	spec   RunSpec
	q      *runQueue
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	report *capacity.RunReport
	err    error
	start  time.Time
	prog   capacity.RunProgress
	mu     sync.Mutex
	// droppedLines counts server log lines not sent since the last one sent (under mu).
	droppedLines int
}

// StartRun checks the plan and the folder, then runs every server lifetime of the schedule in
// its own goroutine. Consume Events until it is closed, then Wait for the report.
func StartRun(ctx context.Context, spec RunSpec) *Run {
	r := &Run{spec: spec, q: newRunQueue(), done: make(chan struct{}), start: time.Now()}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(r.done)
		defer r.q.close()
		defer r.cancel(nil)
		r.report, r.err = r.run()
		ev := capacity.RunEvent{Type: capacity.RunDone}
		if r.err != nil {
			ev.Error = clipText(r.err.Error())
		}
		r.emit(ev)
	}()
	return r
}

// Events is the run's channel; it is closed after run_done. Events are never dropped.
func (r *Run) Events() <-chan capacity.RunEvent { return r.q.out }

// Stop ends the run: requests in flight are cancelled, the server is stopped, nothing is
// assembled. Idempotent.
func (r *Run) Stop() { r.cancel(capacity.ErrRunStopped) }

// Wait returns the report once the run is over. The error says why the run failed (a refused
// plan or folder, an I/O error, Stop, an assembly refusal); the report is non-nil whenever the
// run got as far as creating its folder.
func (r *Run) Wait() (*capacity.RunReport, error) {
	<-r.done
	return r.report, r.err
}

// maxQueuedLines bounds the server_line events waiting for a slow consumer; lines beyond it
// are counted, not queued (the server log file has them all).
const maxQueuedLines = 1000

// emitLine sends one server log line as a server_line event, unless the queue is backed up.
func (r *Run) emitLine(lifetime, text string) {
	r.q.mu.Lock()
	backed := len(r.q.items) >= maxQueuedLines
	r.q.mu.Unlock()
	r.mu.Lock()
	if backed {
		r.droppedLines++
		r.mu.Unlock()
		return
	}
	dropped := r.droppedLines
	r.droppedLines = 0
	r.mu.Unlock()
	r.emit(capacity.RunEvent{Type: capacity.ServerLine, Lifetime: lifetime, Line: text, Dropped: dropped})
}

// logLines is the server log's writer: every line goes to the file and, as an event, to the
// run's consumer. The server writes one line with its "\n" per call, from one goroutine.
type logLines struct {
	f        io.Writer
	r        *Run
	lifetime string
}

func (l logLines) Write(p []byte) (int, error) {
	n, err := l.f.Write(p)
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.r.emitLine(l.lifetime, line)
	}
	return n, err
}

func (r *Run) emit(ev capacity.RunEvent) {
	r.mu.Lock()
	ev.T = time.Since(r.start)
	r.prog.Elapsed = ev.T
	ev.Progress = r.prog
	r.mu.Unlock()
	r.q.push(ev)
}

// advance updates the counts and the ETA: the mean time per cell this run measured times the
// cells left (server starts included, as they recur with the lifetimes).
func (r *Run) advance(cells, lifetimes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prog.CellsDone += cells
	r.prog.LifetimesDone += lifetimes
	el := time.Since(r.start)
	if n := r.prog.CellsDone - r.prog.CellsKept; n > 0 {
		per := el / time.Duration(n)
		r.prog.ETA = per * time.Duration(r.prog.CellsTotal-r.prog.CellsDone)
	}
}

func (r *Run) run() (*capacity.RunReport, error) {
	spec := r.spec
	if spec.Plan == nil || spec.PlanFile == "" {
		return nil, capacity.Refuse("no plan")
	}
	if spec.Server == "" {
		return nil, capacity.Refuse("no llama-server binary")
	}
	planBytes, err := os.ReadFile(spec.PlanFile)
	if err != nil {
		return nil, capacity.Refuse("read plan: %v", err)
	}
	p, err := capacity.ClonePlan(spec.Plan)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	planDir, _ := filepath.Abs(filepath.Dir(spec.PlanFile))
	if errs := study.Errors(capacity.Validate(p, capacity.ValidateOptions{PlanDir: planDir, Hash: spec.Hash})); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.String()
		}
		return nil, capacity.Refuse("plan refused: %s", strings.Join(msgs, "; "))
	}
	var cases *quality.Cases
	var casesSHA string
	if q := p.QualityCases; q != nil && spec.QualityCases == "" {
		spec.QualityCases = study.ResolvePath(planDir, q.Path)
	}
	switch {
	case p.Limits.QualityGated() && spec.QualityCases == "":
		return nil, capacity.Refuse("the plan has a quality gate (limits.quality_floor / quality_retention_min): give the guard's case list (--quality-cases FILE, format sparkbench.quality-cases/v1, docs/server.md)")
	case !p.Limits.QualityGated() && spec.QualityCases != "":
		return nil, capacity.Refuse("a quality case list was given but the plan has no quality gate (limits.quality_floor / quality_retention_min)")
	case spec.QualityCases != "":
		if cases, casesSHA, err = quality.Load(spec.QualityCases); err != nil {
			return nil, capacity.Refuse("%v", err)
		}
		if q := p.QualityCases; q != nil && casesSHA != q.SHA256 {
			return nil, capacity.Refuse("the quality case list %s hashes to %s, the plan freezes %s: it changed since the plan was written; restore it or write a new plan", spec.QualityCases, casesSHA, q.SHA256)
		}
	}
	prompts, promptSHA, err := loadgen.LoadPromptPlan(study.ResolvePath(planDir, p.PromptPlan.Path), p.PromptPlan.SHA256)
	if err != nil {
		return nil, capacity.Refuse("%v", err)
	}
	sha, _, err := p.SHA256()
	if err != nil {
		return nil, err
	}
	machine := (&runner.Fingerprinter{}).Machine()
	machine.Hostname = "" // run.json travels in receipt bundles
	var (
		prev   *capacity.RunReport
		unlock func()
	)
	if spec.Resume {
		if prev, unlock, err = openResume(spec.OutDir, sha); err != nil {
			return nil, err
		}
	} else {
		if err := makeRunDir(spec.OutDir); err != nil {
			return nil, capacity.Refuse("%v", err)
		}
		if unlock, err = lockRunDir(spec.OutDir); err != nil {
			return nil, capacity.Refuse("%v", err)
		}
	}
	defer unlock()
	rep := &capacity.RunReport{Schema: SchemaRun, Plan: capacity.RunPlanFile, PlanSHA256: sha, PromptPlan: promptSHA, Build: spec.Build, Machine: &machine,
		Started: r.start.UTC(), OutDir: spec.OutDir, Lifetimes: []capacity.RunLifetime{}, QualityCases: casesSHA, PassOrigins: map[string]time.Time{}}
	sched := capacity.Schedule(p, planDir)
	guards := guardSchedule(p, sched)
	if cases == nil {
		guards = nil
	}
	var kept *resumeState
	var before time.Duration // time the folder's earlier runs spent running
	if spec.Resume {
		if kept, err = planResume(spec.OutDir, prev, rep, sched, guards, spec.Server); err != nil {
			return nil, err
		}
		kept.info.At = r.start.UTC()
		if prev != nil {
			rep.Started, before = prev.Started, prev.Duration
			rep.Resumes = append(rep.Resumes, prev.Resumes...)
			for pass, t := range prev.PassOrigins {
				if kept.passUsed(pass) {
					rep.PassOrigins[pass] = t
				}
			}
		}
		rep.Resumes = append(rep.Resumes, kept.info)
	} else if err := os.WriteFile(filepath.Join(spec.OutDir, capacity.RunPlanFile), planBytes, 0o644); err != nil {
		return rep, err
	}
	// run.json is written now, after every lifetime and guard, and at the end.
	// What finished or was cut, by key (the kept ones from the start): run.json lists them in
	// schedule order, so even the first checkpoint of a resumed run keeps what it kept.
	lifetimes, guardsRun := map[string]capacity.RunLifetime{}, map[string]capacity.RunGuard{}
	for _, lt := range sched {
		if rl, ok := kept.lifetime(lt.Key); ok {
			lifetimes[rl.Key] = rl
		}
	}
	for _, g := range guards {
		if rg, ok := kept.guard(g.key); ok {
			guardsRun[rg.Key] = rg
		}
	}
	list := func() {
		rep.Lifetimes, rep.Guards = []capacity.RunLifetime{}, nil
		for _, lt := range sched {
			if rl, ok := lifetimes[lt.Key.String()]; ok {
				rep.Lifetimes = append(rep.Lifetimes, rl)
			}
		}
		for _, g := range guards {
			if rg, ok := guardsRun[g.key.String()]; ok {
				rep.Guards = append(rep.Guards, rg)
			}
		}
	}
	checkpoint := func() error {
		list()
		rep.Duration = before + time.Since(r.start)
		rep.InProgress = true
		defer func() { rep.InProgress = false }()
		data, err := canon.Marshal(rep)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(spec.OutDir, capacity.RunManifestFile), append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", capacity.RunManifestFile, err)
		}
		return nil
	}
	if err := checkpoint(); err != nil {
		return rep, err
	}
	r.mu.Lock()
	r.prog = capacity.RunProgress{LifetimesTotal: len(sched), ETA: -1}
	for _, l := range sched {
		r.prog.CellsTotal += len(l.Clients)
		if _, ok := kept.lifetime(l.Key); ok {
			r.prog.LifetimesKept++
			r.prog.CellsKept += len(l.Clients)
		}
	}
	r.prog.LifetimesDone, r.prog.CellsDone = r.prog.LifetimesKept, r.prog.CellsKept
	if cases != nil {
		r.prog.GuardsTotal = len(guards)
		r.prog.GuardsDone = len(kept.guardKeys())
	}
	r.mu.Unlock()
	started := capacity.RunEvent{Type: capacity.RunStarted}
	if kept != nil {
		info := kept.info
		started.Resume = &info
	}
	r.emit(started)

	passStart := map[string]time.Time{}
	for pass, t := range rep.PassOrigins {
		passStart[pass] = passClock(t)
	}
	var runErr error
	for _, lt := range sched {
		if _, ok := kept.lifetime(lt.Key); ok {
			continue // finished before: kept
		}
		if runErr != nil {
			continue
		}
		if r.ctx.Err() != nil {
			runErr = context.Cause(r.ctx)
			continue
		}
		if _, ok := passStart[lt.Key.Pass]; !ok {
			now := time.Now()
			passStart[lt.Key.Pass] = now // one monotonic clock per pass
			rep.PassOrigins[lt.Key.Pass] = now.UTC()
		}
		cand, _ := p.Candidate(lt.Key.Candidate)
		rl, err := r.lifetime(p, sha, cand, lt, prompts, passStart[lt.Key.Pass], rep.PassOrigins[lt.Key.Pass])
		if err != nil {
			rl.Interrupted = clipText(err.Error())
		}
		lifetimes[rl.Key] = rl
		if err == nil {
			err = checkpoint()
		}
		if err != nil {
			runErr = err
		}
	}
	for _, g := range guards {
		if _, ok := kept.guard(g.key); ok {
			continue
		}
		if runErr == nil && r.ctx.Err() != nil {
			runErr = context.Cause(r.ctx) // stopped between guards
		}
		if runErr != nil {
			continue
		}
		rg, err := r.guard(p, g, cases) // an error when the stop cut it: run again on resume
		if err != nil {
			rg.Interrupted = clipText(err.Error())
		}
		guardsRun[rg.Key] = rg
		if err == nil {
			err = checkpoint()
		}
		if err != nil {
			runErr = err
		}
	}
	if runErr == nil && r.ctx.Err() != nil {
		runErr = context.Cause(r.ctx)
	}
	list()
	var incomplete *capacity.IncompleteError
	if runErr == nil {
		for _, rl := range rep.Lifetimes {
			if rl.NoResults != "" {
				if incomplete == nil {
					incomplete = &capacity.IncompleteError{Total: len(sched)}
				}
				incomplete.Lifetimes = append(incomplete.Lifetimes, capacity.IncompleteLifetime{Key: rl.Key, Class: rl.Server.Class, Reason: rl.NoResults})
			}
		}
	}
	if runErr == nil {
		rep.AssembleArgs = assembleArgs(spec.OutDir, sched, guards)
		res, data, err := assembleRun(spec.OutDir, sched, guards)
		if err != nil && incomplete != nil {
			// the lifetimes without results explain it (a server that never started leaves
			// no RSS and no load block): the run is incomplete, not an assembly failure
			runErr = incomplete
		} else if err != nil {
			runErr = fmt.Errorf("assemble: %w", err)
			r.emit(capacity.RunEvent{Type: capacity.AssemblyFailed, Error: clipText(err.Error())})
		} else if err := atomicfile.WriteFile(filepath.Join(spec.OutDir, capacity.RunStudyFile), data, 0o644); err != nil {
			runErr = fmt.Errorf("write %s: %w", capacity.RunStudyFile, err)
		} else {
			rep.Result, rep.Study, rep.StudySHA = &res, capacity.RunStudyFile, canon.SHA256Hex(data)
			r.emit(capacity.RunEvent{Type: capacity.Assembled, Study: filepath.Join(spec.OutDir, capacity.RunStudyFile)})
			if incomplete != nil {
				incomplete.Assembled = true
				runErr = incomplete
			}
		}
	}
	if incomplete != nil {
		rep.Incomplete = incomplete.Lifetimes
	}
	rep.Duration = before + time.Since(r.start)
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	if data, err := canon.Marshal(rep); err == nil {
		if werr := atomicfile.WriteFile(filepath.Join(spec.OutDir, capacity.RunManifestFile), append(data, '\n'), 0o644); werr != nil && runErr == nil {
			runErr = werr
		}
	}
	return rep, runErr
}

func makeRunDir(dir string) error {
	if dir == "" {
		return errors.New("no output folder")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("output folder %s exists and is not empty; pick a new --out", dir)
	}
	return os.MkdirAll(dir, 0o755)
}

func lifetimeDir(k capacity.LifetimeKey) string {
	return filepath.Join("runs", k.Pass, k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// lifetime runs one server lifetime and writes its raw files. Only an I/O failure (or Stop)
// is an error: a server that fails yields request records that say so, and the run goes on.
// A lifetime whose client levels the run's end cut short still ends with lifetime_done (its
// Error says so) and returns the run's end as its error: it did not finish. origin is the
// pass's clock; wall the same origin as a wall-clock time.
func (r *Run) lifetime(p *capacity.Plan, planSHA string, cand capacity.Candidate, lt capacity.Lifetime, prompts *loadgen.PromptPlan, origin, wall time.Time) (capacity.RunLifetime, error) {
	spec := r.spec
	rel := lifetimeDir(lt.Key)
	dir := filepath.Join(spec.OutDir, rel)
	rl := capacity.RunLifetime{Key: lt.Key.String(), Dir: rel, Cells: []capacity.RunCell{}, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rl, err
	}
	r.emit(capacity.RunEvent{Type: capacity.LifetimeStarted, Lifetime: rl.Key, Origin: wall})
	logf, err := os.Create(filepath.Join(dir, capacity.RunServerLogFile))
	if err != nil {
		return rl, err
	}
	defer logf.Close()
	reqf, err := os.Create(filepath.Join(dir, capacity.RunRequestsFile))
	if err != nil {
		return rl, err
	}
	defer reqf.Close()
	rw, err := capacity.NewRequestWriter(reqf, capacity.RequestHeader{Pass: lt.Key.Pass, Candidate: lt.Key.Candidate, Slots: lt.Key.Slots, PlanSHA256: planSHA})
	if err != nil {
		return rl, err
	}
	rl.Files["requests"] = filepath.Join(rel, capacity.RunRequestsFile)
	rl.Files["server_log"] = filepath.Join(rel, capacity.RunServerLogFile)

	srv, serr := server.Start(r.ctx, server.Spec{Binary: spec.Server, Args: lt.Args, Env: spec.Env, Log: logLines{logf, r, rl.Key},
		StartTimeout: spec.StartTimeout, Grace: spec.Grace, Markers: server.Markers{Must: cand.Markers.Must, MustNot: cand.Markers.MustNot}})
	var (
		rss      server.RSS
		evidence server.Evidence
		gone     string // why the server is not there to serve (empty while it is)
	)
	if serr != nil {
		var se *server.StartError
		if !errors.As(serr, &se) {
			return rl, serr
		}
		rl.Server = capacity.RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
		if n := len(se.Attempts); n > 0 {
			rl.Server.Argv, rl.Server.Port, rl.Server.Pid = se.Attempts[n-1].Argv, se.Attempts[n-1].Port, se.Attempts[n-1].Pid
		}
		if se.Exit.PeakRSS > 0 {
			rss = server.RSS{KiB: se.Exit.PeakRSS / 1024, Source: "wait4 rusage"}
		}
		evidence = se.Evidence
		gone = "llama-server did not become healthy: " + se.Reason
		r.emit(capacity.RunEvent{Type: capacity.ServerFailed, Lifetime: rl.Key, Server: &rl.Server, Error: clipText(serr.Error())})
	} else {
		rl.Server = capacity.RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts()}
		r.emit(capacity.RunEvent{Type: capacity.ServerReady, Lifetime: rl.Key, Server: &rl.Server})
	}

	next := 1 // prompt numbers: unique within the lifetime
	per := p.WarmupCount() + p.Measured
	for _, c := range lt.Clients {
		if r.ctx.Err() != nil {
			break
		}
		r.emit(capacity.RunEvent{Type: capacity.CellStarted, Lifetime: rl.Key, Clients: c})
		if gone == "" && srv != nil && !srv.Alive() {
			gone = serverGone(srv)
		}
		base := next
		cfg := loadgen.Config{Clients: c, Warmups: p.WarmupCount(), Measured: p.Measured, NPredict: p.NPredict,
			Seed: p.Seed, Prompt: func(i int) string { return prompts.Prompt(base + i) }, Timeout: spec.RequestTimeout,
			Origin: origin}
		next += per
		var cell capacity.RunCell
		var werr error
		if gone != "" {
			cell, werr = r.notSent(rw, rl.Key, c, p, origin, gone)
		} else {
			cell, werr = r.cell(rw, rl.Key, srv, cfg, p.NPredict)
			if !srv.Alive() {
				gone = serverGone(srv)
			}
		}
		if werr != nil {
			if srv != nil {
				srv.Stop(context.Background())
			}
			return rl, werr
		}
		rl.Cells = append(rl.Cells, cell)
		r.advance(1, 0)
		r.emit(capacity.RunEvent{Type: capacity.CellDone, Lifetime: rl.Key, Clients: c, Cell: &cell})
	}
	// Every client level ran to its end unless the run was stopped by now: a stop after this
	// point leaves the measurements whole.
	cut := r.ctx.Err() != nil
	if srv != nil {
		st := srv.Stop(context.Background())
		rss, evidence = st.RSS, st.Evidence
		rl.Server.Class, rl.Server.Reason = string(st.Exit.Class), st.Exit.Reason
		rl.Server.Unexpect, rl.Server.Escalated = st.Unexpected, st.Exit.Escalated
		if err := srv.LogError(); err != nil {
			return rl, fmt.Errorf("write %s: %w", filepath.Join(rel, capacity.RunServerLogFile), err)
		}
	}
	if rss.KiB > 0 {
		rl.Server.RSS = &rss
		b, _ := canon.Marshal(capacity.RSSRecord{Schema: capacity.SchemaRSS, VmHWMKiB: rss.KiB, Source: rss.Source})
		if err := os.WriteFile(filepath.Join(dir, capacity.RunRSSFile), append(b, '\n'), 0o644); err != nil {
			return rl, err
		}
		rl.Files["rss"] = filepath.Join(rel, capacity.RunRSSFile)
	}
	rl.Server.Evidence = &evidence
	eb, _ := canon.Marshal(struct {
		Key      string          `json:"key"`
		Argv     []string        `json:"argv"`
		Evidence server.Evidence `json:"evidence"`
	}{rl.Key, rl.Server.Argv, evidence})
	if err := os.WriteFile(filepath.Join(dir, capacity.RunEvidenceFile), append(eb, '\n'), 0o644); err != nil {
		return rl, err
	}
	rl.Files["evidence"] = filepath.Join(rel, capacity.RunEvidenceFile)
	if err := reqf.Sync(); err != nil {
		return rl, err
	}
	if !cut && !hasResults(rl) {
		rl.NoResults = noResultsReason(rl, gone)
	}
	r.advance(0, 1)
	done := capacity.RunEvent{Type: capacity.LifetimeDone, Lifetime: rl.Key, Server: &rl.Server, NoResults: rl.NoResults}
	if cut {
		done.Error = clipText("cut short: " + context.Cause(r.ctx).Error())
	}
	r.emit(done)
	if cut {
		return rl, context.Cause(r.ctx)
	}
	return rl, nil
}

// hasResults says whether any measured request of the lifetime completed.
func hasResults(rl capacity.RunLifetime) bool {
	for _, c := range rl.Cells {
		if c.Completed > 0 {
			return true
		}
	}
	return false
}

// noResultsReason says why a lifetime ended without results: why its server was not there
// (gone), else its first failed request.
func noResultsReason(rl capacity.RunLifetime, gone string) string {
	if gone != "" {
		return clipText(gone)
	}
	for _, c := range rl.Cells {
		if c.FirstErr != "" {
			return clipText("no measured request completed; the first failed: " + c.FirstErr)
		}
	}
	return "no measured request completed"
}

// serverGone waits (bounded) for a dead server's exit status and says how it ended.
func serverGone(srv *server.Server) string {
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
	}
	if x, ok := srv.Exited(); ok {
		return exitText(x.Class, x.Reason)
	}
	return "llama-server exited"
}

func exitText[C ~string](class C, reason string) string {
	s := "llama-server exited: " + string(class)
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// cell runs one client level against a live server. A server that dies during the cell cuts
// its requests short with that reason. Request events go out as requests end; the file gets
// the cell's records at its end, where a failed record also names the server's exit.
func (r *Run) cell(rw *capacity.RequestWriter, key string, srv *server.Server, cfg loadgen.Config, nPredict int) (capacity.RunCell, error) {
	cfg.URL = srv.URL()
	cfg.Transport = loadgen.NewTransport(cfg.Clients)
	srv.Track(cfg.Transport)
	defer cfg.Transport.CloseIdleConnections()
	actx, acancel := context.WithCancelCause(r.ctx)
	defer acancel(nil)
	go func() {
		select {
		case <-srv.Done():
			x, _ := srv.Exited()
			acancel(errors.New(exitText(x.Class, x.Reason)))
		case <-actx.Done():
		}
	}()
	a := loadgen.Start(actx, cfg)
	var recs []capacity.RequestRecord
	var werr error
	retries := 0
	for res := range a.Results() {
		rec := requestRecord(res)
		recs = append(recs, rec)
		retries += res.Retries
		r.emit(capacity.RunEvent{Type: capacity.RequestDone, Lifetime: key, Clients: cfg.Clients, Request: &rec})
	}
	// A request cut by a lost connection usually means the server died; its exit may not have
	// been observed yet on a loaded machine (the pty drains, then the wait returns): give it a
	// bounded moment before deciding the server is alive.
	if srv.Alive() && slices.ContainsFunc(recs, func(r capacity.RequestRecord) bool { return connectionLost(r.Error) }) {
		select {
		case <-srv.Done():
		case <-time.After(3 * time.Second):
		}
	}
	// A dead server explains every failure of the cell: say so in each failed record.
	if !srv.Alive() {
		why := serverGone(srv)
		for i := range recs {
			if recs[i].Error != "" && !strings.Contains(recs[i].Error, "llama-server exited") {
				recs[i].Error += "; " + why
			}
		}
	}
	cell := capacity.RunCell{Clients: cfg.Clients, Retries: retries}
	for i := range recs {
		if werr = rw.Write(recs[i]); werr != nil {
			break
		}
	}
	summarise(&cell, recs, nPredict)
	return cell, werr
}

// connectionLost says whether a request error is the connection failing under it (refused,
// reset, closed mid-stream) rather than an HTTP or protocol error.
func connectionLost(e string) bool {
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "EOF"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// notSent writes the records of a client level the server was not there to serve.
func (r *Run) notSent(rw *capacity.RequestWriter, key string, c int, p *capacity.Plan, origin time.Time, why string) (capacity.RunCell, error) {
	now := msSince(time.Since(origin))
	var recs []capacity.RequestRecord
	for i := 0; i < p.WarmupCount()+p.Measured; i++ {
		rec := capacity.RequestRecord{Clients: c, Phase: capacity.PhaseWarmup, Seq: i, SendMs: now, EndMs: now, Error: "not sent: " + why}
		if i >= p.WarmupCount() {
			rec.Phase, rec.Seq = capacity.PhaseMeasured, i-p.WarmupCount()
		}
		recs = append(recs, rec)
	}
	cell := capacity.RunCell{Clients: c}
	for i := range recs {
		if err := rw.Write(recs[i]); err != nil {
			return cell, err
		}
		rec := recs[i]
		r.emit(capacity.RunEvent{Type: capacity.RequestDone, Lifetime: key, Clients: c, Request: &rec})
	}
	summarise(&cell, recs, p.NPredict)
	return cell, nil
}

func summarise(cell *capacity.RunCell, recs []capacity.RequestRecord, nPredict int) {
	var measured []capacity.RequestRecord
	for _, rec := range recs {
		if rec.Phase != capacity.PhaseMeasured {
			continue
		}
		measured = append(measured, rec)
		cell.Attempted++
		if rec.Completed(nPredict) {
			cell.Completed++
		} else if cell.FirstErr == "" {
			cell.FirstErr = rec.Error
			if cell.FirstErr == "" {
				cell.FirstErr = fmt.Sprintf("HTTP %d, %d of %d tokens", rec.HTTPStatus, rec.Tokens, nPredict)
			}
		}
	}
	m := capacity.CellMetrics("", measured, nPredict)
	if m.GenerationRate != nil {
		cell.Rate = *m.GenerationRate
	}
}

func msSince(d time.Duration) float64 { return float64(d) / 1e6 }

// requestRecord turns a load generator result into a request record the reader accepts.
func requestRecord(res loadgen.Result) capacity.RequestRecord {
	rec := capacity.RequestRecord{Clients: res.Clients, Phase: res.Phase, Seq: res.Seq, SendMs: msSince(res.Send),
		EndMs: msSince(res.End), Tokens: res.Tokens, HTTPStatus: res.HTTPStatus, Error: res.Error}
	if rec.EndMs < rec.SendMs {
		rec.EndMs = rec.SendMs
	}
	if res.HasFirstToken {
		ft := math.Min(math.Max(msSince(res.FirstToken), rec.SendMs), rec.EndMs)
		rec.FirstTokenMs = &ft
		if rec.Tokens >= 2 && ft == rec.EndMs {
			rec.EndMs = math.Nextafter(ft, math.Inf(1)) // the records refuse an undefined ITL
		}
	} else if rec.Tokens > 0 {
		// Tokens the server counted but never showed (no content event): unknown to the client.
		rec.Tokens = 0
		if rec.Error == "" {
			rec.Error = "no event carried generated content"
		}
	}
	if t := res.Timings; t != nil {
		rec.Timings = &capacity.Timings{PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs}
	}
	if res.HTTPStatus != 0 && (res.HTTPStatus < 100 || res.HTTPStatus > 599) {
		rec.HTTPStatus = 0
	}
	return rec
}

// assembleArgs are the `capacity assemble` arguments that reproduce study.json.
func assembleArgs(out string, sched []capacity.Lifetime, guards []guardRun) []string {
	args := []string{"--plan", filepath.Join(out, capacity.RunPlanFile)}
	for _, lt := range sched {
		dir := filepath.Join(out, lifetimeDir(lt.Key))
		k := lt.Key.String()
		args = append(args, capacity.FlagRequests, k+"="+filepath.Join(dir, capacity.RunRequestsFile),
			capacity.FlagRSS, k+"="+filepath.Join(dir, capacity.RunRSSFile), capacity.FlagServerLog, k+"="+filepath.Join(dir, capacity.RunServerLogFile))
	}
	for _, g := range guards {
		args = append(args, capacity.FlagQuality, g.key.String()+"="+filepath.Join(out, guardDir(g.key), capacity.RunQualityFile))
	}
	return append(args, "--output", filepath.Join(out, capacity.RunStudyFile))
}

// assembleRun reads the run folder's files back and assembles them exactly as `capacity
// assemble` would.
func assembleRun(out string, sched []capacity.Lifetime, guards []guardRun) (capacity.Result, []byte, error) {
	plan, err := capacity.Load(filepath.Join(out, capacity.RunPlanFile))
	if err != nil {
		return capacity.Result{}, nil, err
	}
	in := capacity.Inputs{Requests: map[capacity.LifetimeKey]capacity.InputFile{}, RSS: map[capacity.LifetimeKey]capacity.InputFile{}, ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{},
		Quality: map[capacity.QualityKey]capacity.InputFile{}}
	for _, g := range guards {
		path := filepath.Join(out, guardDir(g.key), capacity.RunQualityFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return capacity.Result{}, nil, &capacity.InputError{Flag: capacity.FlagQuality, Key: g.key.String(), Err: err}
		}
		in.Quality[g.key] = capacity.InputFile{Name: path, Data: data}
	}
	for _, lt := range sched {
		dir := filepath.Join(out, lifetimeDir(lt.Key))
		for _, f := range []struct {
			flag  string
			name  string
			files map[capacity.LifetimeKey]capacity.InputFile
		}{{capacity.FlagRequests, capacity.RunRequestsFile, in.Requests}, {capacity.FlagRSS, capacity.RunRSSFile, in.RSS}, {capacity.FlagServerLog, capacity.RunServerLogFile, in.ServerLogs}} {
			path := filepath.Join(dir, f.name)
			data, err := os.ReadFile(path)
			if err != nil {
				return capacity.Result{}, nil, &capacity.InputError{Flag: f.flag, Key: lt.Key.String(), Err: err}
			}
			f.files[lt.Key] = capacity.InputFile{Name: path, Data: data}
		}
	}
	res, err := capacity.Assemble(plan, in)
	if err != nil {
		return capacity.Result{}, nil, err
	}
	data, err := res.Marshal()
	return res, data, err
}

func clipText(s string) string {
	if len(s) > capacity.MaxEventErrorLen {
		return s[:capacity.MaxEventErrorLen] + "…"
	}
	return s
}

// runQueue is an unbounded FIFO in front of the events channel: the run never waits for its
// consumer, and no event is dropped.
type runQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []capacity.RunEvent
	closed bool
	out    chan capacity.RunEvent
}

func newRunQueue() *runQueue {
	q := &runQueue{out: make(chan capacity.RunEvent)}
	q.cond = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

func (q *runQueue) push(ev capacity.RunEvent) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *runQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *runQueue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.items) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.items[0]
		q.items[0] = capacity.RunEvent{}
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}

// guardRun is one quality-guard server: a candidate at a slot count, with the arguments its
// load lifetimes had.
type guardRun struct {
	key  capacity.QualityKey
	args []string
}

// guardSchedule lists the guard runs: candidates and slots in plan order.
func guardSchedule(p *capacity.Plan, sched []capacity.Lifetime) []guardRun {
	args := map[capacity.QualityKey][]string{}
	for _, lt := range sched {
		args[capacity.QualityKey{Candidate: lt.Key.Candidate, Slots: lt.Key.Slots}] = lt.Args
	}
	var out []guardRun
	for _, c := range p.Candidates {
		for _, s := range p.Slots {
			k := capacity.QualityKey{Candidate: c.ID, Slots: s}
			out = append(out, guardRun{k, args[k]})
		}
	}
	return out
}

func guardDir(k capacity.QualityKey) string {
	return filepath.Join("quality", k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// guard runs the quality cases sequentially on a fresh server of one (candidate, P) and writes
// its evidence. A server that does not start fails every case, with the reason.
func (r *Run) guard(p *capacity.Plan, g guardRun, cases *quality.Cases) (capacity.RunGuard, error) {
	spec := r.spec
	rel := guardDir(g.key)
	dir := filepath.Join(spec.OutDir, rel)
	rg := capacity.RunGuard{Key: g.key.String(), Dir: rel, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rg, err
	}
	r.emit(capacity.RunEvent{Type: capacity.GuardStarted, Lifetime: rg.Key})
	logf, err := os.Create(filepath.Join(dir, capacity.RunServerLogFile))
	if err != nil {
		return rg, err
	}
	defer logf.Close()
	rg.Files["server_log"] = filepath.Join(rel, capacity.RunServerLogFile)
	ev := quality.Evidence{Schema: quality.SchemaEvidence, Candidate: g.key.Candidate, Slots: g.key.Slots}
	srv, serr := server.Start(r.ctx, server.Spec{Binary: spec.Server, Args: g.args, Env: spec.Env, Log: logLines{logf, r, rg.Key},
		StartTimeout: spec.StartTimeout, Grace: spec.Grace})
	if serr != nil {
		var se *server.StartError
		if !errors.As(serr, &se) {
			return rg, serr
		}
		rg.Server = capacity.RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
		if r.ctx.Err() != nil {
			return rg, context.Cause(r.ctx) // the stop, not the server: not a failed guard
		}
		for _, k := range cases.Cases {
			ev.Cases = append(ev.Cases, quality.CaseOutcome{ID: k.ID, Outcome: "fail", Matcher: k.Matcher,
				Detail: clipText("not run: llama-server did not become healthy: " + se.Reason)})
		}
	} else {
		rg.Server = capacity.RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts()}
		ev, err = quality.Run(r.ctx, quality.Config{URL: srv.URL(), Candidate: g.key.Candidate, Slots: g.key.Slots,
			Seed: p.Seed, Timeout: spec.RequestTimeout}, cases)
		cut := r.ctx.Err() != nil // the stop came while the cases ran: some may be cut
		st := srv.Stop(context.Background())
		rg.Server.Class, rg.Server.Reason, rg.Server.Unexpect = string(st.Exit.Class), st.Exit.Reason, st.Unexpected
		if st.RSS.KiB > 0 {
			rg.Server.RSS = &st.RSS
		}
		if err != nil {
			return rg, err
		}
		if cut {
			return rg, context.Cause(r.ctx)
		}
	}
	rg.Score, rg.Cases = ev.Score(), len(ev.Cases)
	b, err := canon.Marshal(ev)
	if err != nil {
		return rg, err
	}
	if err := os.WriteFile(filepath.Join(dir, capacity.RunQualityFile), append(b, '\n'), 0o644); err != nil {
		return rg, err
	}
	rg.Files["quality"] = filepath.Join(rel, capacity.RunQualityFile)
	r.mu.Lock()
	r.prog.GuardsDone++
	r.mu.Unlock()
	r.emit(capacity.RunEvent{Type: capacity.GuardDone, Lifetime: rg.Key, Guard: &rg})
	return rg, nil
}
