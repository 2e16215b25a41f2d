package caprun

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

	"sparkbench/app/capacity"
	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/app/study/rpclife"
	"sparkbench/runner/llamacpp"
)

// Engine runs registered capacity and concurrency studies. Set Rec and Server; the rest is
// optional.
type Engine struct {
	Rec    capacity.Recorder
	Server string // llama-server
	Build  *llamacpp.Build
	Env    []string
	Hash   study.HashFunc // verifies model and prompt-plan files before the run (nil: skip)
	// DataDir is sparkbench's data folder; the default run folder is DataDir/runs/<study id>
	// (DataDir/runs/<id>.N when that one is taken).
	DataDir                             string
	StartTimeout, RequestTimeout, Grace time.Duration
	QualityCases                        string
	// Batched is candidate ID -> llama-batched-bench output, for the server tax (RunSpec.Batched).
	Batched map[string]string
	// Fresh never resumes: Run starts a new run folder even when the study's last run folder
	// could be resumed.
	Fresh bool
	// OnEvent sees every run event, synchronously, after the engine recorded it.
	OnEvent func(capacity.RunEvent)
	// Telemetry samples each server lifetime (RunSpec.Telemetry; nil: none).
	Telemetry energy.SpanHook
	// Host runs every llama-server on a bench host (RunSpec.Host; nil: here).
	Host *RemoteHost
	// RPCHosts reads the hosts file the plan's rpc_servers name (RunSpec.RPCHosts; nil:
	// $SPARKBENCH_HOSTS, else the user's hosts.json).
	RPCHosts rpclife.HostsLoader
	// Leased says the caller holds the study's run lease (Rec.Lease) for the whole run, and
	// for what it does after it (the KV quality check); unset, Run takes it itself.
	Leased bool
}

// Run runs study id and records it. With outDir empty and Fresh unset, a study whose last run
// was stopped, halted or killed resumes in that run folder (RunSpec.Resume): the server
// lifetimes finished there are kept, the rest run (NoteResumed is journaled); when that folder
// cannot be resumed (gone, another plan, another build, …) a NotResumed event says why and a
// new folder is used. A new folder is outDir, else the default under DataDir. The error says
// why the run failed (a refused plan or folder is IsRefusal; capacity.ErrRunStopped or the context's
// error when ctx was cancelled; ErrBusy while another process runs the study); the study is
// then halted and the summary still says where the raw files are.
func (e *Engine) Run(ctx context.Context, id int64, outDir string) (*capacity.RunSummary, error) {
	rec := e.Rec
	// One run per study at a time: the lease is taken before the study is read, so what this
	// run reads (its notes, the lifetimes finished) is not another run's past.
	if !e.Leased {
		release, err := rec.Lease(ctx, id)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	st, err := rec.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := capacity.LatestNote(st.Notes, capacity.NoteAssembled); ok {
		return nil, fmt.Errorf("study %d (%s): %w; `sparkbench capacity show %d` prints it", id, st.Name, capacity.ErrAlreadyAssembled, id)
	}
	p, err := capacity.Decode(fmt.Sprintf("study %d plan", id), st.PlanJSON)
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
			return nil, fmt.Errorf("study %d (%s): %w: leg %d (%s) is running; wait for that run, or stop it", id, st.Name, capacity.ErrBusy, l.ID, l.Label)
		}
	}
	planFile, cleanup, err := planFileFor(st)
	if err != nil {
		return nil, capacity.Refuse("%v", err)
	}
	defer cleanup()
	notResumed := ""
	if outDir == "" && !e.Fresh {
		if dir := lastRunDir(st.Notes); dir != "" {
			sum, err := e.runInto(ctx, st, p, planFile, dir, true, legs, "")
			if errors.Is(err, capacity.ErrBusy) && !sum.started {
				return nil, err // another process runs into that folder: nothing ran here
			}
			if !capacity.IsResumeError(err) || sum.started {
				return sum.RunSummary, err
			}
			var re *capacity.ResumeError
			errors.As(err, &re)
			notResumed = fmt.Sprintf("the last run folder %s cannot be resumed: %s", re.Dir, re.Why)
			if e.OnEvent != nil {
				e.OnEvent(capacity.RunEvent{Type: capacity.NotResumed, Progress: capacity.RunProgress{ETA: -1}, Error: notResumed})
			}
		}
	}
	if outDir == "" {
		if e.DataDir == "" {
			return nil, capacity.Refuse("no run folder: give one (--out DIR)")
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
		if k := notes[i].Kind; k != capacity.NoteRun && k != capacity.NoteResumed {
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

// runSummary is a capacity.RunSummary with whether the run got as far as starting (run_started).
type runSummary struct {
	*capacity.RunSummary
	started bool
}

// runInto runs the study into outDir (resuming it when resume is set) and records it.
// notResumed, when set, is why a resume of the last run folder was refused.
func (e *Engine) runInto(ctx context.Context, st capacity.StoredStudy, p *capacity.Plan, planFile, outDir string, resume bool, legs []capacity.StoredLeg, notResumed string) (runSummary, error) {
	rec, id := e.Rec, st.ID
	sum := &capacity.RunSummary{StudyID: id, RunDir: outDir, Verdicts: []study.Verdict{}, NotResumed: notResumed}
	runStart := time.Now()
	run := StartRun(ctx, RunSpec{PlanFile: planFile, Plan: p, Server: e.Server, OutDir: outDir, Resume: resume, Env: e.Env, Build: e.Build,
		StartTimeout: e.StartTimeout, RequestTimeout: e.RequestTimeout, Grace: e.Grace, Hash: e.Hash, QualityCases: e.QualityCases, Batched: e.Batched,
		Telemetry: e.Telemetry, Host: e.Host, RPCHosts: e.RPCHosts})
	rr := &runRecorder{e: e, ctx: context.WithoutCancel(ctx), study: id, plan: p, out: outDir, start: runStart,
		origins: map[string]time.Time{}, legs: map[string]int64{}, sinks: map[string]capacity.LegSink{}, attempts: map[string]int{},
		dirs: capacity.LifetimeDirs{}}
	for _, l := range legs {
		rr.attempts[legLifetime(l.Label)]++
	}
	started := false
	var held []capacity.RunEvent // a resume refused before it started shows nothing: a new run follows
	for ev := range run.Events() {
		if ev.Type == capacity.RunStarted && rr.err == nil {
			started = true
			rr.err = rec.SetStatus(rr.ctx, id, capacity.StatusRunning)
			if rr.err == nil {
				note := runNote(ev, outDir, st.PlanFile, runStart, notResumed)
				if ss := energy.Statuses(e.Telemetry); ss != nil { // which samplers read, and why the others did not
					note["samplers"] = ss
				}
				rr.err = rec.Note(rr.ctx, id, runNoteKind(ev), note)
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
	if e.OnEvent != nil && (started || !capacity.IsResumeError(runErr)) {
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
	if ie, ok := capacity.IsIncomplete(runErr); ok && started && rr.err == nil {
		// Nothing is assembled in the notebook and no verdict journaled: a prediction is
		// decided once every lifetime has results.
		sum.Status, sum.Incomplete = capacity.StatusIncomplete, ie.Lifetimes
		note := map[string]any{"run_dir": outDir, "lifetimes": ie.Lifetimes, "total": ie.Total}
		if ie.Assembled {
			note["study_file"] = rep.Study
		}
		if err := rec.Note(rr.ctx, id, capacity.NoteIncomplete, note); err != nil {
			return out, err
		}
		if err := rec.SetStatus(rr.ctx, id, capacity.StatusIncomplete); err != nil {
			return out, err
		}
		return out, runErr
	}
	if runErr != nil {
		if !started {
			return out, runErr // refused before anything ran: the study stays as it was
		}
		sum.Status = capacity.StatusHalted
		nctx := context.WithoutCancel(ctx)
		_ = rec.Note(nctx, id, capacity.NoteHalted, map[string]any{"reason": runErr.Error(), "run_dir": outDir})
		_ = rec.SetStatus(nctx, id, capacity.StatusHalted)
		return out, runErr
	}
	res := rep.Result
	sum.StudySHA256 = rep.StudySHA
	if err := rec.Note(rr.ctx, id, capacity.NoteAssembled, capacity.AssembledNote{RunDir: outDir, StudyFile: rep.Study, StudySHA256: rep.StudySHA,
		PlanSHA256: res.PlanSHA256, Selected: capacity.SelectedPoints(res)}); err != nil {
		return out, err
	}
	if v := capacity.Validity(res); v != nil { // a serving plan: what each probe's validity checks caught
		if err := rec.Note(rr.ctx, id, capacity.NoteValidity, v); err != nil {
			return out, err
		}
	}
	var err error
	if sum.Verdicts, err = journalVerdicts(rr.ctx, rec, id, st.Verdicts, res.Verdicts); err != nil {
		return out, err
	}
	sum.Status = capacity.StatusComplete
	return out, rec.SetStatus(rr.ctx, id, capacity.StatusComplete)
}

func runNoteKind(ev capacity.RunEvent) string {
	if ev.Resume != nil {
		return capacity.NoteResumed
	}
	return capacity.NoteRun
}

// runNote is the payload of the NoteRun or NoteResumed entry of a run that started.
func runNote(ev capacity.RunEvent, outDir, planFile string, at time.Time, notResumed string) map[string]any {
	if rs := ev.Resume; rs != nil {
		rerun := append(append([]string{}, rs.Kept...), rs.Cleared...) // folders run again: kept beside, or emptied
		return map[string]any{"run_dir": outDir, "plan_file": planFile, "resumed_at": at.UTC().Format(time.RFC3339Nano),
			"lifetimes_skipped": len(rs.Lifetimes), "lifetimes_total": ev.Progress.LifetimesTotal, "guards_skipped": len(rs.Guards),
			"rerun": rerun, "previous": rs.Previous}
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
func journalVerdicts(ctx context.Context, rec capacity.Recorder, id int64, have map[string]study.StoredVerdict, vs []study.Verdict) ([]study.Verdict, error) {
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
func planFileFor(st capacity.StoredStudy) (string, func(), error) {
	nop := func() {}
	if st.PlanFile != "" {
		if p, err := capacity.Load(st.PlanFile); err == nil {
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
	plan    *capacity.Plan
	out     string
	start   time.Time
	origins map[string]time.Time // pass -> clock origin
	legs    map[string]int64     // open legs by lifetime key
	sinks   map[string]capacity.LegSink
	// attempts counts the legs recorded per lifetime key (earlier runs included): a lifetime
	// run again is labelled "KEY (attempt N)".
	attempts map[string]int
	// dirs are the folders the lifetimes' current attempts write into (lifetime_started's Dir,
	// run.json's for a lifetime recorded on resume).
	dirs  capacity.LifetimeDirs
	count int
	err   error
}

func (rr *runRecorder) event(ev capacity.RunEvent) {
	if rr.err != nil {
		return
	}
	switch ev.Type {
	case capacity.LifetimeStarted:
		rr.setDir(ev.Lifetime, ev.Dir)
		if k, err := capacity.ParseLifetimeKey(ev.Lifetime); err == nil {
			if !ev.Origin.IsZero() {
				rr.origins[k.Pass] = ev.Origin // the pass's recorded origin (kept on resume)
			} else if _, ok := rr.origins[k.Pass]; !ok {
				rr.origins[k.Pass] = rr.start.Add(ev.T)
			}
		}
	case capacity.ServerReady, capacity.ServerFailed:
		rr.err = rr.startLeg(ev, nil)
	case capacity.RPCServerEvent:
		rr.err = rr.e.Rec.Note(rr.ctx, rr.study, capacity.NoteRPCServer, ev.RPC)
	case capacity.RPCSplitEvent:
		rr.err = rr.e.Rec.Note(rr.ctx, rr.study, capacity.NoteRPCSplit, capacity.RPCSplitNote{Lifetime: ev.Lifetime, LifetimeRPC: *ev.RPCSplit})
	case capacity.LifetimeDone:
		why := ""
		if ev.Error != "" {
			why = ev.Error + "; the study's next run measures this lifetime again"
		}
		rr.err = rr.finishLeg(ev.Lifetime, ev.Server, why, ev.NoResults)
		if s := ev.Server; rr.err == nil && s != nil && s.Network != nil {
			rr.err = rr.e.Rec.Note(rr.ctx, rr.study, capacity.NoteNetwork, map[string]any{"lifetime": ev.Lifetime, "network": s.Network})
		}
	}
}

// origin is the clock origin of pass: the one its lifetimes' request times count from.
func (rr *runRecorder) origin(pass string) time.Time {
	if o, ok := rr.origins[pass]; ok {
		return o
	}
	return rr.start
}

// setDir notes the folder (run-folder relative, slash separated; "": its first attempt's) that
// lifetime key's current attempt writes into.
func (rr *runRecorder) setDir(key, dir string) {
	if dir == "" {
		delete(rr.dirs, key)
		return
	}
	rr.dirs[key] = dir
}

func (rr *runRecorder) startLeg(ev capacity.RunEvent, extra map[string]any) error {
	k, err := capacity.ParseLifetimeKey(ev.Lifetime)
	if err != nil {
		return err
	}
	cand, _ := rr.plan.Candidate(k.Candidate)
	argv := []string{}
	// pass_origin: the clock the leg's request rows are timed on (a resumed run may start the
	// pass on a new one; the leg's rows stay on this one).
	detail := map[string]any{"pass": k.Pass, "candidate": k.Candidate, "slots": k.Slots,
		"clients": rr.plan.ClientLevels(k.Slots), "run_dir": rr.out, "files": filepath.FromSlash(rr.dirs.Of(k)),
		"pass_origin": rr.origin(k.Pass).UTC().Format(time.RFC3339Nano)}
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
		for _, lt := range capacity.Schedule(rr.plan, "") {
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
	id, sink, err := rr.e.Rec.StartLeg(rr.ctx, capacity.LegStart{StudyID: rr.study, Label: label, Argv: argv, Detail: detail})
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
func (rr *runRecorder) finishLeg(key string, srv *capacity.RunServer, why, noResults string) error {
	id, ok := rr.legs[key]
	if !ok {
		return nil
	}
	delete(rr.legs, key)
	k, err := capacity.ParseLifetimeKey(key)
	if err != nil {
		return err
	}
	dir := filepath.Join(rr.out, filepath.FromSlash(rr.dirs.Of(k)))
	var errs []error
	if data, err := os.ReadFile(filepath.Join(dir, capacity.RunRequestsFile)); err == nil {
		if f, err := capacity.ReadRequests(key, data); err == nil {
			cand, _ := rr.plan.Candidate(k.Candidate)
			if len(f.Records) > 0 {
				errs = append(errs, rr.sinks[key].AddRequests(capacity.LegRequests{Key: k, Arm: cand.Arm, Origin: rr.origin(k.Pass),
					NPredict: rr.plan.NPredict, Records: f.Records}))
			}
		} else if why == "" {
			errs = append(errs, err)
		}
	}
	delete(rr.sinks, key)
	end := capacity.LegEnd{Class: "ok"}
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
	end.Transcript, _ = os.ReadFile(filepath.Join(dir, capacity.RunServerLogFile))
	errs = append(errs, rr.e.Rec.FinishLeg(rr.ctx, id, end))
	return errors.Join(errs...)
}

// legClass is the leg's outcome class: "ok" for a server the run stopped after its cells,
// else the lifetime's own class (crash, oom, start failure, …) with its reason.
func legClass(s *capacity.RunServer) (class, reason string) {
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
func folderLegs(notes []study.StoredNote, legs []capacity.StoredLeg, dir string) []capacity.StoredLeg {
	var since time.Time
	found := false
	for _, n := range notes {
		var p struct {
			RunDir string `json:"run_dir"`
		}
		if n.Kind == capacity.NoteRun && json.Unmarshal(n.Payload, &p) == nil && p.RunDir == dir {
			since, found = n.At, true
		}
	}
	var out []capacity.StoredLeg
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
func (rr *runRecorder) recordKept(rs *capacity.RunResume, legs []capacity.StoredLeg) error {
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
	data, err := os.ReadFile(filepath.Join(rr.out, capacity.RunManifestFile))
	if err != nil {
		return err
	}
	var rep capacity.RunReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", capacity.RunManifestFile, err)
	}
	for _, key := range missing {
		i := slices.IndexFunc(rep.Lifetimes, func(rl capacity.RunLifetime) bool { return rl.Key == key })
		k, err := capacity.ParseLifetimeKey(key)
		if i < 0 || err != nil {
			continue
		}
		srv := rep.Lifetimes[i].Server
		rr.setDir(key, filepath.ToSlash(rep.Lifetimes[i].Dir))
		if _, ok := rr.origins[k.Pass]; !ok {
			rr.origins[k.Pass] = rep.PassOrigins[k.Pass]
		}
		if err := rr.startLeg(capacity.RunEvent{Type: capacity.ServerReady, Lifetime: key, Server: &srv},
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
