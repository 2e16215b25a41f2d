package studyrun

import (
	"context"
	"fmt"

	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner"
)

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
	if err := r.noteLaunch(wctx, res, id, label); err != nil {
		return id, err
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
	halted  *runner.QueueStatus
	results int // rows that counted or were flagged (0: the attempt ended without results)
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
	started := study.Event{Kind: study.EventLegStarted, Leg: event, LegID: legID, Role: ls.Role, Attempt: ls.Attempt, Argv: ls.Argv}
	if ls.Role == study.RoleLeg {
		started.Chunk = r.chunk // an adaptive leg's chunk: the round and the leg's repetitions
	}
	r.emit(started)

	wctx := context.WithoutCancel(ctx)
	var tel energy.LegRun
	if e.Telemetry != nil && ls.Role == study.RoleLeg {
		tel = e.Telemetry.Begin(ctx, legID)
	}
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
			if tel != nil {
				tel.Row()
			}
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
				name, code := "cv:"+f.Test, "cv_above_limit"
				if f.Gate == "device" {
					name, code = "device:"+spec.DeviceGate.Want, f.Code
				}
				if err := e.Rec.RecordGate(wctx, study.GateRecord{StudyID: l.St.ID, LegID: legID, Name: name, Code: code,
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
	end := legEnd(res, status)
	if err := r.legGates(wctx, tel, res, ls, legID, &end); err != nil && addErr == nil {
		addErr = err
	}
	if err := r.noteLaunch(wctx, res, legID, ls.Label); err != nil && addErr == nil {
		addErr = err
	}
	st.out = study.LegOutcome{Class: end.Class, Reason: end.Reason, Rows: int(n), Expected: expected, Duration: res.Exit.Duration}
	for _, s := range end.RowStatus {
		switch runner.RowStatus(s) {
		case runner.RowResult:
			st.out.Results++
		case runner.RowFlagged:
			st.out.Flagged++
		default:
			st.out.Discarded++
		}
	}
	if err := e.Rec.FinishLeg(wctx, legID, end); err != nil {
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
// With a chunk (adaptive repetitions), it runs that chunk of the leg: its own -r, its label
// and detail; the leg is not done until the stopping rule says so.
func (r *run) runLeg(ctx context.Context, lp study.LegPlan, chunk *chunkRun) (legRun, error) {
	e, l := r.e, r.l
	if h := r.modelBeforeLeg(lp); h != nil {
		return legRun{halted: h}, nil
	}
	var attempt int
	var label string
	args := lp.Args
	if chunk != nil {
		attempt, label, args = chunk.attempt, chunk.label(lp.ID), chunk.args(lp.Args)
	} else {
		attempt = r.attempts[lp.ID] + 1
		r.attempts[lp.ID] = attempt
		label = lp.ID
		if attempt > 1 {
			label = fmt.Sprintf("%s (attempt %d)", lp.ID, attempt)
		}
	}
	spec := runner.LegSpec{ID: lp.ID, Bench: e.Bench, Args: args, Env: lp.Env, CVGate: r.gate(), Wrapper: l.Plan.Build.LaunchWrapper}
	if chunk != nil {
		// A chunk's spread is what the stopping rule measures and answers with more chunks.
		spec.CVGate = runner.CVGate{Off: true}
	}
	if lp.Device != "" && lp.Device != "none" && lp.Device != "auto" {
		spec.DeviceGate = &runner.DeviceGate{Want: lp.Device}
	}
	var artefact int64
	if len(lp.Models) == 1 {
		artefact = r.artefacts[lp.Models[0]]
	}
	detail := map[string]any{"plan_sha256": l.St.PlanSHA256, "expected_rows": lp.ExpectedRows}
	if lp.Repeat != "" {
		detail["repeat"], detail["of"] = lp.Repeat, lp.Of
	}
	if chunk != nil {
		detail["chunk"], detail["round"], detail["reps"] = chunk.chunk, chunk.round, chunk.reps
		r.chunk = chunk.progress()
		defer func() { r.chunk = nil }()
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
	if h := r.rpcHalt(); h != nil && st.halted == nil {
		st.halted = h // a ggml-rpc-server ended during the leg
	}
	if h := r.modelHalted; h != nil && st.halted == nil {
		st.halted = h // the leg ran on another file than the one the run read
	}
	delete(l.Reopened, lp.ID) // a forced attempt ended: the leg is final again if it failed again
	ended := st.results[0].Exit.Class != runner.ClassStoppedByUser
	if ended && chunk == nil {
		r.done[lp.ID] = true
		r.progress.LegsDone++
	}
	if ended {
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
	return legRun{halted: st.halted, results: st.out.Results + st.out.Flagged}, nil
}

// legGates runs the gates checked once a leg has ended: the machine-state gates, then the RPC
// topology's (rpcGates).
func (r *run) legGates(ctx context.Context, tel energy.LegRun, res *runner.LegResult, ls study.LegStart, legID int64, end *study.LegEnd) error {
	if err := r.telemetryGates(ctx, tel, legID, end); err != nil {
		return err
	}
	if err := r.modelGate(ctx, res, ls, legID, end); err != nil {
		return err
	}
	return r.rpcGates(ctx, res, ls, legID, end)
}

// telemetryGates ends the leg's sampling (none when tel is nil), records each machine-state
// gate that fired during the leg (a throttle event, a clock drop, a temperature above the
// limit) and, as after a CV breach, flags the leg: its rows are not used for verdicts (their
// status turns flagged) and the queue goes on.
func (r *run) telemetryGates(ctx context.Context, tel energy.LegRun, legID int64, end *study.LegEnd) error {
	if tel == nil {
		return nil
	}
	breaches, err := tel.End(ctx)
	if err != nil || len(breaches) == 0 {
		return err
	}
	for _, b := range breaches {
		if err := r.e.Rec.RecordGate(ctx, study.GateRecord{StudyID: r.l.St.ID, LegID: legID, Name: b.Name, Code: b.Code,
			Observed: b.Observed, Limit: b.Limit, Detail: b}); err != nil {
			return err
		}
	}
	for i, s := range end.RowStatus {
		if runner.RowStatus(s) == runner.RowResult {
			end.RowStatus[i] = string(runner.RowFlagged)
		}
	}
	if end.Class == string(runner.ClassOK) { // a leg a CV gate flagged keeps that reason
		end.Class, end.Reason = string(runner.ClassFlagged), breaches[0].Code+": "+breaches[0].Reason
	}
	return nil
}

// noteLaunch journals how a leg run under the plan's launch wrapper was started and the
// affinity read from llama-bench's process (nothing for a leg without a wrapper).
func (r *run) noteLaunch(ctx context.Context, res *runner.LegResult, legID int64, label string) error {
	if res.Launch == nil {
		return nil
	}
	return r.e.Rec.Note(ctx, r.l.St.ID, study.NoteLegLaunch, study.LegLaunch{Leg: legID, Label: label, Launch: *res.Launch})
}
