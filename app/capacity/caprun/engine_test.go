package caprun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// memRecorder is an in-memory Recorder.
type memRecorder struct {
	mu       sync.Mutex
	studies  map[int64]*memStudy
	legs     map[int64]*memLeg
	verdicts int
	nextLeg  int64
	leased   map[int64]bool // run leases held
}

type memStudy struct {
	st    capacity.StoredStudy
	plan  capacity.NewStudy
	order []int64
}

type memLeg struct {
	study int64
	start capacity.LegStart
	at    time.Time
	reqs  []capacity.LegRequests
	end   *capacity.LegEnd
	// interrupted: the recording process died (the store marks such legs when it opens).
	interrupted bool
}

func (m *memRecorder) Register(ctx context.Context, s capacity.NewStudy) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.studies == nil {
		m.studies, m.legs = map[int64]*memStudy{}, map[int64]*memLeg{}
	}
	for id, st := range m.studies {
		if st.st.PlanSHA256 == s.PlanSHA256 {
			return id, true, nil
		}
	}
	id := int64(len(m.studies) + 1)
	src, _ := json.Marshal(map[string]string{"plan_dir": s.PlanDir, "plan_file": s.PlanFile})
	m.studies[id] = &memStudy{plan: s, st: capacity.StoredStudy{ID: id, Name: s.Name, Kind: s.Kind, Status: "registered", PlanSHA256: s.PlanSHA256,
		PlanJSON: s.PlanJSON, PlanDir: s.PlanDir, PlanFile: s.PlanFile, Verdicts: map[string]study.StoredVerdict{},
		Notes: []study.StoredNote{{Kind: capacity.NotePlanSource, Payload: src}}}}
	return id, false, nil
}

// Lease: one run per study at a time, as the notebook's run lease.
func (m *memRecorder) Lease(ctx context.Context, id int64) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leased[id] {
		return nil, fmt.Errorf("%w: study %d's run lease is held", capacity.ErrBusy, id)
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

func (m *memRecorder) Study(ctx context.Context, id int64) (capacity.StoredStudy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.studies[id]
	if !ok {
		return capacity.StoredStudy{}, errors.New("no such study")
	}
	st := s.st
	st.Verdicts = map[string]study.StoredVerdict{}
	for k, v := range s.st.Verdicts {
		st.Verdicts[k] = v
	}
	st.Notes = append([]study.StoredNote{}, s.st.Notes...)
	return st, nil
}

func (m *memRecorder) SetStatus(ctx context.Context, id int64, status string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.studies[id].st.Status = status
	return nil
}

func (m *memRecorder) Note(ctx context.Context, id int64, kind string, payload any) error {
	b, err := canon.Marshal(payload)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.studies[id].st.Notes = append(m.studies[id].st.Notes, study.StoredNote{Kind: kind, Payload: b, At: time.Now()})
	return nil
}

type memSink struct {
	m  *memRecorder
	id int64
}

func (s memSink) AddRequests(l capacity.LegRequests) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.legs[s.id].reqs = append(s.m.legs[s.id].reqs, l)
	return nil
}

func (m *memRecorder) StartLeg(ctx context.Context, l capacity.LegStart) (int64, capacity.LegSink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextLeg++
	m.legs[m.nextLeg] = &memLeg{study: l.StudyID, start: l, at: time.Now()}
	m.studies[l.StudyID].order = append(m.studies[l.StudyID].order, m.nextLeg)
	return m.nextLeg, memSink{m, m.nextLeg}, nil
}

func (m *memRecorder) FinishLeg(ctx context.Context, id int64, end capacity.LegEnd) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.legs[id].end != nil {
		return errors.New("leg finished twice")
	}
	m.legs[id].end = &end
	return nil
}

func (m *memRecorder) RecordVerdict(ctx context.Context, id int64, v study.Verdict) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, _ := json.Marshal(v)
	m.studies[id].st.Verdicts[v.Prediction] = study.StoredVerdict{Outcome: string(v.Outcome), Observed: v.Value, Detail: d, At: time.Now()}
	m.verdicts++
	return nil
}

func (m *memRecorder) Legs(ctx context.Context, id int64) ([]capacity.StoredLeg, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []capacity.StoredLeg
	for _, lid := range m.studies[id].order {
		l := m.legs[lid]
		sl := capacity.StoredLeg{ID: lid, Label: l.start.Label, Argv: l.start.Argv, State: "running", StartedAt: l.at}
		for _, r := range l.reqs {
			sl.RequestRows += int64(len(r.Records))
		}
		if l.end != nil {
			sl.State, sl.Class, sl.Reason, sl.PeakRSSBytes, sl.TranscriptBytes = "finished", l.end.Class, l.end.Reason, l.end.PeakRSSBytes, int64(len(l.end.Transcript))
		}
		if l.interrupted {
			sl.State, sl.Class = "interrupted", "interrupted"
		}
		out = append(out, sl)
	}
	return out, nil
}

// writeEnginePlan is a one-candidate plan for the fake server, with predictions.
func writeEnginePlan(t *testing.T, dir string) string {
	t.Helper()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	path := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-t", "1"}, capacity.Markers{Must: []string{`CPU_Mapped model buffer`}}}},
		[]int{1}, []int{1, 2}, 1, 3, 8)
	p := mustLoad(t, path)
	one := 1
	p.Predictions = []capacity.Prediction{
		{ID: "P1", Text: "a rate above zero", Kind: study.KindBand, About: capacity.Selector{Figure: capacity.FigureCellRate, Candidate: "fake", Slots: &one, Clients: &one}, Lo: ptrTo(0)},
		{ID: "P2", Text: "which slot count", Kind: study.KindQuestion, About: capacity.Selector{Figure: capacity.FigureSelectedSlots, Candidate: "fake"}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEngineRegisterRunShow(t *testing.T) {
	dir := t.TempDir()
	planPath := writeEnginePlan(t, dir)
	ctx := context.Background()
	rec := &memRecorder{}
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, hashFile)
	if err != nil || reg.Existing || reg.StudyID != 1 || reg.Kind != "capacity" {
		t.Fatalf("register: %+v %v", reg, err)
	}
	again, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, hashFile)
	if err != nil || !again.Existing || again.StudyID != reg.StudyID || again.PlanSHA256 != reg.PlanSHA256 {
		t.Fatalf("register again: %+v %v", again, err)
	}
	// The registered file changes: the frozen plan is used instead (written next to it).
	if err := os.WriteFile(planPath, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1"}, DataDir: filepath.Join(dir, "data"),
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile}
	sum, err := e.Run(ctx, reg.StudyID, "")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if want := filepath.Join(dir, "data", "runs", "1"); sum.RunDir != want || sum.Status != capacity.StatusComplete || sum.Legs != 2 {
		t.Fatalf("summary %+v, want run dir %s", sum, want)
	}
	if len(sum.Verdicts) != 2 || rec.verdicts != 2 {
		t.Fatalf("verdicts %+v (%d journaled)", sum.Verdicts, rec.verdicts)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".sparkbench-capacity-plan-*")); len(left) != 0 {
		t.Errorf("temporary plan left behind: %v", left)
	}
	legs, _ := rec.Legs(ctx, reg.StudyID)
	for _, l := range legs {
		// 2 client levels x (1 warmup + 3 measured)
		if l.State != "finished" || l.Class != "ok" || l.RequestRows != 8 || l.TranscriptBytes == 0 || len(l.Argv) == 0 {
			t.Errorf("leg %+v", l)
		}
	}
	for _, l := range rec.legs {
		for _, r := range l.reqs {
			if r.Origin.IsZero() || r.NPredict != 8 || r.Key.Candidate != "fake" {
				t.Errorf("requests %+v", r)
			}
		}
	}
	a, err := capacity.LoadAssembled(ctx, rec, reg.StudyID)
	if err != nil || a.Result == nil || a.Problem != "" || a.FileSHA256 != sum.StudySHA256 {
		t.Fatalf("load assembled: %+v %v", a, err)
	}
	rep, err := capacity.Show(ctx, rec, reg.StudyID)
	if err != nil || !rep.Trusted || len(rep.Envelope) != 1 || len(rep.Envelope[0].Cells) != 2 || len(rep.Verdicts) != 2 || len(rep.Pending) != 0 {
		t.Fatalf("show: %+v %v", rep, err)
	}
	// A second run is refused; nothing is journaled twice.
	if _, err := e.Run(ctx, reg.StudyID, ""); !errors.Is(err, capacity.ErrAlreadyAssembled) {
		t.Errorf("second run: %v", err)
	}
	if vs, _ := journalVerdicts(ctx, rec, reg.StudyID, mustStudy(t, rec, reg.StudyID).Verdicts, a.Result.Verdicts); len(vs) != 0 || rec.verdicts != 2 {
		t.Errorf("verdicts journaled again: %v (%d)", vs, rec.verdicts)
	}
	// A tampered study.json is reported, not trusted.
	f, _ := os.OpenFile(a.Path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(" ")
	f.Close()
	rep, err = capacity.Show(ctx, rec, reg.StudyID)
	if err != nil || rep.Trusted || !strings.Contains(rep.Problem, "not the journaled") || len(rep.Envelope) != 0 || len(rep.Selected) != 1 {
		t.Fatalf("tampered show: %+v %v", rep, err)
	}
	if a, err := capacity.LoadAssembled(ctx, rec, reg.StudyID); err != nil || a.Result != nil || a.Problem == "" {
		t.Errorf("tampered load: %+v %v", a, err)
	}
}

func mustStudy(t *testing.T, rec capacity.Recorder, id int64) capacity.StoredStudy {
	t.Helper()
	st, err := rec.Study(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A run stopped part-way halts the study, finishes its open leg and journals no verdict.
func TestEngineRunStoppedHalts(t *testing.T) {
	dir := t.TempDir()
	planPath := writeEnginePlan(t, dir)
	rec := &memRecorder{}
	reg, err := capacity.Register(context.Background(), rec, mustLoad(t, planPath), planPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1"}, StartTimeout: time.Minute,
		RequestTimeout: time.Minute, Grace: 2 * time.Second,
		OnEvent: func(ev capacity.RunEvent) {
			if ev.Type == capacity.CellDone {
				cancel()
			}
		}}
	sum, err := e.Run(ctx, reg.StudyID, filepath.Join(dir, "out"))
	if err == nil || sum == nil || sum.Status != capacity.StatusHalted {
		t.Fatalf("run: %+v %v", sum, err)
	}
	st := mustStudy(t, rec, reg.StudyID)
	if st.Status != capacity.StatusHalted || rec.verdicts != 0 {
		t.Errorf("status %s, %d verdicts", st.Status, rec.verdicts)
	}
	if _, ok := capacity.LatestNote(st.Notes, capacity.NoteHalted); !ok {
		t.Error("no halt journaled")
	}
	legs, _ := rec.Legs(context.Background(), reg.StudyID)
	if len(legs) == 0 {
		t.Fatal("no leg recorded")
	}
	for _, l := range legs {
		if l.State != "finished" {
			t.Errorf("leg %+v left open", l)
		}
	}
	if _, err := capacity.LoadAssembled(context.Background(), rec, reg.StudyID); !errors.Is(err, capacity.ErrNotAssembled) {
		t.Errorf("load assembled: %v", err)
	}
}

// A lifetime whose server was healthy but answered no measured request has no results: the run
// is incomplete and its notebook leg says so (class incomplete, with the first failure), not ok.
func TestFaultsEngineSilentServerLegIsNotOK(t *testing.T) {
	dir := t.TempDir()
	planPath := writeEnginePlan(t, dir)
	ctx := context.Background()
	rec := &memRecorder{}
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, hashFile)
	if err != nil {
		t.Fatal(err)
	}
	faults := map[string]any{}
	for i := range 16 {
		faults[fmt.Sprint(i)] = map[string]any{"Status": 500, "Body": `{"error":{"code":500,"message":"injected failure","type":"server_error"}}`}
	}
	fb, _ := json.Marshal(faults)
	e := &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1", fakeServerFaultsEnv + "=" + string(fb)},
		DataDir: filepath.Join(dir, "data"), StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile}
	sum, err := e.Run(ctx, reg.StudyID, "")
	if _, ok := capacity.IsIncomplete(err); !ok || sum == nil || sum.Status != capacity.StatusIncomplete {
		t.Fatalf("run: %+v %v", sum, err)
	}
	legs, _ := rec.Legs(ctx, reg.StudyID)
	if len(legs) == 0 {
		t.Fatal("no leg recorded")
	}
	for _, l := range legs {
		if l.Class != "incomplete" || l.Reason != "no measured request completed; the first failed: HTTP 500: injected failure" {
			t.Errorf("leg %s: class %q reason %q", l.Label, l.Class, l.Reason)
		}
	}
}
