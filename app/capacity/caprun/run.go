package caprun

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/app/study/rpclife"
	"sparkbench/runner"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/evq"
	"sparkbench/runner/fsread"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/quality"
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
	// Batched is candidate ID -> a llama-batched-bench output file of the same model and
	// build, for the server tax: each is checked before anything runs (capacity.ReadBatched)
	// and copied into the run folder as batched/ID.txt, where the assembly (and a resumed run,
	// and the receipt) finds it.
	Batched map[string]string
	// Telemetry samples each server lifetime and marks its client levels (docs/telemetry.md;
	// nil: none, as before).
	Telemetry energy.SpanHook
	// Host, when set, runs every llama-server on a bench host (Server is then its path there)
	// and measures each lifetime's network path before its load (docs/fleet.md).
	Host *RemoteHost
	// RPCHosts reads the hosts file the plan's rpc_servers name (nil: rpclife.DefaultHosts).
	RPCHosts rpclife.HostsLoader
}

// SchemaRun identifies run.json.
const SchemaRun = "sparkbench.capacity-run/v1"

// Run is a capacity run in progress: a producer with a channel of events, an idempotent Stop.
type Run struct {
	spec   RunSpec
	q      *evq.Queue[capacity.RunEvent]
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	report *capacity.RunReport
	err    error
	start  time.Time
	prog   capacity.RunProgress
	mu     sync.Mutex
	rpc    *rpclife.Topology      // the plan's ggml-rpc-servers while they run (rpc.go)
	models map[string]hashing.Key // each candidate's model as the run read it (modelcheck.go)
}

// StartRun checks the plan and the folder, then runs every server lifetime of the schedule in
// its own goroutine. Consume Events until it is closed, then Wait for the report.
func StartRun(ctx context.Context, spec RunSpec) *Run {
	if spec.Plan != nil {
		// the plan's device visibility variables reach every server and quality guard
		spec.Env = append(append([]string(nil), spec.Env...), spec.Plan.Build.EnvList()...)
	}
	r := &Run{spec: spec, q: newRunQueue(), done: make(chan struct{}), start: time.Now()}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(r.done)
		defer r.q.Close()
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
func (r *Run) Events() <-chan capacity.RunEvent { return r.q.Out() }

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

func (r *Run) run() (*capacity.RunReport, error) {
	spec := r.spec
	if spec.Plan == nil || spec.PlanFile == "" {
		return nil, capacity.Refuse("no plan")
	}
	if spec.Server == "" {
		return nil, capacity.Refuse("no llama-server binary")
	}
	in, err := r.inputs()
	if err != nil {
		return nil, err
	}
	p, planDir, cases, prompts, sha := in.plan, in.planDir, in.cases, in.prompts, in.sha
	if err := r.noteModels(p, planDir); err != nil {
		return nil, err
	}
	machine := (&runner.Fingerprinter{}).Machine()
	machine.Hostname = "" // run.json travels in receipt bundles
	mp := &machine
	if spec.Host != nil { // the servers' machine is the host's (nil: not fingerprinted)
		mp = spec.Host.Machine
	}
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
	rep := &capacity.RunReport{Schema: SchemaRun, Plan: capacity.RunPlanFile, PlanSHA256: sha, PromptPlan: in.promptSHA, Build: spec.Build, Machine: mp,
		Started: r.start.UTC(), OutDir: spec.OutDir, Lifetimes: []capacity.RunLifetime{}, QualityCases: in.casesSHA, PassOrigins: map[string]time.Time{}}
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
	} else if err := os.WriteFile(filepath.Join(spec.OutDir, capacity.RunPlanFile), in.planBytes, 0o644); err != nil {
		return rep, err
	}
	if err := writeBatched(spec.OutDir, in.batched); err != nil {
		return rep, err
	}
	// run.json is written now (the kept lifetimes and guards from the start), after every
	// lifetime and guard, and at the end.
	bk := &runBook{rep: rep, sched: sched, guards: guards, before: before, start: r.start, outDir: spec.OutDir,
		lifetimes: map[string]capacity.RunLifetime{}, guardsRun: map[string]capacity.RunGuard{}}
	for _, lt := range sched {
		if rl, ok := kept.lifetime(lt.Key); ok {
			bk.lifetimes[rl.Key] = rl
		}
	}
	for _, g := range guards {
		if rg, ok := kept.guard(g.key); ok {
			bk.guardsRun[rg.Key] = rg
		}
	}
	if err := bk.checkpoint(); err != nil {
		return rep, err
	}
	if err := r.writeHarnessFloor(p); err != nil {
		return rep, fmt.Errorf("harness floor: %w", err)
	}
	r.initProgress(sched, guards, kept, cases != nil)
	started := capacity.RunEvent{Type: capacity.RunStarted}
	if kept != nil {
		info := kept.info
		started.Resume = &info
	}
	r.emit(started)

	runErr := r.startRPC(bk, p, kept)
	if runErr == nil {
		runErr = r.runLifetimes(bk, p, sha, prompts, kept)
	}
	runErr = r.runGuards(bk, p, cases, kept, runErr)
	runErr = r.stopRPC(bk, runErr)
	if runErr == nil && r.ctx.Err() != nil {
		runErr = context.Cause(r.ctx)
	}
	bk.list()
	incomplete, runErr := r.assemble(rep, sched, guards, runErr)
	if incomplete != nil {
		rep.Incomplete = incomplete.Lifetimes
	}
	rep.Duration = bk.before + time.Since(r.start)
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

// runBook is what a run has finished or cut, by key, and run.json as it stands: written after
// every lifetime and guard and at the end, listing them in schedule order (so even the first
// checkpoint of a resumed run keeps what it kept).
type runBook struct {
	rep       *capacity.RunReport
	sched     []capacity.Lifetime
	guards    []guardRun
	lifetimes map[string]capacity.RunLifetime
	guardsRun map[string]capacity.RunGuard
	before    time.Duration // time the folder's earlier runs spent running
	start     time.Time
	outDir    string
}

// list puts the finished lifetimes and guards into run.json's lists, in schedule order.
func (bk *runBook) list() {
	rep := bk.rep
	rep.Lifetimes, rep.Guards = []capacity.RunLifetime{}, nil
	for _, lt := range bk.sched {
		if rl, ok := bk.lifetimes[lt.Key.String()]; ok {
			rep.Lifetimes = append(rep.Lifetimes, rl)
		}
	}
	for _, g := range bk.guards {
		if rg, ok := bk.guardsRun[g.key.String()]; ok {
			rep.Guards = append(rep.Guards, rg)
		}
	}
}

// checkpoint writes run.json as it stands, marked in progress.
func (bk *runBook) checkpoint() error {
	bk.list()
	rep := bk.rep
	rep.Duration = bk.before + time.Since(bk.start)
	rep.InProgress = true
	defer func() { rep.InProgress = false }()
	data, err := canon.Marshal(rep)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(bk.outDir, capacity.RunManifestFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", capacity.RunManifestFile, err)
	}
	return nil
}

// runLifetimes runs each lifetime of the schedule a resumed run did not keep, one monotonic
// clock per pass; a stop or a failure leaves the rest (the error says which).
func (r *Run) runLifetimes(bk *runBook, p *capacity.Plan, sha string, prompts *loadgen.PromptPlan, kept *resumeState) error {
	passStart := map[string]time.Time{}
	for pass, t := range bk.rep.PassOrigins {
		passStart[pass] = passClock(t)
	}
	var runErr error
	for _, lt := range bk.sched {
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
			bk.rep.PassOrigins[lt.Key.Pass] = now.UTC()
		}
		if why := r.modelChanged(lt.Key.Candidate); why != "" {
			runErr = &ModelChangedError{Why: why} // the lifetime is not started
			continue
		}
		cand, _ := p.Candidate(lt.Key.Candidate)
		rl, err := r.lifetime(p, sha, cand, lt, prompts, passStart[lt.Key.Pass], bk.rep.PassOrigins[lt.Key.Pass])
		if err != nil {
			rl.Interrupted = clipText(err.Error())
		}
		bk.lifetimes[rl.Key] = rl
		if err == nil {
			err = bk.checkpoint()
		}
		if err == nil {
			// the lifetime's RPC split; a ggml-rpc-server that ended interrupts it and halts
			err = r.rpcAfter(cand, &rl)
			bk.lifetimes[rl.Key] = rl
		}
		if err != nil {
			runErr = err
		}
	}
	return runErr
}

// runGuards runs each quality guard a resumed run did not keep, unless runErr (the lifetimes'
// error) or a stop came first; it returns the run's error.
func (r *Run) runGuards(bk *runBook, p *capacity.Plan, cases *quality.Cases, kept *resumeState, runErr error) error {
	for _, g := range bk.guards {
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
		bk.guardsRun[rg.Key] = rg
		if err == nil {
			err = bk.checkpoint()
		}
		if err != nil {
			runErr = err
		}
	}
	return runErr
}

// runInputs are what a run reads before it starts: the plan (cloned, defaults filled in) and
// its bytes and folder, the quality guard's cases (nil: no guard), the prompt plan, and the
// SHA-256s run.json records.
type runInputs struct {
	plan                     *capacity.Plan
	planBytes                []byte
	planDir                  string
	cases                    *quality.Cases
	casesSHA, promptSHA, sha string
	batched                  map[string][]byte // checked llama-batched-bench files, by candidate
	prompts                  *loadgen.PromptPlan
}

// inputs reads and checks the run's inputs; a *capacity refusal says what is wrong with them.
func (r *Run) inputs() (*runInputs, error) {
	spec := r.spec // a copy: the case list resolved here is the run's own
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
	batched, err := readBatchedSpec(p, spec.Batched)
	if err != nil {
		return nil, err
	}
	prompts, promptSHA, err := loadgen.LoadPromptPlan(study.ResolvePath(planDir, p.PromptPlan.Path), p.PromptPlan.SHA256)
	if err != nil {
		return nil, capacity.Refuse("%v", err)
	}
	sha, _, err := p.SHA256()
	if err != nil {
		return nil, err
	}
	return &runInputs{plan: p, planBytes: planBytes, planDir: planDir, cases: cases, casesSHA: casesSHA, promptSHA: promptSHA, sha: sha, prompts: prompts,
		batched: batched}, nil
}

// initProgress sets the progress a run starts from: the schedule's lifetimes, cells and guards,
// and what a resumed run kept.
func (r *Run) initProgress(sched []capacity.Lifetime, guards []guardRun, kept *resumeState, guarded bool) {
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
	if guarded {
		r.prog.GuardsTotal = len(guards)
		r.prog.GuardsDone = len(kept.guardKeys())
	}
	r.mu.Unlock()
}

// assemble ends a run that was not stopped or failed: the lifetimes without results make it
// incomplete; study.json is assembled from the run folder and written (for inspection only when
// incomplete). It returns the run's error.
func (r *Run) assemble(rep *capacity.RunReport, sched []capacity.Lifetime, guards []guardRun, runErr error) (*capacity.IncompleteError, error) {
	spec := r.spec
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
		dirs := rep.LifetimeDirs()
		rep.AssembleArgs = assembleArgs(spec.OutDir, dirs, sched, guards)
		res, data, err := assembleRun(spec.OutDir, dirs, sched, guards)
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
	return incomplete, runErr
}

// readBatchedSpec reads and checks the run's llama-batched-bench files before anything runs:
// a candidate of the plan, a file that parses with one PP and one TG.
func readBatchedSpec(p *capacity.Plan, files map[string]string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, id := range slices.Sorted(maps.Keys(files)) {
		path := files[id]
		if _, ok := p.Candidate(id); !ok {
			ids := make([]string, len(p.Candidates))
			for i, c := range p.Candidates {
				ids[i] = c.ID
			}
			return nil, capacity.Refuse("%s %s: not a candidate of this plan (%s)", capacity.FlagBatched, id, strings.Join(ids, ", "))
		}
		data, err := fsread.ReadFile(path, maxBatchedBytes, capacity.FlagBatched+" "+id)
		if err != nil {
			return nil, capacity.Refuse("%s %s: %v", capacity.FlagBatched, id, err)
		}
		if _, _, err := capacity.ReadBatched(path, data); err != nil {
			return nil, capacity.Refuse("%s %s: %v", capacity.FlagBatched, id, err)
		}
		out[id] = data
	}
	return out, nil
}

// maxBatchedBytes bounds a llama-batched-bench output file (a few KiB in practice).
const maxBatchedBytes = 64 << 20

// writeBatched copies the checked llama-batched-bench files into the run folder.
func writeBatched(out string, batched map[string][]byte) error {
	for _, id := range slices.Sorted(maps.Keys(batched)) {
		path := filepath.Join(out, filepath.FromSlash(capacity.RunBatchedFile(id)))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(path, batched[id], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// batchedInFolder lists the candidates (in plan order) whose llama-batched-bench file is in
// the run folder.
func batchedInFolder(out string, sched []capacity.Lifetime) []string {
	var ids []string
	for _, lt := range sched {
		id := lt.Key.Candidate
		if slices.Contains(ids, id) {
			continue
		}
		if st, err := os.Stat(filepath.Join(out, filepath.FromSlash(capacity.RunBatchedFile(id)))); err == nil && st.Mode().IsRegular() {
			ids = append(ids, id)
		}
	}
	return ids
}
