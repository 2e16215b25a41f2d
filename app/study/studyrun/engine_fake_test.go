package studyrun

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
)

// memRecorder is an in-memory Recorder: the notebook's semantics that the engine relies on
// (frozen legs, row statuses written at the end, verdicts kept in order) without SQLite.
type memRecorder struct {
	mu      sync.Mutex
	studies map[int64]*study.StoredStudy
	legs    []*memLeg
	journal []string // "kind key" lines, in order
	envs    []study.Environment
	now     time.Time
	leased  map[int64]bool // run leases held
}

type memLeg struct {
	study.StoredLeg
	study  int64
	rows   []benchfmt.Result
	status []string
}

func newMemRecorder() *memRecorder {
	return &memRecorder{studies: map[int64]*study.StoredStudy{}, now: time.Date(2026, 7, 3, 12, 0, 0, 0, time.UTC)}
}

func (m *memRecorder) tick() time.Time { m.now = m.now.Add(time.Second); return m.now }

func (m *memRecorder) log(format string, a ...any) {
	m.journal = append(m.journal, fmt.Sprintf(format, a...))
}

func (m *memRecorder) Register(_ context.Context, s study.NewStudy) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if canon.SHA256Hex(s.PlanJSON) != s.PlanSHA256 {
		return 0, false, fmt.Errorf("plan bytes do not hash to %s", s.PlanSHA256)
	}
	for id, st := range m.studies {
		if st.PlanSHA256 == s.PlanSHA256 {
			return id, true, nil
		}
	}
	id := int64(len(m.studies) + 1)
	m.studies[id] = &study.StoredStudy{ID: id, Name: s.Name, Status: study.StatusRegistered, PlanSHA256: s.PlanSHA256,
		PlanJSON: s.PlanJSON, PlanDir: s.PlanDir, RegisteredAt: m.tick(), Verdicts: map[string]study.StoredVerdicts{}}
	m.log("plan.registered %s", s.PlanSHA256[:8])
	for _, p := range s.Predictions {
		m.log("prediction.registered %s", p.ID)
	}
	return id, false, nil
}

// Lease: one run per study at a time, as the notebook's run lease.
func (m *memRecorder) Lease(_ context.Context, id int64) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leased[id] {
		return nil, fmt.Errorf("%w: study %d's run lease is held", study.ErrBusy, id)
	}
	if m.leased == nil {
		m.leased = map[int64]bool{}
	}
	m.leased[id] = true
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.leased, id)
	}, nil
}

func (m *memRecorder) Study(_ context.Context, id int64) (study.StoredStudy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.studies[id]
	if !ok {
		return study.StoredStudy{}, fmt.Errorf("study %d does not exist", id)
	}
	out := *s
	out.Verdicts = maps.Clone(s.Verdicts)
	out.Amendments = slices.Clone(s.Amendments)
	out.Deviations = slices.Clone(s.Deviations)
	out.Findings = slices.Clone(s.Findings)
	out.Notes = slices.Clone(s.Notes)
	return out, nil
}

func (m *memRecorder) Legs(_ context.Context, id int64) ([]study.StoredLeg, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []study.StoredLeg
	for _, l := range m.legs {
		if l.study != id {
			continue
		}
		s := l.StoredLeg
		s.Rows, s.Results, s.Flagged, s.Discarded, s.Unmarked = len(l.rows), 0, 0, 0, 0
		for i := range l.rows {
			st := ""
			if i < len(l.status) {
				st = l.status[i]
			}
			switch st {
			case "result":
				s.Results++
			case "flagged":
				s.Flagged++
			case "discarded":
				s.Discarded++
			default:
				s.Unmarked++
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func (m *memRecorder) Rows(_ context.Context, id int64) ([]study.StoredRow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []study.StoredRow
	for _, l := range m.legs {
		if l.study != id {
			continue
		}
		for i, r := range l.rows {
			st := ""
			if i < len(l.status) {
				st = l.status[i]
			}
			out = append(out, study.StoredRow{LegID: l.ID, Seq: int64(i), Status: st, Result: r})
		}
	}
	return out, nil
}

func (m *memRecorder) SetStatus(_ context.Context, id int64, status string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.studies[id].Status = status
	return nil
}

func (m *memRecorder) Note(_ context.Context, id int64, kind string, payload any) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	m.studies[id].Notes = append(m.studies[id].Notes, study.StoredNote{Kind: kind, Payload: b, At: m.tick()})
	m.log("%s", kind)
	return nil
}

func (m *memRecorder) Environment(_ context.Context, env study.Environment) (int64, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.envs = append(m.envs, env)
	return 1, 1, nil
}

func (m *memRecorder) Model(context.Context, study.ModelRecord) (int64, error) { return 1, nil }

type memSink struct {
	m   *memRecorder
	leg *memLeg
}

func (s memSink) AddBench(rows ...benchfmt.Result) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.leg.State != study.LegRunning {
		return fmt.Errorf("leg %d is %s: only a running leg takes samples", s.leg.ID, s.leg.State)
	}
	s.leg.rows = append(s.leg.rows, rows...)
	return nil
}

func (m *memRecorder) StartLeg(_ context.Context, l study.LegStart) (int64, study.RowSink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.legs {
		if x.study == l.StudyID && x.Label == l.Label {
			return 0, nil, fmt.Errorf("duplicate leg label %q", l.Label)
		}
	}
	leg := &memLeg{StoredLeg: study.StoredLeg{ID: int64(len(m.legs) + 1), Label: l.Label, Kind: l.Kind, PlanLeg: l.PlanLeg, Role: l.Role,
		Attempt: l.Attempt, State: study.LegRunning, Argv: l.Argv, Conditions: l.Conditions, StartedAt: m.tick()}, study: l.StudyID}
	m.legs = append(m.legs, leg)
	m.log("leg.started %s", l.Label)
	return leg.ID, memSink{m, leg}, nil
}

func (m *memRecorder) FinishLeg(_ context.Context, id int64, end study.LegEnd) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	leg := m.legs[id-1]
	if leg.State != study.LegRunning {
		return fmt.Errorf("leg %d is already %s", id, leg.State)
	}
	if len(end.RowStatus) != len(leg.rows) {
		return fmt.Errorf("leg %d: %d statuses for %d rows", id, len(end.RowStatus), len(leg.rows))
	}
	leg.State, leg.Class, leg.Reason, leg.EndedAt, leg.status = study.LegFinished, end.Class, end.Reason, m.tick(), end.RowStatus
	m.log("leg.finished %s %s", leg.Label, end.Class)
	return nil
}

// interrupt is what the notebook does on Open for a leg whose process died.
func (m *memRecorder) interrupt(id int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	leg := m.legs[id-1]
	leg.State, leg.Class, leg.EndedAt = study.LegInterrupted, "interrupted", m.tick()
	delete(m.leased, leg.study) // the dead process's run lease: the next run takes it over
}

func (m *memRecorder) RecordGate(context.Context, study.GateRecord) error { return nil }

func (m *memRecorder) RecordVerdict(_ context.Context, id int64, v study.Verdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, _ := json.Marshal(v)
	sv := m.studies[id].Verdicts[v.Prediction]
	sv.Computed = &study.StoredVerdict{Outcome: string(v.Outcome), Observed: v.Value, Detail: d, At: m.tick()}
	m.studies[id].Verdicts[v.Prediction] = sv
	m.log("verdict %s %s", v.Prediction, v.Outcome)
	return nil
}

func (m *memRecorder) RecordHumanVerdict(_ context.Context, id int64, h study.HumanVerdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sv := m.studies[id].Verdicts[h.Prediction]
	sv.Human = &study.StoredVerdict{Outcome: h.Outcome, Rationale: h.Rationale, At: m.tick()}
	m.studies[id].Verdicts[h.Prediction] = sv
	m.log("verdict.human %s %s", h.Prediction, h.Outcome)
	return nil
}

func (m *memRecorder) AddAmendment(_ context.Context, id int64, a study.AmendmentRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, _ := json.Marshal(a.Change)
	m.studies[id].Amendments = append(m.studies[id].Amendments, study.StoredAmendment{Target: a.Target, Reason: a.Reason, Change: b, At: m.tick()})
	m.log("amendment %s", a.Target)
	return nil
}

func (m *memRecorder) AddDeviation(_ context.Context, id int64, d study.DeviationRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, _ := json.Marshal(d.Detail)
	m.studies[id].Deviations = append(m.studies[id].Deviations, study.StoredDeviation{Description: d.Description, LegID: d.LegID, Detail: b, At: m.tick()})
	m.log("deviation")
	return nil
}

func (m *memRecorder) AddFinding(_ context.Context, id int64, f study.FindingRecord) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	label := "F" + strconv.Itoa(len(m.studies[id].Findings)+1)
	m.studies[id].Findings = append(m.studies[id].Findings, study.StoredFinding{Label: label, Text: f.Text, LegIDs: f.LegIDs, Predictions: f.Predictions, At: m.tick()})
	m.log("finding %s", label)
	return label, nil
}

// fakeBench scripts what llama-bench "measures": tg rate by model and depth, pp 10x that.
type fakeBench struct {
	mu sync.Mutex
	// tg[model file base][depth]
	tg map[string]map[int64]float64
	// outcome per leg ID (attempt-independent): "crash" (SIGSEGV after the first row),
	// "flag" (the CV gate flags the first row), "stop" (the leg is stopped after one row,
	// as ctx cancellation does), "" ok.
	outcome map[string]string
	// canaryFails makes every canary run after a crash fail.
	canaryFails bool
	onLeg       func(id string) // called as a leg starts
	ran         []string
	// samples, when set, draws each row's repetitions (t/s) around its rate, for the leg's -r.
	samples func(leg string, reps int, ts float64) []float64
}

func argOf(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func (f *fakeBench) rows(spec runner.LegSpec) []benchfmt.Result {
	model := argOf(spec.Args, "-m")
	base := filepath.Base(model)
	np, _ := strconv.ParseInt(argOf(spec.Args, "-p"), 10, 64)
	ng, _ := strconv.ParseInt(argOf(spec.Args, "-n"), 10, 64)
	var out []benchfmt.Result
	for _, ds := range splitComma(argOf(spec.Args, "-d")) {
		d, _ := strconv.ParseInt(ds, 10, 64)
		tg := f.tg[base][d]
		if tg == 0 {
			tg = 1000
		}
		mk := func(p, g int64, ts float64) benchfmt.Result {
			return benchfmt.Result{ModelFilename: model, NPrompt: p, NGen: g, NDepth: d, AvgTs: ts, StddevTs: ts / 100,
				SamplesTs: []float64{ts * 0.99, ts, ts * 1.01}, NUbatch: 512, NBatch: 2048, FlashAttn: -1, TypeK: "f16", TypeV: "f16",
				NThreads: 1, NGPULayers: -1}
		}
		out = append(out, mk(np, 0, tg*10), mk(0, ng, tg))
	}
	if f.samples != nil {
		reps, _ := strconv.Atoi(argOf(spec.Args, "-r"))
		for i := range out {
			out[i].SamplesTs = f.samples(spec.ID, reps, out[i].AvgTs)
		}
	}
	return out
}

func splitComma(s string) []string {
	if s == "" {
		return []string{"0"}
	}
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

type fakeQueue struct {
	events  chan runner.Event
	results []*runner.LegResult
}

func (q *fakeQueue) Events() <-chan runner.Event  { return q.events }
func (q *fakeQueue) Results() []*runner.LegResult { return q.results }

// start plays a queue of one leg (plus the canary after a crash) as the runner would.
func (f *fakeBench) start(ctx context.Context, spec runner.QueueSpec) QueueRun {
	var evs []runner.Event
	var results []*runner.LegResult
	leg := func(ls runner.LegSpec, outcome string) *runner.LegResult {
		f.mu.Lock()
		f.ran = append(f.ran, ls.ID)
		f.mu.Unlock()
		rows := f.rows(ls)
		res := &runner.LegResult{ID: ls.ID, Argv: ls.Argv(), Exit: runner.Exit{Class: runner.ClassOK, Expected: len(rows)},
			Transcript: &runner.Transcript{}}
		if ls.Wrapper != nil { // as the runner records a wrapped leg, the tool exec'd as PID 4242
			res.Launch = &runner.Launch{Wrapper: ls.Wrapper, LaunchedAs: append(slices.Clone(ls.Wrapper), ls.Argv()...),
				Affinity: &runner.Affinity{PID: 4242, How: "exec", CPUs: "0", Mems: "0"}}
		}
		evs = append(evs, runner.Event{Type: runner.EventLegStarted, Leg: ls.ID})
		keep := len(rows)
		switch outcome {
		case "crash":
			keep, res.Exit.Class, res.Exit.Code, res.Exit.Signal, res.Exit.Reason = 1, runner.ClassCrashed, -1, "SIGSEGV", "killed by SIGSEGV"
		case "stop":
			keep, res.Exit.Class, res.Exit.Reason = 1, runner.ClassStoppedByUser, "stopped by the user"
		case "flag":
			keep, res.Exit.Class, res.Exit.Reason = 1, runner.ClassFlagged, "cv above the gate"
		}
		for i, r := range rows[:keep] {
			s := runner.Sample{Row: i + 1, Test: r.TestName(), AvgTs: r.AvgTs, Result: r}
			evs = append(evs, runner.Event{Type: runner.EventSample, Leg: ls.ID, Sample: &s})
			st := runner.RowResult
			switch {
			case outcome == "flag" && i == 0:
				st = runner.RowFlagged
				evs = append(evs, runner.Event{Type: runner.EventFlagged, Leg: ls.ID, Flagged: &runner.Flagged{Row: 1, Test: r.TestName(), Gate: "cv", Value: 0.5, Limit: 0.1}})
			case outcome == "crash" || outcome == "stop":
				st = runner.RowDiscarded
			}
			res.Rows = append(res.Rows, runner.Row{Sample: s, Status: st})
		}
		res.Exit.Rows = keep
		evs = append(evs, runner.Event{Type: runner.EventExit, Leg: ls.ID, Exit: &res.Exit},
			runner.Event{Type: runner.EventLegFinished, Leg: ls.ID, LegStatus: &runner.LegStatus{ID: ls.ID, Class: res.Exit.Class}})
		results = append(results, res)
		return res
	}
	for _, ls := range spec.Legs {
		if f.onLeg != nil {
			f.onLeg(ls.ID)
		}
		out := f.outcome[ls.ID]
		if ctx.Err() != nil {
			out = "stop"
		}
		res := leg(ls, out)
		if res.Exit.Class == runner.ClassStoppedByUser {
			evs = append(evs, runner.Event{Type: runner.EventQueueHalted, Queue: &runner.QueueStatus{Halted: true, Class: runner.ClassStoppedByUser, Reason: "stopped by the user during " + ls.ID}})
			break
		}
		if res.Exit.Class.NeedsCanary() && spec.Canary != nil {
			c := spec.Canary.Leg
			cres := leg(c, "")
			if f.canaryFails {
				cres.Exit.Class, cres.Exit.Reason = runner.ClassDeviceLost, "DeviceLost"
			}
			pass, reason, obs := runner.EvaluateCanary(*spec.Canary, cres)
			evs = append(evs, runner.Event{Type: runner.EventCanary, Leg: c.ID, Canary: &runner.Canary{ID: c.ID, After: ls.ID, Pass: pass, Reason: reason, Observed: obs}})
			if !pass {
				evs = append(evs, runner.Event{Type: runner.EventQueueHalted, Queue: &runner.QueueStatus{Halted: true, Class: res.Exit.Class,
					Reason: fmt.Sprintf("%s ended %s; %s", ls.ID, res.Exit.Class, reason)}})
				break
			}
		}
	}
	evs = append(evs, runner.Event{Type: runner.EventQueueDone, Queue: &runner.QueueStatus{}})
	ch := make(chan runner.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	close(ch)
	return &fakeQueue{events: ch, results: results}
}
