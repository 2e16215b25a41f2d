package capacity

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
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/quality"
	"sparkbench/runner/server"
)

// The run folder's layout, the one `capacity assemble` reads:
//
//	OUT/plan.json                              the plan's bytes, verbatim (same SHA-256)
//	OUT/runs/PASS/CANDIDATE/pP/requests.jsonl  request records (docs/requests.md)
//	OUT/runs/PASS/CANDIDATE/pP/rss.json        {"schema":"sparkbench.rss/v1","vmhwm_kib":N,"source":…}
//	OUT/runs/PASS/CANDIDATE/pP/server.log      llama-server's log (CR and ANSI removed)
//	OUT/runs/PASS/CANDIDATE/pP/evidence.json   backend evidence of the last load block, the server's argv
//	OUT/quality/CANDIDATE/pP/quality-evidence.json, server.log   the quality guard (gated plans)
//	OUT/run.json                               what happened: lifetimes, ports, classes, files
//	OUT/study.json                             the assembled study
const (
	RunPlanFile      = "plan.json"
	RunManifestFile  = "run.json"
	RunStudyFile     = "study.json"
	RunRequestsFile  = "requests.jsonl"
	RunRSSFile       = "rss.json"
	RunServerLogFile = "server.log"
	RunEvidenceFile  = "evidence.json"
	RunQualityFile   = "quality-evidence.json"
)

// RunSpec is a capacity (or concurrency) run: every server lifetime of the plan's schedule,
// then the assembly.
type RunSpec struct {
	PlanFile string // the plan; its bytes are copied into the run folder
	// Plan is the plan as loaded from PlanFile (Defaults are applied by the run).
	Plan   *Plan
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

// RunEventType names a run event.
type RunEventType string

// Run events, in the order they occur. Every lifetime emits lifetime_started, then
// server_ready or server_failed, then per client level cell_started, request…, cell_done,
// then lifetime_done. The run ends with assembled (or assembly_failed), then run_done.
const (
	RunStarted      RunEventType = "run_started" // Resume set when the run resumes a folder
	LifetimeStarted RunEventType = "lifetime_started"
	ServerReady     RunEventType = "server_ready"
	ServerFailed    RunEventType = "server_failed"
	CellStarted     RunEventType = "cell_started"
	ServerLine      RunEventType = "server_line" // one line of the server's log (Line; Dropped before it)
	RequestDone     RunEventType = "request"
	CellDone        RunEventType = "cell_done"
	LifetimeDone    RunEventType = "lifetime_done"
	GuardStarted    RunEventType = "guard_started" // quality guard of one (candidate, P)
	GuardDone       RunEventType = "guard_done"
	Assembled       RunEventType = "assembled"
	AssemblyFailed  RunEventType = "assembly_failed"
	RunDone         RunEventType = "run_done"
	// NotResumed comes from Engine.Run, before run_started: the study's last run folder could
	// not be resumed (Error says why), so a new one is started.
	NotResumed       RunEventType = "not_resumed"
	maxEventErrorLen              = 400
)

// RunEvent is one thing that happened during a run: plain data, for a console, the notebook
// or the UI. Exactly the fields its type needs are set.
type RunEvent struct {
	Type     RunEventType   `json:"type"`
	T        time.Duration  `json:"t"` // since the run started
	Progress RunProgress    `json:"progress"`
	Lifetime string         `json:"lifetime,omitempty"` // PASS/CANDIDATE/pP
	Clients  int            `json:"clients,omitempty"`
	Server   *RunServer     `json:"server,omitempty"`  // server_ready, server_failed, lifetime_done
	Request  *RequestRecord `json:"request,omitempty"` // request
	Cell     *RunCell       `json:"cell,omitempty"`    // cell_done
	Error    string         `json:"error,omitempty"`
	Study    string         `json:"study,omitempty"` // assembled: path of study.json
	Guard    *RunGuard      `json:"guard,omitempty"` // guard_done
	// Line is a server_line's text. Dropped counts the log lines before it that were not
	// sent as events because the consumer fell behind (the log file keeps every line).
	Line    string `json:"line,omitempty"`
	Dropped int    `json:"dropped,omitempty"`
	// Origin (lifetime_started) is the wall-clock origin of the pass's clock: the lifetime's
	// request times are milliseconds since it (run.json's pass_origins).
	Origin time.Time `json:"origin,omitzero"`
	// Resume (run_started) says what a resumed run kept from before.
	Resume *RunResume `json:"resume,omitempty"`
	// NoResults (lifetime_done) says why the lifetime ended without results.
	NoResults string `json:"no_results,omitempty"`
}

// RunResume is one resumption of a run folder: what was kept and what is run again.
type RunResume struct {
	At time.Time `json:"at"`
	// Lifetimes and Guards are the keys kept from before: finished, not run again.
	Lifetimes []string `json:"lifetimes_done"`
	Guards    []string `json:"guards_done,omitempty"`
	// Cleared are the run-folder relative folders emptied to be run again: the lifetime (or
	// guard) the interruption cut, and any partial folder a killed run left.
	Cleared []string `json:"cleared,omitempty"`
	// Previous is how the run before ended: its run.json error, or "killed" when it never
	// wrote its final run.json (the last checkpoint was read).
	Previous string `json:"previous,omitempty"`
}

// RunGuard is one quality-guard run: CANDIDATE/pP, its score and its server.
type RunGuard struct {
	Key    string            `json:"key"`
	Dir    string            `json:"dir"`
	Score  int               `json:"score"`
	Cases  int               `json:"cases"`
	Server RunServer         `json:"server"`
	Files  map[string]string `json:"files"`
	// Interrupted says why the guard did not finish; a resumed run runs it again.
	Interrupted string `json:"interrupted,omitempty"`
}

// RunProgress counts what is done.
type RunProgress struct {
	LifetimesDone  int `json:"lifetimes_done"`
	LifetimesTotal int `json:"lifetimes_total"`
	CellsDone      int `json:"cells_done"`
	CellsTotal     int `json:"cells_total"`
	GuardsDone     int `json:"guards_done,omitempty"`
	GuardsTotal    int `json:"guards_total,omitempty"`
	// LifetimesKept and CellsKept are the parts of the done counts a resumed run kept from
	// before (not measured by this run).
	LifetimesKept int           `json:"lifetimes_kept,omitempty"`
	CellsKept     int           `json:"cells_kept,omitempty"`
	Elapsed       time.Duration `json:"elapsed"`
	ETA           time.Duration `json:"eta"` // -1 while unknown
}

// RunServer is one server lifetime's process as the run saw it.
type RunServer struct {
	Argv     []string         `json:"argv,omitempty"`
	Port     int              `json:"port,omitempty"`
	Pid      int              `json:"pid,omitempty"`
	ReadyIn  time.Duration    `json:"ready_in,omitempty"`
	Attempts []server.Attempt `json:"attempts,omitempty"`
	// Class and Reason: how the lifetime ended ("stopped_by_user" is the normal end), or why
	// the server never became healthy.
	Class     string           `json:"class,omitempty"`
	Reason    string           `json:"reason,omitempty"`
	Unexpect  bool             `json:"unexpected_exit,omitempty"` // it ended before the run stopped it
	RSS       *server.RSS      `json:"rss,omitempty"`
	Evidence  *server.Evidence `json:"evidence,omitempty"`
	Escalated bool             `json:"escalated,omitempty"` // SIGKILL was needed
}

// RunCell summarises one client level of one lifetime.
type RunCell struct {
	Clients   int     `json:"clients"`
	Attempted int     `json:"attempted"` // measured requests
	Completed int     `json:"completed"` // measured, HTTP 200, n_predict tokens
	Retries   int     `json:"retries,omitempty"`
	Rate      float64 `json:"generation_rate"` // tok/s of the measured window (0 when undefined)
	FirstErr  string  `json:"first_error,omitempty"`
}

// RunLifetime is a lifetime's record in run.json.
type RunLifetime struct {
	Key    string            `json:"key"`
	Dir    string            `json:"dir"` // relative to the run folder
	Server RunServer         `json:"server"`
	Cells  []RunCell         `json:"cells"`
	Files  map[string]string `json:"files"` // role -> path relative to the run folder
	// Interrupted says why the lifetime did not finish (Stop, a halt, an I/O failure): its
	// client levels were cut short, so a resumed run measures it again.
	Interrupted string `json:"interrupted,omitempty"`
	// NoResults says why the lifetime ended without results: no measured request completed
	// (the server did not start, died, or answered none). The run ends incomplete, and a
	// resumed run measures the lifetime again.
	NoResults string `json:"no_results,omitempty"`
}

// IncompleteLifetime is a server lifetime that ended without results.
type IncompleteLifetime struct {
	Key    string `json:"key"`
	Class  string `json:"class,omitempty"` // how its server ended (or why it never started)
	Reason string `json:"reason"`
}

// IncompleteError ends a run in which server lifetimes ended without results: the run is
// incomplete, not complete, whatever the assembly made of the rest (Assembled says whether
// study.json was written from them).
type IncompleteError struct {
	Lifetimes []IncompleteLifetime
	Total     int
	Assembled bool
}

func (e *IncompleteError) Error() string {
	parts := make([]string, len(e.Lifetimes))
	for i, l := range e.Lifetimes {
		parts[i] = l.Key + " (" + l.Reason + ")"
	}
	return fmt.Sprintf("incomplete: %d of %d server lifetimes ended without results: %s", len(e.Lifetimes), e.Total, strings.Join(parts, "; "))
}

// IsIncomplete says whether err ends an incomplete run, and returns it.
func IsIncomplete(err error) (*IncompleteError, bool) {
	var ie *IncompleteError
	ok := errors.As(err, &ie)
	return ie, ok
}

// RunReport is what a run did; run.json holds it.
type RunReport struct {
	Schema     string          `json:"schema"`
	Plan       string          `json:"plan"` // run-folder relative
	PlanSHA256 string          `json:"plan_sha256"`
	PromptPlan string          `json:"prompt_plan_sha256"`
	Build      *llamacpp.Build `json:"build,omitempty"`
	Machine    *runner.Machine `json:"machine,omitempty"` // CPU, cores, memory, kernel (from /proc)
	// Started is when the run folder's first run started; Duration the time spent running,
	// summed over the resumptions (the pauses between them excluded).
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
	Lifetimes []RunLifetime `json:"lifetimes"`
	// PassOrigins are the wall-clock origins of each pass's clock (request times are
	// milliseconds since it): a resumed run measures the rest of a pass on the same axis.
	PassOrigins map[string]time.Time `json:"pass_origins,omitempty"`
	// Resumes lists each time the folder's run was resumed, in order.
	Resumes []RunResume `json:"resumes,omitempty"`
	// InProgress marks a checkpoint: run.json is rewritten after every lifetime and guard
	// while the run goes on, so a killed run leaves what it finished; the final run.json has
	// it false.
	InProgress bool       `json:"in_progress,omitempty"`
	Guards     []RunGuard `json:"guards,omitempty"`
	// QualityCases is the SHA-256 of the guard's case list (when the plan gates quality).
	QualityCases string `json:"quality_cases_sha256,omitempty"`
	Study        string `json:"study,omitempty"` // run-folder relative; empty when not assembled
	StudySHA     string `json:"study_sha256,omitempty"`
	Error        string `json:"error,omitempty"`
	// Incomplete lists the lifetimes that ended without results (the run is incomplete).
	Incomplete []IncompleteLifetime `json:"incomplete,omitempty"`
	// AssembleArgs reproduce study.json: `sparkbench capacity assemble ARGS…` from the run
	// folder's parent gives the same bytes.
	AssembleArgs []string `json:"assemble_args"`

	OutDir string  `json:"-"`
	Result *Result `json:"-"` // the assembled study (nil when assembly failed)
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
	report *RunReport
	err    error
	start  time.Time
	prog   RunProgress
	mu     sync.Mutex
	// droppedLines counts server log lines not sent since the last one sent (under mu).
	droppedLines int
}

// ErrRunStopped is the cause of a run ended by Stop.
var ErrRunStopped = errors.New("capacity run stopped")

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
		ev := RunEvent{Type: RunDone}
		if r.err != nil {
			ev.Error = clipText(r.err.Error())
		}
		r.emit(ev)
	}()
	return r
}

// Events is the run's channel; it is closed after run_done. Events are never dropped.
func (r *Run) Events() <-chan RunEvent { return r.q.out }

// Stop ends the run: requests in flight are cancelled, the server is stopped, nothing is
// assembled. Idempotent.
func (r *Run) Stop() { r.cancel(ErrRunStopped) }

// Wait returns the report once the run is over. The error says why the run failed (a refused
// plan or folder, an I/O error, Stop, an assembly refusal); the report is non-nil whenever the
// run got as far as creating its folder.
func (r *Run) Wait() (*RunReport, error) {
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
	r.emit(RunEvent{Type: ServerLine, Lifetime: lifetime, Line: text, Dropped: dropped})
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

func (r *Run) emit(ev RunEvent) {
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

// InputError-like refusals before anything runs.
type runRefusal struct{ msg string }

func (e *runRefusal) Error() string { return e.msg }

// IsRefusal says whether a run error is a refusal of its input (plan, prompt plan, folder)
// before anything ran.
func IsRefusal(err error) bool {
	var r *runRefusal
	return errors.As(err, &r) || IsResumeError(err)
}

func refuse(format string, a ...any) error { return &runRefusal{fmt.Sprintf(format, a...)} }

func (r *Run) run() (*RunReport, error) {
	spec := r.spec
	if spec.Plan == nil || spec.PlanFile == "" {
		return nil, refuse("no plan")
	}
	if spec.Server == "" {
		return nil, refuse("no llama-server binary")
	}
	planBytes, err := os.ReadFile(spec.PlanFile)
	if err != nil {
		return nil, refuse("read plan: %v", err)
	}
	p, err := clonePlan(spec.Plan)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	planDir, _ := filepath.Abs(filepath.Dir(spec.PlanFile))
	if errs := study.Errors(Validate(p, ValidateOptions{PlanDir: planDir, Hash: spec.Hash})); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.String()
		}
		return nil, refuse("plan refused: %s", strings.Join(msgs, "; "))
	}
	var cases *quality.Cases
	var casesSHA string
	if q := p.QualityCases; q != nil && spec.QualityCases == "" {
		spec.QualityCases = study.ResolvePath(planDir, q.Path)
	}
	switch {
	case p.Limits.QualityGated() && spec.QualityCases == "":
		return nil, refuse("the plan has a quality gate (limits.quality_floor / quality_retention_min): give the guard's case list (--quality-cases FILE, format sparkbench.quality-cases/v1, docs/server.md)")
	case !p.Limits.QualityGated() && spec.QualityCases != "":
		return nil, refuse("a quality case list was given but the plan has no quality gate (limits.quality_floor / quality_retention_min)")
	case spec.QualityCases != "":
		if cases, casesSHA, err = quality.Load(spec.QualityCases); err != nil {
			return nil, refuse("%v", err)
		}
		if q := p.QualityCases; q != nil && casesSHA != q.SHA256 {
			return nil, refuse("the quality case list %s hashes to %s, the plan freezes %s: it changed since the plan was written; restore it or write a new plan", spec.QualityCases, casesSHA, q.SHA256)
		}
	}
	prompts, promptSHA, err := loadgen.LoadPromptPlan(study.ResolvePath(planDir, p.PromptPlan.Path), p.PromptPlan.SHA256)
	if err != nil {
		return nil, refuse("%v", err)
	}
	sha, _, err := p.SHA256()
	if err != nil {
		return nil, err
	}
	machine := (&runner.Fingerprinter{}).Machine()
	machine.Hostname = "" // run.json travels in receipt bundles
	var (
		prev   *RunReport
		unlock func()
	)
	if spec.Resume {
		if prev, unlock, err = openResume(spec.OutDir, sha); err != nil {
			return nil, err
		}
	} else {
		if err := makeRunDir(spec.OutDir); err != nil {
			return nil, refuse("%v", err)
		}
		if unlock, err = lockRunDir(spec.OutDir); err != nil {
			return nil, refuse("%v", err)
		}
	}
	defer unlock()
	rep := &RunReport{Schema: SchemaRun, Plan: RunPlanFile, PlanSHA256: sha, PromptPlan: promptSHA, Build: spec.Build, Machine: &machine,
		Started: r.start.UTC(), OutDir: spec.OutDir, Lifetimes: []RunLifetime{}, QualityCases: casesSHA, PassOrigins: map[string]time.Time{}}
	sched := Schedule(p, planDir)
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
	} else if err := os.WriteFile(filepath.Join(spec.OutDir, RunPlanFile), planBytes, 0o644); err != nil {
		return rep, err
	}
	// run.json is written now, after every lifetime and guard, and at the end.
	// What finished or was cut, by key (the kept ones from the start): run.json lists them in
	// schedule order, so even the first checkpoint of a resumed run keeps what it kept.
	lifetimes, guardsRun := map[string]RunLifetime{}, map[string]RunGuard{}
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
		rep.Lifetimes, rep.Guards = []RunLifetime{}, nil
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
		if err := atomicfile.WriteFile(filepath.Join(spec.OutDir, RunManifestFile), append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", RunManifestFile, err)
		}
		return nil
	}
	if err := checkpoint(); err != nil {
		return rep, err
	}
	r.mu.Lock()
	r.prog = RunProgress{LifetimesTotal: len(sched), ETA: -1}
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
	started := RunEvent{Type: RunStarted}
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
	var incomplete *IncompleteError
	if runErr == nil {
		for _, rl := range rep.Lifetimes {
			if rl.NoResults != "" {
				if incomplete == nil {
					incomplete = &IncompleteError{Total: len(sched)}
				}
				incomplete.Lifetimes = append(incomplete.Lifetimes, IncompleteLifetime{Key: rl.Key, Class: rl.Server.Class, Reason: rl.NoResults})
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
			r.emit(RunEvent{Type: AssemblyFailed, Error: clipText(err.Error())})
		} else if err := atomicfile.WriteFile(filepath.Join(spec.OutDir, RunStudyFile), data, 0o644); err != nil {
			runErr = fmt.Errorf("write %s: %w", RunStudyFile, err)
		} else {
			rep.Result, rep.Study, rep.StudySHA = &res, RunStudyFile, canon.SHA256Hex(data)
			r.emit(RunEvent{Type: Assembled, Study: filepath.Join(spec.OutDir, RunStudyFile)})
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
		if werr := atomicfile.WriteFile(filepath.Join(spec.OutDir, RunManifestFile), append(data, '\n'), 0o644); werr != nil && runErr == nil {
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

func lifetimeDir(k LifetimeKey) string {
	return filepath.Join("runs", k.Pass, k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// lifetime runs one server lifetime and writes its raw files. Only an I/O failure (or Stop)
// is an error: a server that fails yields request records that say so, and the run goes on.
// A lifetime whose client levels the run's end cut short still ends with lifetime_done (its
// Error says so) and returns the run's end as its error: it did not finish. origin is the
// pass's clock; wall the same origin as a wall-clock time.
func (r *Run) lifetime(p *Plan, planSHA string, cand Candidate, lt Lifetime, prompts *loadgen.PromptPlan, origin, wall time.Time) (RunLifetime, error) {
	spec := r.spec
	rel := lifetimeDir(lt.Key)
	dir := filepath.Join(spec.OutDir, rel)
	rl := RunLifetime{Key: lt.Key.String(), Dir: rel, Cells: []RunCell{}, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rl, err
	}
	r.emit(RunEvent{Type: LifetimeStarted, Lifetime: rl.Key, Origin: wall})
	logf, err := os.Create(filepath.Join(dir, RunServerLogFile))
	if err != nil {
		return rl, err
	}
	defer logf.Close()
	reqf, err := os.Create(filepath.Join(dir, RunRequestsFile))
	if err != nil {
		return rl, err
	}
	defer reqf.Close()
	rw, err := NewRequestWriter(reqf, RequestHeader{Pass: lt.Key.Pass, Candidate: lt.Key.Candidate, Slots: lt.Key.Slots, PlanSHA256: planSHA})
	if err != nil {
		return rl, err
	}
	rl.Files["requests"] = filepath.Join(rel, RunRequestsFile)
	rl.Files["server_log"] = filepath.Join(rel, RunServerLogFile)

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
		rl.Server = RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
		if n := len(se.Attempts); n > 0 {
			rl.Server.Argv, rl.Server.Port, rl.Server.Pid = se.Attempts[n-1].Argv, se.Attempts[n-1].Port, se.Attempts[n-1].Pid
		}
		if se.Exit.PeakRSS > 0 {
			rss = server.RSS{KiB: se.Exit.PeakRSS / 1024, Source: "wait4 rusage"}
		}
		evidence = se.Evidence
		gone = "llama-server did not become healthy: " + se.Reason
		r.emit(RunEvent{Type: ServerFailed, Lifetime: rl.Key, Server: &rl.Server, Error: clipText(serr.Error())})
	} else {
		rl.Server = RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts()}
		r.emit(RunEvent{Type: ServerReady, Lifetime: rl.Key, Server: &rl.Server})
	}

	next := 1 // prompt numbers: unique within the lifetime
	per := p.WarmupCount() + p.Measured
	for _, c := range lt.Clients {
		if r.ctx.Err() != nil {
			break
		}
		r.emit(RunEvent{Type: CellStarted, Lifetime: rl.Key, Clients: c})
		if gone == "" && srv != nil && !srv.Alive() {
			gone = serverGone(srv)
		}
		base := next
		cfg := loadgen.Config{Clients: c, Warmups: p.WarmupCount(), Measured: p.Measured, NPredict: p.NPredict,
			Seed: p.Seed, Prompt: func(i int) string { return prompts.Prompt(base + i) }, Timeout: spec.RequestTimeout,
			Origin: origin}
		next += per
		var cell RunCell
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
		r.emit(RunEvent{Type: CellDone, Lifetime: rl.Key, Clients: c, Cell: &cell})
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
			return rl, fmt.Errorf("write %s: %w", filepath.Join(rel, RunServerLogFile), err)
		}
	}
	if rss.KiB > 0 {
		rl.Server.RSS = &rss
		b, _ := canon.Marshal(RSSRecord{Schema: SchemaRSS, VmHWMKiB: rss.KiB, Source: rss.Source})
		if err := os.WriteFile(filepath.Join(dir, RunRSSFile), append(b, '\n'), 0o644); err != nil {
			return rl, err
		}
		rl.Files["rss"] = filepath.Join(rel, RunRSSFile)
	}
	rl.Server.Evidence = &evidence
	eb, _ := canon.Marshal(struct {
		Key      string          `json:"key"`
		Argv     []string        `json:"argv"`
		Evidence server.Evidence `json:"evidence"`
	}{rl.Key, rl.Server.Argv, evidence})
	if err := os.WriteFile(filepath.Join(dir, RunEvidenceFile), append(eb, '\n'), 0o644); err != nil {
		return rl, err
	}
	rl.Files["evidence"] = filepath.Join(rel, RunEvidenceFile)
	if err := reqf.Sync(); err != nil {
		return rl, err
	}
	if !cut && !hasResults(rl) {
		rl.NoResults = noResultsReason(rl, gone)
	}
	r.advance(0, 1)
	done := RunEvent{Type: LifetimeDone, Lifetime: rl.Key, Server: &rl.Server, NoResults: rl.NoResults}
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
func hasResults(rl RunLifetime) bool {
	for _, c := range rl.Cells {
		if c.Completed > 0 {
			return true
		}
	}
	return false
}

// noResultsReason says why a lifetime ended without results: why its server was not there
// (gone), else its first failed request.
func noResultsReason(rl RunLifetime, gone string) string {
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
func (r *Run) cell(rw *RequestWriter, key string, srv *server.Server, cfg loadgen.Config, nPredict int) (RunCell, error) {
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
	var recs []RequestRecord
	var werr error
	retries := 0
	for res := range a.Results() {
		rec := requestRecord(res)
		recs = append(recs, rec)
		retries += res.Retries
		r.emit(RunEvent{Type: RequestDone, Lifetime: key, Clients: cfg.Clients, Request: &rec})
	}
	// A request cut by a lost connection usually means the server died; its exit may not have
	// been observed yet on a loaded machine (the pty drains, then the wait returns): give it a
	// bounded moment before deciding the server is alive.
	if srv.Alive() && slices.ContainsFunc(recs, func(r RequestRecord) bool { return connectionLost(r.Error) }) {
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
	cell := RunCell{Clients: cfg.Clients, Retries: retries}
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
func (r *Run) notSent(rw *RequestWriter, key string, c int, p *Plan, origin time.Time, why string) (RunCell, error) {
	now := msSince(time.Since(origin))
	var recs []RequestRecord
	for i := 0; i < p.WarmupCount()+p.Measured; i++ {
		rec := RequestRecord{Clients: c, Phase: PhaseWarmup, Seq: i, SendMs: now, EndMs: now, Error: "not sent: " + why}
		if i >= p.WarmupCount() {
			rec.Phase, rec.Seq = PhaseMeasured, i-p.WarmupCount()
		}
		recs = append(recs, rec)
	}
	cell := RunCell{Clients: c}
	for i := range recs {
		if err := rw.Write(recs[i]); err != nil {
			return cell, err
		}
		rec := recs[i]
		r.emit(RunEvent{Type: RequestDone, Lifetime: key, Clients: c, Request: &rec})
	}
	summarise(&cell, recs, p.NPredict)
	return cell, nil
}

func summarise(cell *RunCell, recs []RequestRecord, nPredict int) {
	var measured []RequestRecord
	for _, rec := range recs {
		if rec.Phase != PhaseMeasured {
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
	m := CellMetrics("", measured, nPredict)
	if m.GenerationRate != nil {
		cell.Rate = *m.GenerationRate
	}
}

func msSince(d time.Duration) float64 { return float64(d) / 1e6 }

// requestRecord turns a load generator result into a request record the reader accepts.
func requestRecord(res loadgen.Result) RequestRecord {
	rec := RequestRecord{Clients: res.Clients, Phase: res.Phase, Seq: res.Seq, SendMs: msSince(res.Send),
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
		rec.Timings = &Timings{PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs}
	}
	if res.HTTPStatus != 0 && (res.HTTPStatus < 100 || res.HTTPStatus > 599) {
		rec.HTTPStatus = 0
	}
	return rec
}

// assembleArgs are the `capacity assemble` arguments that reproduce study.json.
func assembleArgs(out string, sched []Lifetime, guards []guardRun) []string {
	args := []string{"--plan", filepath.Join(out, RunPlanFile)}
	for _, lt := range sched {
		dir := filepath.Join(out, lifetimeDir(lt.Key))
		k := lt.Key.String()
		args = append(args, FlagRequests, k+"="+filepath.Join(dir, RunRequestsFile),
			FlagRSS, k+"="+filepath.Join(dir, RunRSSFile), FlagServerLog, k+"="+filepath.Join(dir, RunServerLogFile))
	}
	for _, g := range guards {
		args = append(args, FlagQuality, g.key.String()+"="+filepath.Join(out, guardDir(g.key), RunQualityFile))
	}
	return append(args, "--output", filepath.Join(out, RunStudyFile))
}

// assembleRun reads the run folder's files back and assembles them exactly as `capacity
// assemble` would.
func assembleRun(out string, sched []Lifetime, guards []guardRun) (Result, []byte, error) {
	plan, err := Load(filepath.Join(out, RunPlanFile))
	if err != nil {
		return Result{}, nil, err
	}
	in := Inputs{Requests: map[LifetimeKey]InputFile{}, RSS: map[LifetimeKey]InputFile{}, ServerLogs: map[LifetimeKey]InputFile{},
		Quality: map[QualityKey]InputFile{}}
	for _, g := range guards {
		path := filepath.Join(out, guardDir(g.key), RunQualityFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return Result{}, nil, &InputError{Flag: FlagQuality, Key: g.key.String(), Err: err}
		}
		in.Quality[g.key] = InputFile{Name: path, Data: data}
	}
	for _, lt := range sched {
		dir := filepath.Join(out, lifetimeDir(lt.Key))
		for _, f := range []struct {
			flag  string
			name  string
			files map[LifetimeKey]InputFile
		}{{FlagRequests, RunRequestsFile, in.Requests}, {FlagRSS, RunRSSFile, in.RSS}, {FlagServerLog, RunServerLogFile, in.ServerLogs}} {
			path := filepath.Join(dir, f.name)
			data, err := os.ReadFile(path)
			if err != nil {
				return Result{}, nil, &InputError{Flag: f.flag, Key: lt.Key.String(), Err: err}
			}
			f.files[lt.Key] = InputFile{Name: path, Data: data}
		}
	}
	res, err := Assemble(plan, in)
	if err != nil {
		return Result{}, nil, err
	}
	data, err := res.Marshal()
	return res, data, err
}

func clipText(s string) string {
	if len(s) > maxEventErrorLen {
		return s[:maxEventErrorLen] + "…"
	}
	return s
}

// runQueue is an unbounded FIFO in front of the events channel: the run never waits for its
// consumer, and no event is dropped.
type runQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []RunEvent
	closed bool
	out    chan RunEvent
}

func newRunQueue() *runQueue {
	q := &runQueue{out: make(chan RunEvent)}
	q.cond = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

func (q *runQueue) push(ev RunEvent) {
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
		q.items[0] = RunEvent{}
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}

// guardRun is one quality-guard server: a candidate at a slot count, with the arguments its
// load lifetimes had.
type guardRun struct {
	key  QualityKey
	args []string
}

// guardSchedule lists the guard runs: candidates and slots in plan order.
func guardSchedule(p *Plan, sched []Lifetime) []guardRun {
	args := map[QualityKey][]string{}
	for _, lt := range sched {
		args[QualityKey{lt.Key.Candidate, lt.Key.Slots}] = lt.Args
	}
	var out []guardRun
	for _, c := range p.Candidates {
		for _, s := range p.Slots {
			k := QualityKey{c.ID, s}
			out = append(out, guardRun{k, args[k]})
		}
	}
	return out
}

func guardDir(k QualityKey) string {
	return filepath.Join("quality", k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// guard runs the quality cases sequentially on a fresh server of one (candidate, P) and writes
// its evidence. A server that does not start fails every case, with the reason.
func (r *Run) guard(p *Plan, g guardRun, cases *quality.Cases) (RunGuard, error) {
	spec := r.spec
	rel := guardDir(g.key)
	dir := filepath.Join(spec.OutDir, rel)
	rg := RunGuard{Key: g.key.String(), Dir: rel, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rg, err
	}
	r.emit(RunEvent{Type: GuardStarted, Lifetime: rg.Key})
	logf, err := os.Create(filepath.Join(dir, RunServerLogFile))
	if err != nil {
		return rg, err
	}
	defer logf.Close()
	rg.Files["server_log"] = filepath.Join(rel, RunServerLogFile)
	ev := quality.Evidence{Schema: quality.SchemaEvidence, Candidate: g.key.Candidate, Slots: g.key.Slots}
	srv, serr := server.Start(r.ctx, server.Spec{Binary: spec.Server, Args: g.args, Env: spec.Env, Log: logLines{logf, r, rg.Key},
		StartTimeout: spec.StartTimeout, Grace: spec.Grace})
	if serr != nil {
		var se *server.StartError
		if !errors.As(serr, &se) {
			return rg, serr
		}
		rg.Server = RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
		if r.ctx.Err() != nil {
			return rg, context.Cause(r.ctx) // the stop, not the server: not a failed guard
		}
		for _, k := range cases.Cases {
			ev.Cases = append(ev.Cases, quality.CaseOutcome{ID: k.ID, Outcome: "fail", Matcher: k.Matcher,
				Detail: clipText("not run: llama-server did not become healthy: " + se.Reason)})
		}
	} else {
		rg.Server = RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts()}
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
	if err := os.WriteFile(filepath.Join(dir, RunQualityFile), append(b, '\n'), 0o644); err != nil {
		return rg, err
	}
	rg.Files["quality"] = filepath.Join(rel, RunQualityFile)
	r.mu.Lock()
	r.prog.GuardsDone++
	r.mu.Unlock()
	r.emit(RunEvent{Type: GuardDone, Lifetime: rg.Key, Guard: &rg})
	return rg, nil
}
