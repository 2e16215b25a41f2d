package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/study"
	"sparkbench/runner/llamacpp"
)

// Capacity and concurrency studies in the notebook (docs/capacity.md, "In the notebook").
//
// The engine registers a plan (idempotently, by its SHA-256), runs it through StartRun,
// records every server lifetime as a notebook leg of kind "server" with its request records
// and server log, journals where the assembled study.json is and its SHA-256
// (NoteAssembled), journals each prediction's verdict once and sets the study's status. It
// talks to the notebook through Recorder (store.CapacityRecorder implements it), so this
// package never imports the store.

// Journal kinds the engine writes under the study (besides the store's own).
const (
	NoteAssembled = "capacity.assembled" // {"run_dir","study_file","study_sha256","plan_sha256","selected":[…]}
	NoteRun       = "capacity.run"       // {"run_dir","plan_file","started_at"[,"not_resumed"]}
	// NoteResumed: a run resumed the run folder of the study's last run (RunSpec.Resume):
	// {"run_dir","plan_file","resumed_at","lifetimes_skipped","lifetimes_total","guards_skipped",
	// "rerun":[folders cleared to run again],"previous":how the run before ended}.
	NoteResumed = "capacity.resumed"
	// NoteIncomplete: the run ended with server lifetimes without results (IncompleteError):
	// {"run_dir","lifetimes":[{"key","class","reason"}],"total","study_file"}; no assembled
	// result and no verdict is journaled, and the next run measures those lifetimes again.
	NoteIncomplete = "capacity.incomplete"
	NoteHalted     = study.NoteHalted     // {"reason","run_dir"}
	NotePlanSource = study.NotePlanSource // {"plan_dir","plan_file"}
)

// Study statuses the engine sets (the store's names).
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusHalted   = "halted"
	// StatusIncomplete: the run is over but server lifetimes ended without results.
	StatusIncomplete = "incomplete"
)

// NewStudy is a study to register: the canonical plan, its SHA-256 and its predictions.
type NewStudy struct {
	Name, Kind, Description string
	PlanJSON                []byte // canonical JSON of the plan with defaults
	PlanSHA256              string
	PlanDir, PlanFile       string // absolute; model paths resolve against PlanDir
	Predictions             []Prediction
}

// StoredStudy is a registered capacity or concurrency study as the notebook holds it.
type StoredStudy struct {
	ID                int64
	Name, Kind        string
	Status            string
	PlanSHA256        string
	PlanJSON          []byte
	PlanDir, PlanFile string
	// Verdicts are the latest computed verdict per prediction key (absent: none journaled).
	Verdicts map[string]study.StoredVerdict
	// Notes are the study's journal entries of kinds "study.*" and "capacity.*", in order.
	Notes []study.StoredNote
}

// StoredLeg is one recorded server lifetime.
type StoredLeg struct {
	ID              int64     `json:"id"`
	Label           string    `json:"label"` // PASS/CANDIDATE/pP
	State           string    `json:"state"`
	Class           string    `json:"class"`
	Reason          string    `json:"reason,omitempty"`
	Argv            []string  `json:"argv"`
	PeakRSSBytes    int64     `json:"peak_rss_bytes"`
	RequestRows     int64     `json:"request_rows"`
	TranscriptBytes int64     `json:"transcript_bytes"`
	StartedAt       time.Time `json:"started_at"`
	EndedAt         time.Time `json:"ended_at"`
}

// LegStart is a server lifetime about to be recorded.
type LegStart struct {
	StudyID int64
	Label   string // the lifetime key, PASS/CANDIDATE/pP
	Argv    []string
	Detail  map[string]any // pass, candidate, slots, clients, port, pid, run_dir, …
}

// LegRequests are a lifetime's request records (its requests.jsonl), with what turns their
// per-pass clock into wall-clock times: Origin is the pass's clock origin (approximated by the
// moment its first lifetime started, within microseconds).
type LegRequests struct {
	Key      LifetimeKey
	Arm      string
	Origin   time.Time
	NPredict int
	Records  []RequestRecord
}

// LegEnd is how a lifetime ended.
type LegEnd struct {
	Class, Reason string
	PeakRSSBytes  int64
	Transcript    []byte // the server log
}

// LegSink takes a running leg's rows.
type LegSink interface {
	AddRequests(LegRequests) error
}

// Recorder is the notebook as the capacity engine sees it.
type Recorder interface {
	// StudyByPlan finds the capacity or concurrency study registered with this plan SHA-256.
	StudyByPlan(ctx context.Context, planSHA256 string) (int64, bool, error)
	// Register creates the study, freezes the plan, journals its source and registers every
	// prediction, in one transaction.
	Register(ctx context.Context, s NewStudy) (int64, error)
	Study(ctx context.Context, id int64) (StoredStudy, error)
	SetStatus(ctx context.Context, id int64, status string) error
	Note(ctx context.Context, id int64, kind string, payload any) error
	StartLeg(ctx context.Context, l LegStart) (int64, LegSink, error)
	FinishLeg(ctx context.Context, legID int64, end LegEnd) error
	RecordVerdict(ctx context.Context, id int64, v study.Verdict) error
	Legs(ctx context.Context, id int64) ([]StoredLeg, error)
}

// Registration is what Register did.
type Registration struct {
	StudyID    int64           `json:"study_id"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	PlanSHA256 string          `json:"plan_sha256"`
	Existing   bool            `json:"existing"` // the plan was already registered
	Warnings   []study.Problem `json:"warnings,omitempty"`
}

// Register validates the plan (model and prompt-plan files hashed with hash, which may be
// nil to skip) and registers it, or finds the study already registered with the same plan
// SHA-256. A refused plan is a *study.RefusedError.
func Register(ctx context.Context, rec Recorder, p *Plan, planFile string, hash study.HashFunc) (Registration, error) {
	p, err := clonePlan(p)
	if err != nil {
		return Registration{}, err
	}
	p.Defaults()
	abs, err := filepath.Abs(planFile)
	if err != nil {
		return Registration{}, err
	}
	planDir := filepath.Dir(abs)
	probs := Validate(p, ValidateOptions{PlanDir: planDir, Hash: hash})
	if errs := study.Errors(probs); len(errs) > 0 {
		return Registration{}, &study.RefusedError{Problems: probs}
	}
	sum, data, err := p.SHA256()
	if err != nil {
		return Registration{}, err
	}
	reg := Registration{Name: p.Name, Kind: planKind(p), PlanSHA256: sum}
	for _, pr := range probs {
		if pr.Severity != study.SevError {
			reg.Warnings = append(reg.Warnings, pr)
		}
	}
	if id, ok, err := rec.StudyByPlan(ctx, sum); err != nil {
		return reg, err
	} else if ok {
		st, err := rec.Study(ctx, id)
		if err != nil {
			return reg, err
		}
		reg.StudyID, reg.Name, reg.Existing = id, st.Name, true
		return reg, nil
	}
	id, err := rec.Register(ctx, NewStudy{Name: p.Name, Kind: reg.Kind, Description: p.Description, PlanJSON: data,
		PlanSHA256: sum, PlanDir: planDir, PlanFile: abs, Predictions: p.Predictions})
	if err != nil {
		return reg, err
	}
	st, err := rec.Study(ctx, id)
	if err != nil {
		return reg, err
	}
	reg.StudyID, reg.Name = id, st.Name
	return reg, nil
}

func planKind(p *Plan) string {
	if p.Concurrency() {
		return "concurrency"
	}
	return "capacity"
}

// Engine runs registered capacity and concurrency studies. Set Rec and Server; the rest is
// optional.
type Engine struct {
	Rec    Recorder
	Server string // llama-server
	Build  *llamacpp.Build
	Env    []string
	Hash   study.HashFunc // verifies model and prompt-plan files before the run (nil: skip)
	// DataDir is sparkbench's data folder; the default run folder is DataDir/runs/<study id>
	// (DataDir/runs/<id>.N when that one is taken).
	DataDir                             string
	StartTimeout, RequestTimeout, Grace time.Duration
	QualityCases                        string
	// Fresh never resumes: Run starts a new run folder even when the study's last run folder
	// could be resumed.
	Fresh bool
	// OnEvent sees every run event, synchronously, after the engine recorded it.
	OnEvent func(RunEvent)
}

// RunSummary is what Engine.Run did.
type RunSummary struct {
	StudyID     int64           `json:"study_id"`
	Status      string          `json:"status"`
	RunDir      string          `json:"run_dir"`
	StudySHA256 string          `json:"study_sha256,omitempty"`
	Legs        int             `json:"legs"`
	Verdicts    []study.Verdict `json:"verdicts"` // journaled by this run
	// Resumed: the run continued the study's last run folder; LifetimesKept and GuardsKept
	// finished before and were not run again (Legs counts only what this run recorded).
	Resumed       bool `json:"resumed,omitempty"`
	LifetimesKept int  `json:"lifetimes_kept,omitempty"`
	GuardsKept    int  `json:"guards_kept,omitempty"`
	// NotResumed says why the last run folder could not be resumed (a new one was started).
	NotResumed string `json:"not_resumed,omitempty"`
	// Incomplete lists the lifetimes without results of an incomplete run.
	Incomplete []IncompleteLifetime `json:"incomplete,omitempty"`
	Report     *RunReport           `json:"-"`
}

// ErrAlreadyAssembled refuses to run a study whose assembled result is already journaled.
var ErrAlreadyAssembled = errors.New("the study is complete: its assembled study.json is journaled")

// ErrBusy refuses to run a study one of whose legs is running: another process runs it (the
// notebook marks the legs of a dead process interrupted when it opens).
var ErrBusy = errors.New("the study is being run by another process")

// Run runs study id and records it. With outDir empty and Fresh unset, a study whose last run
// was stopped, halted or killed resumes in that run folder (RunSpec.Resume): the server
// lifetimes finished there are kept, the rest run (NoteResumed is journaled); when that folder
// cannot be resumed (gone, another plan, another build, …) a NotResumed event says why and a
// new folder is used. A new folder is outDir, else the default under DataDir. The error says
// why the run failed (a refused plan or folder is IsRefusal; ErrRunStopped or the context's
// error when ctx was cancelled; ErrBusy while another process runs the study); the study is
// then halted and the summary still says where the raw files are.
func (e *Engine) Run(ctx context.Context, id int64, outDir string) (*RunSummary, error) {
	rec := e.Rec
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := latestNote(st.Notes, NoteAssembled); ok {
		return nil, fmt.Errorf("study %d (%s): %w; `sparkbench capacity show %d` prints it", id, st.Name, ErrAlreadyAssembled, id)
	}
	p, err := Decode(fmt.Sprintf("study %d plan", id), st.PlanJSON)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	legs, err := rec.Legs(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, l := range legs {
		if l.State == "running" {
			return nil, fmt.Errorf("study %d (%s): %w: leg %d (%s) is running; wait for that run, or stop it", id, st.Name, ErrBusy, l.ID, l.Label)
		}
	}
	planFile, cleanup, err := planFileFor(st)
	if err != nil {
		return nil, refuse("%v", err)
	}
	defer cleanup()
	notResumed := ""
	if outDir == "" && !e.Fresh {
		if dir := lastRunDir(st.Notes); dir != "" {
			sum, err := e.runInto(ctx, st, p, planFile, dir, true, legs, "")
			if errors.Is(err, ErrBusy) && !sum.started {
				return nil, err // another process runs into that folder: nothing ran here
			}
			if !IsResumeError(err) || sum.started {
				return sum.RunSummary, err
			}
			var re *ResumeError
			errors.As(err, &re)
			notResumed = fmt.Sprintf("the last run folder %s cannot be resumed: %s", re.Dir, re.Why)
			if e.OnEvent != nil {
				e.OnEvent(RunEvent{Type: NotResumed, Progress: RunProgress{ETA: -1}, Error: notResumed})
			}
		}
	}
	if outDir == "" {
		if e.DataDir == "" {
			return nil, refuse("no run folder: give one (--out DIR)")
		}
		outDir = freeRunDir(filepath.Join(e.DataDir, "runs", strconv.FormatInt(id, 10)))
	}
	if outDir, err = filepath.Abs(outDir); err != nil {
		return nil, err
	}
	sum, err := e.runInto(ctx, st, p, planFile, outDir, false, legs, notResumed)
	return sum.RunSummary, err
}

// lastRunDir is the run folder of the study's last run ("" when it never started one).
func lastRunDir(notes []study.StoredNote) string {
	for i := len(notes) - 1; i >= 0; i-- {
		if k := notes[i].Kind; k != NoteRun && k != NoteResumed {
			continue
		}
		var n struct {
			RunDir string `json:"run_dir"`
		}
		if json.Unmarshal(notes[i].Payload, &n) == nil && n.RunDir != "" {
			return n.RunDir
		}
	}
	return ""
}

// runSummary is a RunSummary with whether the run got as far as starting (run_started).
type runSummary struct {
	*RunSummary
	started bool
}

// runInto runs the study into outDir (resuming it when resume is set) and records it.
// notResumed, when set, is why a resume of the last run folder was refused.
func (e *Engine) runInto(ctx context.Context, st StoredStudy, p *Plan, planFile, outDir string, resume bool, legs []StoredLeg, notResumed string) (runSummary, error) {
	rec, id := e.Rec, st.ID
	sum := &RunSummary{StudyID: id, RunDir: outDir, Verdicts: []study.Verdict{}, NotResumed: notResumed}
	runStart := time.Now()
	run := StartRun(ctx, RunSpec{PlanFile: planFile, Plan: p, Server: e.Server, OutDir: outDir, Resume: resume, Env: e.Env, Build: e.Build,
		StartTimeout: e.StartTimeout, RequestTimeout: e.RequestTimeout, Grace: e.Grace, Hash: e.Hash, QualityCases: e.QualityCases})
	rr := &runRecorder{e: e, ctx: context.WithoutCancel(ctx), study: id, plan: p, out: outDir, start: runStart,
		origins: map[string]time.Time{}, legs: map[string]int64{}, sinks: map[string]LegSink{}, attempts: map[string]int{}}
	for _, l := range legs {
		rr.attempts[legLifetime(l.Label)]++
	}
	started := false
	var held []RunEvent // a resume refused before it started shows nothing: a new run follows
	for ev := range run.Events() {
		if ev.Type == RunStarted && rr.err == nil {
			started = true
			rr.err = rec.SetStatus(rr.ctx, id, StatusRunning)
			if rr.err == nil {
				rr.err = rec.Note(rr.ctx, id, runNoteKind(ev), runNote(ev, outDir, st.PlanFile, runStart, notResumed))
			}
			if rs := ev.Resume; rs != nil {
				sum.Resumed, sum.LifetimesKept, sum.GuardsKept = true, len(rs.Lifetimes), len(rs.Guards)
				if rr.err == nil {
					rr.err = rr.recordKept(rs, folderLegs(st.Notes, legs, outDir))
				}
			}
		}
		rr.event(ev)
		if rr.err != nil {
			run.Stop() // the notebook failed: stop rather than run unrecorded
		}
		if e.OnEvent != nil {
			if resume && !started {
				held = append(held, ev)
				continue
			}
			e.OnEvent(ev)
		}
	}
	rep, runErr := run.Wait()
	if e.OnEvent != nil && (started || !IsResumeError(runErr)) {
		for _, ev := range held {
			e.OnEvent(ev)
		}
	}
	sum.Report = rep
	rr.closeOpen(runErr)
	sum.Legs = rr.count
	if rr.err != nil && runErr == nil {
		runErr = fmt.Errorf("notebook: %w", rr.err)
	} else if rr.err != nil {
		runErr = fmt.Errorf("%w (and the notebook: %v)", runErr, rr.err)
	}
	out := runSummary{sum, started}
	if ie, ok := IsIncomplete(runErr); ok && started && rr.err == nil {
		// Nothing is assembled in the notebook and no verdict journaled: a prediction is
		// decided once every lifetime has results.
		sum.Status, sum.Incomplete = StatusIncomplete, ie.Lifetimes
		note := map[string]any{"run_dir": outDir, "lifetimes": ie.Lifetimes, "total": ie.Total}
		if ie.Assembled {
			note["study_file"] = rep.Study
		}
		if err := rec.Note(rr.ctx, id, NoteIncomplete, note); err != nil {
			return out, err
		}
		if err := rec.SetStatus(rr.ctx, id, StatusIncomplete); err != nil {
			return out, err
		}
		return out, runErr
	}
	if runErr != nil {
		if !started {
			return out, runErr // refused before anything ran: the study stays as it was
		}
		sum.Status = StatusHalted
		nctx := context.WithoutCancel(ctx)
		_ = rec.Note(nctx, id, NoteHalted, map[string]any{"reason": runErr.Error(), "run_dir": outDir})
		_ = rec.SetStatus(nctx, id, StatusHalted)
		return out, runErr
	}
	res := rep.Result
	sum.StudySHA256 = rep.StudySHA
	if err := rec.Note(rr.ctx, id, NoteAssembled, AssembledNote{RunDir: outDir, StudyFile: rep.Study, StudySHA256: rep.StudySHA,
		PlanSHA256: res.PlanSHA256, Selected: selectedPoints(res)}); err != nil {
		return out, err
	}
	var err error
	if sum.Verdicts, err = journalVerdicts(rr.ctx, rec, id, st.Verdicts, res.Verdicts); err != nil {
		return out, err
	}
	sum.Status = StatusComplete
	return out, rec.SetStatus(rr.ctx, id, StatusComplete)
}

func runNoteKind(ev RunEvent) string {
	if ev.Resume != nil {
		return NoteResumed
	}
	return NoteRun
}

// runNote is the payload of the NoteRun or NoteResumed entry of a run that started.
func runNote(ev RunEvent, outDir, planFile string, at time.Time, notResumed string) map[string]any {
	if rs := ev.Resume; rs != nil {
		cleared := rs.Cleared
		if cleared == nil {
			cleared = []string{}
		}
		return map[string]any{"run_dir": outDir, "plan_file": planFile, "resumed_at": at.UTC().Format(time.RFC3339Nano),
			"lifetimes_skipped": len(rs.Lifetimes), "lifetimes_total": ev.Progress.LifetimesTotal, "guards_skipped": len(rs.Guards),
			"rerun": cleared, "previous": rs.Previous}
	}
	n := map[string]any{"run_dir": outDir, "plan_file": planFile, "started_at": at.UTC().Format(time.RFC3339Nano)}
	if notResumed != "" {
		n["not_resumed"] = notResumed
	}
	return n
}

// legLifetime is the lifetime key of a leg label: "PASS/CANDIDATE/pP", or that with
// " (attempt N)" when the lifetime was run more than once.
func legLifetime(label string) string {
	if i := strings.Index(label, " (attempt "); i >= 0 {
		return label[:i]
	}
	return label
}

// journalVerdicts journals every verdict not journaled yet (a verdict is journaled once).
func journalVerdicts(ctx context.Context, rec Recorder, id int64, have map[string]study.StoredVerdict, vs []study.Verdict) ([]study.Verdict, error) {
	out := []study.Verdict{}
	for _, v := range vs {
		if _, done := have[v.Prediction]; done || v.Outcome == study.Pending {
			continue
		}
		if err := rec.RecordVerdict(ctx, id, v); err != nil {
			return out, fmt.Errorf("journal verdict %s: %w", v.Prediction, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// AssembledNote is the payload of the NoteAssembled journal entry.
type AssembledNote struct {
	RunDir      string          `json:"run_dir"`    // absolute
	StudyFile   string          `json:"study_file"` // relative to RunDir
	StudySHA256 string          `json:"study_sha256"`
	PlanSHA256  string          `json:"plan_sha256"`
	Selected    []SelectedPoint `json:"selected"`
}

// SelectedPoint is one candidate's selected operating point (nil fields: none selected).
type SelectedPoint struct {
	Candidate      string   `json:"candidate"`
	Slots          *int     `json:"slots"`
	Clients        *int     `json:"clients"`
	GenerationRate *float64 `json:"generation_rate"`
	Gain           *float64 `json:"gain_vs_base"`
	BaseSlots      int      `json:"base_slots"`
	BaseClients    int      `json:"base_clients"`
	Note           string   `json:"note,omitempty"`
}

// SelectedPoints are r's selected operating points as the NoteAssembled entry journals them
// (receipts hold a bundle's re-assembled result to the journaled entry).
func SelectedPoints(r *Result) []SelectedPoint { return selectedPoints(r) }

func selectedPoints(r *Result) []SelectedPoint {
	out := []SelectedPoint{}
	for _, c := range r.Candidates {
		sp := SelectedPoint{Candidate: c.ID, BaseSlots: c.Base.Slots, BaseClients: c.Base.Clients, Note: c.SelectionNote}
		if s := c.Selected; s != nil {
			slots, clients, rate := s.Slots, s.Clients, s.GenerationRate
			sp.Slots, sp.Clients, sp.GenerationRate, sp.Gain = &slots, &clients, &rate, s.Gain
		}
		out = append(out, sp)
	}
	return out
}

func latestNote(notes []study.StoredNote, kind string) (study.StoredNote, bool) {
	for i := len(notes) - 1; i >= 0; i-- {
		if notes[i].Kind == kind {
			return notes[i], true
		}
	}
	return study.StoredNote{}, false
}

// freeRunDir is dir when it is absent or empty, else the first free dir.N (N from 2).
func freeRunDir(dir string) string {
	free := func(d string) bool {
		ents, err := os.ReadDir(d)
		return err != nil && errors.Is(err, os.ErrNotExist) || err == nil && len(ents) == 0
	}
	if free(dir) {
		return dir
	}
	for n := 2; ; n++ {
		if d := fmt.Sprintf("%s.%d", dir, n); free(d) {
			return d
		}
	}
}

// planFileFor is a plan file in the registered plan's folder whose plan hashes to the
// registered SHA-256: the registered file itself when it still does, else the frozen
// canonical plan written to a temporary file there (removed by cleanup).
func planFileFor(st StoredStudy) (string, func(), error) {
	nop := func() {}
	if st.PlanFile != "" {
		if p, err := Load(st.PlanFile); err == nil {
			p.Defaults()
			if sum, _, err := p.SHA256(); err == nil && sum == st.PlanSHA256 {
				return st.PlanFile, nop, nil
			}
		}
	}
	if st.PlanDir == "" {
		return "", nop, fmt.Errorf("study %d: the notebook does not say which folder the plan's paths are relative to", st.ID)
	}
	f, err := os.CreateTemp(st.PlanDir, ".sparkbench-capacity-plan-*.json")
	if err != nil {
		return "", nop, fmt.Errorf("write the frozen plan next to its files: %v", err)
	}
	_, werr := f.Write(append(append([]byte{}, st.PlanJSON...), '\n'))
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(f.Name())
		return "", nop, fmt.Errorf("write the frozen plan: %v", errors.Join(werr, cerr))
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// runRecorder turns run events into notebook legs.
type runRecorder struct {
	e       *Engine
	ctx     context.Context
	study   int64
	plan    *Plan
	out     string
	start   time.Time
	origins map[string]time.Time // pass -> clock origin
	legs    map[string]int64     // open legs by lifetime key
	sinks   map[string]LegSink
	// attempts counts the legs recorded per lifetime key (earlier runs included): a lifetime
	// run again is labelled "KEY (attempt N)".
	attempts map[string]int
	count    int
	err      error
}

func (rr *runRecorder) event(ev RunEvent) {
	if rr.err != nil {
		return
	}
	switch ev.Type {
	case LifetimeStarted:
		if k, err := ParseLifetimeKey(ev.Lifetime); err == nil {
			if !ev.Origin.IsZero() {
				rr.origins[k.Pass] = ev.Origin // the pass's recorded origin (kept on resume)
			} else if _, ok := rr.origins[k.Pass]; !ok {
				rr.origins[k.Pass] = rr.start.Add(ev.T)
			}
		}
	case ServerReady, ServerFailed:
		rr.err = rr.startLeg(ev, nil)
	case LifetimeDone:
		why := ""
		if ev.Error != "" {
			why = ev.Error + "; the study's next run measures this lifetime again"
		}
		rr.err = rr.finishLeg(ev.Lifetime, ev.Server, why, ev.NoResults)
	}
}

func (rr *runRecorder) startLeg(ev RunEvent, extra map[string]any) error {
	k, err := ParseLifetimeKey(ev.Lifetime)
	if err != nil {
		return err
	}
	cand, _ := rr.plan.Candidate(k.Candidate)
	argv := []string{}
	detail := map[string]any{"pass": k.Pass, "candidate": k.Candidate, "slots": k.Slots,
		"clients": rr.plan.ClientLevels(k.Slots), "run_dir": rr.out, "files": lifetimeDir(k)}
	if cand.Arm != "" {
		detail["arm"] = cand.Arm
	}
	for k, v := range extra {
		detail[k] = v
	}
	if s := ev.Server; s != nil {
		argv = append(argv, s.Argv...)
		detail["port"], detail["pid"], detail["ready_ms"] = s.Port, s.Pid, s.ReadyIn.Milliseconds()
	}
	if len(argv) == 0 {
		for _, lt := range Schedule(rr.plan, "") {
			if lt.Key == k {
				argv = append([]string{rr.e.Server}, lt.Args...)
			}
		}
	}
	label := ev.Lifetime
	rr.attempts[ev.Lifetime]++
	if n := rr.attempts[ev.Lifetime]; n > 1 {
		label = fmt.Sprintf("%s (attempt %d)", ev.Lifetime, n)
		detail["attempt"] = n
	}
	id, sink, err := rr.e.Rec.StartLeg(rr.ctx, LegStart{StudyID: rr.study, Label: label, Argv: argv, Detail: detail})
	if err != nil {
		return err
	}
	rr.legs[ev.Lifetime], rr.sinks[ev.Lifetime] = id, sink
	rr.count++
	return nil
}

// finishLeg adds the lifetime's request records and server log (read back from the run
// folder, the assembly's own inputs) and finishes its leg. why, when set, is the run's end
// (the lifetime did not finish normally).
func (rr *runRecorder) finishLeg(key string, srv *RunServer, why, noResults string) error {
	id, ok := rr.legs[key]
	if !ok {
		return nil
	}
	delete(rr.legs, key)
	k, err := ParseLifetimeKey(key)
	if err != nil {
		return err
	}
	dir := filepath.Join(rr.out, lifetimeDir(k))
	var errs []error
	if data, err := os.ReadFile(filepath.Join(dir, RunRequestsFile)); err == nil {
		if f, err := ReadRequests(key, data); err == nil {
			cand, _ := rr.plan.Candidate(k.Candidate)
			origin, ok := rr.origins[k.Pass]
			if !ok {
				origin = rr.start
			}
			if len(f.Records) > 0 {
				errs = append(errs, rr.sinks[key].AddRequests(LegRequests{Key: k, Arm: cand.Arm, Origin: origin,
					NPredict: rr.plan.NPredict, Records: f.Records}))
			}
		} else if why == "" {
			errs = append(errs, err)
		}
	}
	delete(rr.sinks, key)
	end := LegEnd{Class: "ok"}
	if srv != nil {
		end.Class, end.Reason = legClass(srv)
		if srv.RSS != nil {
			end.PeakRSSBytes = srv.RSS.KiB * 1024
		}
	}
	if end.Class == "ok" && noResults != "" {
		// The server was fine, but no measured request completed: not an ok lifetime.
		end.Class, end.Reason = "incomplete", noResults
	}
	if why != "" {
		end.Class, end.Reason = "halted", why
	}
	end.Transcript, _ = os.ReadFile(filepath.Join(dir, RunServerLogFile))
	errs = append(errs, rr.e.Rec.FinishLeg(rr.ctx, id, end))
	return errors.Join(errs...)
}

// legClass is the leg's outcome class: "ok" for a server the run stopped after its cells,
// else the lifetime's own class (crash, oom, start failure, …) with its reason.
func legClass(s *RunServer) (class, reason string) {
	if s.Class == "" || s.Class == "stopped_by_user" && !s.Unexpect {
		reason = "stopped by the run after its client levels"
		if s.Escalated {
			reason += " (SIGKILL was needed)"
		}
		return "ok", reason
	}
	reason = s.Reason
	if s.Unexpect {
		reason = "llama-server ended on its own: " + reason
	}
	return s.Class, reason
}

// folderLegs are the legs recorded for the run folder dir: those started since the study's
// last NoteRun for dir (a later run of another folder would have made that one the last).
func folderLegs(notes []study.StoredNote, legs []StoredLeg, dir string) []StoredLeg {
	var since time.Time
	found := false
	for _, n := range notes {
		var p struct {
			RunDir string `json:"run_dir"`
		}
		if n.Kind == NoteRun && json.Unmarshal(n.Payload, &p) == nil && p.RunDir == dir {
			since, found = n.At, true
		}
	}
	var out []StoredLeg
	for _, l := range legs {
		if found && !l.StartedAt.Before(since) {
			out = append(out, l)
		}
	}
	return out
}

// recordKept records the lifetimes a resumed run keeps that the notebook has no finished leg
// for in this run folder (the process that ran them died before it recorded them): their legs
// are made now from run.json and the lifetime's files, as their end would have made them.
func (rr *runRecorder) recordKept(rs *RunResume, legs []StoredLeg) error {
	have := map[string]bool{}
	for _, l := range legs {
		if l.State == "finished" && l.Class != "halted" {
			have[legLifetime(l.Label)] = true
		}
	}
	var missing []string
	for _, k := range rs.Lifetimes {
		if !have[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(rr.out, RunManifestFile))
	if err != nil {
		return err
	}
	var rep RunReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", RunManifestFile, err)
	}
	for _, key := range missing {
		i := slices.IndexFunc(rep.Lifetimes, func(rl RunLifetime) bool { return rl.Key == key })
		k, err := ParseLifetimeKey(key)
		if i < 0 || err != nil {
			continue
		}
		srv := rep.Lifetimes[i].Server
		if _, ok := rr.origins[k.Pass]; !ok {
			rr.origins[k.Pass] = rep.PassOrigins[k.Pass]
		}
		if err := rr.startLeg(RunEvent{Type: ServerReady, Lifetime: key, Server: &srv},
			map[string]any{"recorded_on_resume": "the run that measured it ended before the notebook recorded it"}); err != nil {
			return err
		}
		if err := rr.finishLeg(key, &srv, "", rep.Lifetimes[i].NoResults); err != nil {
			return err
		}
	}
	return nil
}

// closeOpen finishes legs whose lifetime never reported its end (Stop, an I/O failure).
func (rr *runRecorder) closeOpen(runErr error) {
	why := "the run ended before this lifetime finished"
	if runErr != nil {
		why += ": " + runErr.Error()
	}
	for key := range rr.legs {
		if err := rr.finishLeg(key, nil, why, ""); err != nil && rr.err == nil {
			rr.err = err
		}
	}
}

// AssembledStudy is a study's assembled result as the notebook vouches for it.
type AssembledStudy struct {
	Note AssembledNote `json:"note"`
	// Path is the study.json read; FileSHA256 what it hashes to now ("" when unreadable).
	Path       string `json:"path"`
	FileSHA256 string `json:"file_sha256"`
	// Problem says why the file is not trusted (missing, SHA-256 mismatch, unreadable);
	// Result is nil then.
	Problem string  `json:"problem,omitempty"`
	Result  *Result `json:"-"`
}

// ErrNotAssembled: the study has no journaled assembled result (not run, or halted).
var ErrNotAssembled = errors.New("no assembled result is journaled for this study (run it: `sparkbench capacity run ID`)")

// LoadAssembled reads the assembled capacity.Result of study id: the run folder and
// SHA-256 journaled as NoteAssembled, and the study.json there, which must hash to that
// SHA-256. A file that is missing or differs is reported in AssembledStudy.Problem (Result nil),
// never trusted; ErrNotAssembled when nothing was journaled. For plots (envelope, slots,
// latency), receipts and the GUI:
//
//	a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, id)
//	if err == nil && a.Result != nil { … a.Result.Candidates … }
func LoadAssembled(ctx context.Context, rec Recorder, id int64) (*AssembledStudy, error) {
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	return loadAssembled(st)
}

func loadAssembled(st StoredStudy) (*AssembledStudy, error) {
	n, ok := latestNote(st.Notes, NoteAssembled)
	if !ok {
		return nil, ErrNotAssembled
	}
	a := &AssembledStudy{}
	if err := json.Unmarshal(n.Payload, &a.Note); err != nil {
		return nil, fmt.Errorf("journal %s: %w", NoteAssembled, err)
	}
	file := a.Note.StudyFile
	if file == "" {
		file = RunStudyFile
	}
	a.Path = filepath.Join(a.Note.RunDir, file)
	data, err := os.ReadFile(a.Path)
	if err != nil {
		a.Problem = fmt.Sprintf("study.json cannot be read: %v", err)
		return a, nil
	}
	a.FileSHA256 = canon.SHA256Hex(data)
	if a.FileSHA256 != a.Note.StudySHA256 {
		a.Problem = fmt.Sprintf("%s hashes to %s, not the journaled %s: it changed after the run; not trusted", a.Path, a.FileSHA256, a.Note.StudySHA256)
		return a, nil
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		a.Problem = fmt.Sprintf("%s: %v", a.Path, err)
		return a, nil
	}
	a.Result = &res
	return a, nil
}
