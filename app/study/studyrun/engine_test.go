package studyrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner"
)

// The fake bench's rates (see fixture in results_test.go): P1 HIT, P2 fires "steep" (slope
// -0.25), P3 FAILS (4000 vs 6000), P4 ANSWERED 192.
var fakeRates = map[string]map[int64]float64{
	"tiny-llama-f32.gguf": {0: 9000, 128: 6000, 256: 4000},
	"tiny-moe-f32.gguf":   {0: 8000, 128: 7000, 256: 6000},
}

type harness struct {
	t      *testing.T
	rec    *memRecorder
	bench  *fakeBench
	id     int64
	mu     sync.Mutex
	events []study.Event
}

func newHarness(t *testing.T, edit func(p *study.Plan)) *harness {
	t.Helper()
	p := loadValid(t)
	if edit != nil {
		edit(p)
	}
	h := &harness{t: t, rec: newMemRecorder(), bench: &fakeBench{tg: fakeRates, outcome: map[string]string{}}}
	reg, err := study.Register(context.Background(), h.rec, p, filepath.Join(planDir, "valid.json"), sha256File)
	if err != nil {
		t.Fatal(err)
	}
	h.id = reg.StudyID
	return h
}

func (h *harness) engine() *Engine {
	return &Engine{Rec: h.rec, Bench: "/fake/llama-bench", Start: h.bench.start, Hash: sha256File,
		Probe: func(context.Context) (study.Environment, error) { return study.Environment{}, nil },
		OnEvent: func(e study.Event) {
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		}}
}

func (h *harness) run(ctx context.Context) (study.RunSummary, error) {
	return h.engine().Run(ctx, h.id)
}

// trail is the events as short strings: "started tiny/d0", "verdict P1 HIT", …
func (h *harness) trail() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		switch e.Kind {
		case study.EventLegStarted, study.EventLegSkipped:
			out = append(out, string(e.Kind)+" "+e.Leg)
		case study.EventLegFinished:
			out = append(out, "finished "+e.Leg+" "+e.Outcome.Class)
		case study.EventVerdict:
			out = append(out, "verdict "+e.Verdict.Prediction+" "+string(e.Verdict.Outcome))
		case study.EventHalted, study.EventDone, study.EventCanary:
			out = append(out, string(e.Kind))
		}
	}
	return out
}

func indexOf(t *testing.T, trail []string, s string) int {
	t.Helper()
	i := slices.Index(trail, s)
	if i < 0 {
		t.Fatalf("%q not in %q", s, trail)
	}
	return i
}

func (h *harness) journalCount(prefix string) int {
	n := 0
	for _, j := range h.rec.journal {
		if strings.HasPrefix(j, prefix) {
			n++
		}
	}
	return n
}

func TestEngineRunJournalsEachVerdictWhenItsLegsFinish(t *testing.T) {
	h := newHarness(t, nil)
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.LegsRun != 8 || sum.LegsSkipped != 0 || sum.Status != study.StatusComplete || len(sum.Verdicts) != 4 || sum.Halted {
		t.Fatalf("summary %+v", sum)
	}
	want := []string{"canary baseline", "tiny/d0#start", "tiny/d0", "tiny/d128", "tiny/d256", "moe/d0", "moe/d128", "moe/d256", "tiny/d0#end"}
	if !slices.Equal(h.bench.ran, want) {
		t.Fatalf("ran %q, want %q", h.bench.ran, want)
	}
	tr := h.trail()
	// P1 reads tiny/d0 only: journaled right after it, before the next leg starts.
	if p1 := indexOf(t, tr, "verdict P1 HIT"); p1 < indexOf(t, tr, "finished tiny/d0 ok") || p1 > indexOf(t, tr, "leg_started tiny/d128") {
		t.Errorf("P1 journaled out of place: %q", tr)
	}
	// P4 (tiny's crossing) needs all tiny depths; P2 and P3 need moe/d256.
	if p4 := indexOf(t, tr, "verdict P4 ANSWERED"); p4 < indexOf(t, tr, "finished tiny/d256 ok") || p4 > indexOf(t, tr, "leg_started moe/d0") {
		t.Errorf("P4 journaled out of place: %q", tr)
	}
	for _, v := range []string{"verdict P2 HIT", "verdict P3 FAILS"} {
		if i := indexOf(t, tr, v); i < indexOf(t, tr, "finished moe/d256 ok") || i > indexOf(t, tr, "leg_started tiny/d0#end") {
			t.Errorf("%s journaled out of place: %q", v, tr)
		}
	}
	for _, p := range []string{"P1", "P2", "P3", "P4"} {
		if n := h.journalCount("verdict " + p + " "); n != 1 {
			t.Errorf("%s journaled %d times", p, n)
		}
	}
	// Progress: legs done counts up to the total; the last event is done.
	last := h.events[len(h.events)-1]
	if last.Kind != study.EventDone || last.Progress.LegsDone != 8 || last.Progress.LegsTotal != 8 || last.Progress.ETA != 0 {
		t.Errorf("last event %+v", last)
	}

	// Running a complete study again runs nothing and journals nothing new.
	h.events, h.bench.ran = nil, nil
	before := len(h.rec.journal)
	sum, err = h.run(context.Background())
	if err != nil || sum.LegsRun != 0 || sum.LegsSkipped != 8 || len(h.bench.ran) != 0 || len(sum.Verdicts) != 0 {
		t.Fatalf("second run: %+v %v ran %q", sum, err, h.bench.ran)
	}
	if extra := h.rec.journal[before:]; slices.ContainsFunc(extra, func(s string) bool { return strings.HasPrefix(s, "verdict") || strings.HasPrefix(s, "leg.") }) {
		t.Errorf("second run journaled %q", extra)
	}

	rep, err := study.Show(context.Background(), h.rec, h.id)
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]string{}
	for _, s := range rep.Scoreboard {
		words[s.Prediction] = s.Word
	}
	if words["P1"] != "HIT" || words["P2"] != `arm "steep"` || words["P3"] != "FAILS" || words["P4"] != "ANSWERED 192" {
		t.Errorf("scoreboard %v", words)
	}
	if len(rep.Results) != 16 || rep.Study.LegsDone != 8 {
		t.Errorf("%d result cells, %d legs done", len(rep.Results), rep.Study.LegsDone)
	}
	checkReportTraces(t, h.rec, rep)
}

// checkReportTraces follows every reference of the report to the recorded rows.
func checkReportTraces(t *testing.T, rec study.Recorder, rep *study.Report) {
	t.Helper()
	rows, _ := rec.Rows(context.Background(), rep.Study.ID)
	byRef := map[string]study.StoredRow{}
	for _, r := range rows {
		byRef[study.RowRef(r.LegID, r.Seq)] = r
	}
	for _, c := range rep.Results {
		r, ok := byRef[c.Source]
		if !ok || r.Status != "result" || r.Result.AvgTs != c.Mean || r.Result.NDepth != c.Depth {
			t.Errorf("cell %+v does not trace to a result row (%+v)", c, r)
		}
	}
	slopes := 0
	for _, f := range rep.Figures {
		if f.Figure != study.FigureSlope || f.Value == nil {
			continue
		}
		slopes++
		var first, at *study.StoredRow
		for _, ref := range f.Sources {
			r := byRef[ref]
			if r.Status != "result" {
				t.Errorf("%s: source %s is not a result row", f.Label, ref)
			}
			if first == nil || r.Result.NDepth < first.Result.NDepth {
				first = &r
			}
			if r.Result.NDepth == int64(*f.Selector.Depth) {
				at = &r
			}
		}
		if first == nil || at == nil || abs(*f.Value-(at.Result.AvgTs-first.Result.AvgTs)/first.Result.AvgTs) > 1e-12 {
			t.Errorf("slope %s = %v does not recompute from %v", f.Label, *f.Value, f.Sources)
		}
	}
	if slopes == 0 {
		t.Error("no slope figure")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// hangingStart makes one leg hang after its first row, as a process killed mid-leg leaves it.
func hangingStart(h *harness, legID string, rowSeen chan<- struct{}) func(context.Context, runner.QueueSpec) QueueRun {
	return func(ctx context.Context, spec runner.QueueSpec) QueueRun {
		if spec.Legs[0].ID != legID {
			return h.bench.start(ctx, spec)
		}
		rows := h.bench.rows(spec.Legs[0])
		ch := make(chan runner.Event, 1)
		s := runner.Sample{Row: 1, Test: rows[0].TestName(), Result: rows[0]}
		ch <- runner.Event{Type: runner.EventSample, Leg: legID, Sample: &s}
		go func() {
			// The engine has taken the row once it asks for the next event.
			for len(ch) > 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			close(rowSeen)
		}()
		return &fakeQueue{events: ch} // never closed: the "process" is gone
	}
}

func TestEngineResumesAfterAKillWithoutDuplicates(t *testing.T) {
	h := newHarness(t, nil)
	seen := make(chan struct{})
	e := h.engine()
	e.Start = hangingStart(h, "tiny/d128", seen)
	go e.Run(context.Background(), h.id) // abandoned: it is the process that dies
	<-seen
	legs, _ := h.rec.Legs(context.Background(), h.id)
	last := legs[len(legs)-1]
	if last.Label != "tiny/d128" || last.State != study.LegRunning || last.Rows != 1 {
		t.Fatalf("at the kill: %+v", last)
	}
	h.rec.interrupt(last.ID) // what the notebook does when it is next opened
	if n := h.journalCount("verdict P1"); n != 1 {
		t.Fatalf("P1 journaled %d times before the kill", n)
	}

	h.bench.ran = nil
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tiny/d128", "tiny/d256", "moe/d0", "moe/d128", "moe/d256", "tiny/d0#end"}; !slices.Equal(h.bench.ran, want) {
		t.Fatalf("resumed with %q, want %q (no canary baseline again)", h.bench.ran, want)
	}
	if sum.LegsSkipped != 2 || sum.LegsRun != 6 || sum.Status != study.StatusComplete {
		t.Fatalf("summary %+v", sum)
	}
	legs, _ = h.rec.Legs(context.Background(), h.id)
	labels := map[string]int{}
	finished := map[string]int{}
	for _, l := range legs {
		labels[l.Label]++
		if l.Role == study.RoleLeg && l.State == study.LegFinished {
			finished[l.PlanLeg]++
			if l.Rows != 2 || l.Results != 2 {
				t.Errorf("%s: %d rows, %d results", l.Label, l.Rows, l.Results)
			}
		}
		if l.Label == "tiny/d128" && (l.State != study.LegInterrupted || l.Unmarked != 1 || l.Results != 0) {
			t.Errorf("interrupted attempt: %+v", l)
		}
	}
	for label, n := range labels {
		if n != 1 {
			t.Errorf("label %q used %d times", label, n)
		}
	}
	if labels["tiny/d128 (attempt 2)"] != 1 || len(finished) != 8 {
		t.Errorf("labels %v, finished %v", labels, finished)
	}
	for pl, n := range finished {
		if n != 1 {
			t.Errorf("plan leg %s finished %d times", pl, n)
		}
	}
	for _, p := range []string{"P1", "P2", "P3", "P4"} {
		if n := h.journalCount("verdict " + p + " "); n != 1 {
			t.Errorf("%s journaled %d times", p, n)
		}
	}
	rep, _ := study.Show(context.Background(), h.rec, h.id)
	if len(rep.Results) != 16 {
		t.Errorf("%d result rows: the interrupted attempt's row must not count", len(rep.Results))
	}
	checkReportTraces(t, h.rec, rep)
}

// failingVerdicts fails RecordVerdict once for one prediction: the process "dies" between a
// leg's end and its verdict.
type failingVerdicts struct {
	*memRecorder
	key    string
	failed bool
}

func (f *failingVerdicts) RecordVerdict(ctx context.Context, id int64, v study.Verdict) error {
	if v.Prediction == f.key && !f.failed {
		f.failed = true
		return errors.New("disk full")
	}
	return f.memRecorder.RecordVerdict(ctx, id, v)
}

func TestEngineJournalsAMissedVerdictFirstOnResume(t *testing.T) {
	h := newHarness(t, nil)
	e := h.engine()
	e.Rec = &failingVerdicts{memRecorder: h.rec, key: "P1"}
	if _, err := e.Run(context.Background(), h.id); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("want the verdict failure, got %v", err)
	}
	h.events = nil
	if _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := h.trail()
	if indexOf(t, tr, "verdict P1 HIT") > indexOf(t, tr, "leg_started tiny/d128") {
		t.Errorf("the missed verdict must be journaled before the first leg: %q", tr)
	}
	if n := h.journalCount("verdict P1 "); n != 1 {
		t.Errorf("P1 journaled %d times", n)
	}
}

func TestEngineFlaggedAndCrashedRowsNeverCount(t *testing.T) {
	h := newHarness(t, nil)
	h.bench.outcome["tiny/d0"] = "flag"    // pp row flagged, the leg halts before tg
	h.bench.outcome["tiny/d128"] = "crash" // one row, then SIGSEGV: the canary runs and passes
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The crashed leg has no results and retries left; so has the leg flagged on its first row
	// (it kept no rows: a flagged attempt has results only for the rows it kept). The study is
	// incomplete, not complete.
	if sum.Status != study.StatusIncomplete || sum.LegsRun != 8 || len(sum.Incomplete) != 2 || sum.Incomplete[0].Leg != "tiny/d0" || sum.Incomplete[1].Leg != "tiny/d128" ||
		sum.Incomplete[0].Final || sum.Incomplete[0].RetriesLeft() != 2 || sum.Incomplete[1].Final || sum.Incomplete[1].RetriesLeft() != 2 {
		t.Fatalf("a flagged leg and a passing canary continue the queue, a crash and a flag on the first row leave it incomplete: %+v", sum)
	}
	legs, _ := h.rec.Legs(context.Background(), h.id)
	var sawCanary bool
	for _, l := range legs {
		switch l.Label {
		case "tiny/d0":
			if l.Class != "flagged" || l.Flagged != 1 || l.Results != 0 {
				t.Errorf("flagged leg %+v", l)
			}
		case "tiny/d128":
			if l.Class != "crashed" || l.Discarded != 1 || l.Results != 0 {
				t.Errorf("crashed leg %+v", l)
			}
		case "canary after tiny/d128":
			sawCanary = l.Role == study.RoleCanary && l.Class == "ok" && l.PlanLeg == "tiny/d128"
		}
	}
	if !sawCanary {
		t.Errorf("no canary leg recorded: %+v", legs)
	}
	rep, _ := study.Show(context.Background(), h.rec, h.id)
	for _, s := range rep.Scoreboard {
		// P1 reads the leg flagged on its first row (no rows kept: a later run retries it); P4
		// reads the crashed one, which a later run retries too: both wait.
		if s.Prediction == "P1" && s.Verdict.Outcome != study.Pending {
			t.Errorf("%s reads a flagged leg without results that will be retried: %+v", s.Prediction, s.Verdict)
		}
		if s.Prediction == "P4" && s.Verdict.Outcome != study.Pending {
			t.Errorf("%s reads a crashed leg that will be retried: %+v", s.Prediction, s.Verdict)
		}
	}
	if n := h.journalCount("verdict P4 "); n != 0 {
		t.Errorf("P4 journaled while a retry of its leg is possible")
	}
	for _, c := range rep.Results {
		if c.Leg == "tiny/d0" || c.Leg == "tiny/d128" {
			t.Errorf("a row of a failed leg counted: %+v", c)
		}
	}
}

func TestEngineHaltsWhenTheCanaryFailsAndResumesAfter(t *testing.T) {
	h := newHarness(t, nil)
	h.bench.outcome["tiny/d128"] = "crash"
	h.bench.canaryFails = true
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Halted || sum.Status != study.StatusHalted || !strings.Contains(sum.Reason, "tiny/d128 ended crashed") || sum.LegsDone != 3 {
		t.Fatalf("summary %+v", sum)
	}
	if tr := h.trail(); tr[len(tr)-1] != "halted" || slices.Contains(tr, "leg_started tiny/d256") {
		t.Fatalf("trail %q", tr)
	}
	// The crashed leg ended without results: a new run retries it first (attempt 2), then
	// continues after it.
	h.bench.canaryFails, h.bench.outcome = false, map[string]string{}
	h.bench.ran = nil
	sum, err = h.run(context.Background())
	if err != nil || sum.Status != study.StatusComplete || h.bench.ran[0] != "tiny/d128" || h.bench.ran[1] != "tiny/d256" {
		t.Fatalf("resume after a halt: %+v %v %q", sum, err, h.bench.ran)
	}
	if tr := h.trail(); !slices.Contains(tr, "leg_started tiny/d128") {
		t.Fatalf("the crashed leg was not run again: %q", tr)
	}
}

func TestEngineStopIsResumable(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.bench.onLeg = func(id string) {
		if id == "tiny/d128" {
			cancel()
		}
	}
	sum, err := h.run(ctx)
	if !errors.Is(err, study.ErrStopped) || sum.Status != study.StatusHalted || sum.LegsDone != 2 {
		t.Fatalf("stop: %+v %v", sum, err)
	}
	h.bench.onLeg = nil
	h.bench.ran = nil
	sum, err = h.run(context.Background())
	if err != nil || h.bench.ran[0] != "tiny/d128" || sum.LegsRun != 6 {
		t.Fatalf("resume: %+v %v %q", sum, err, h.bench.ran)
	}
	legs, _ := h.rec.Legs(context.Background(), h.id)
	var got []string
	for _, l := range legs {
		if l.PlanLeg == "tiny/d128" && l.Role == study.RoleLeg {
			got = append(got, l.Label+" "+l.Class)
		}
	}
	if !slices.Equal(got, []string{"tiny/d128 stopped_by_user", "tiny/d128 (attempt 2) ok"}) {
		t.Errorf("tiny/d128 attempts: %q", got)
	}
}

func TestAmendBeforeAndAfterItsLegsRan(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, nil)
	lo := 2000.0
	hi := -0.3
	// Before any leg: accepted; the fork's arm change makes P2 inconclusive (-0.25 is between arms).
	if _, err := study.Amend(ctx, h.rec, h.id, study.AmendRequest{Prediction: "P1", Set: study.Change{Lo: &lo}, Reason: "typo in the registered floor"}); err != nil {
		t.Fatal(err)
	}
	if _, err := study.Amend(ctx, h.rec, h.id, study.AmendRequest{Prediction: "P2", Set: study.Change{Arms: []study.Arm{{Name: "steep", Hi: &hi}}}, Reason: "recalibrated"}); err != nil {
		t.Fatal(err)
	}
	bad := -0.01
	if _, err := study.Amend(ctx, h.rec, h.id, study.AmendRequest{Prediction: "P2", Set: study.Change{Arms: []study.Arm{{Name: "steep", Hi: &bad}}}, Reason: "x"}); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping arms accepted: %v", err)
	}
	if _, err := h.run(ctx); err != nil {
		t.Fatal(err)
	}
	// After: refused with the reason, recordable as a deviation.
	hi2 := 8000.0
	_, err := study.Amend(ctx, h.rec, h.id, study.AmendRequest{Prediction: "P1", Set: study.Change{Hi: &hi2}, Reason: "tighten"})
	if !errors.Is(err, study.ErrAmendmentRefused) || !strings.Contains(err.Error(), "tiny/d0 (finished)") || !strings.Contains(err.Error(), "--as-deviation") {
		t.Fatalf("refusal: %v", err)
	}
	res, err := study.Amend(ctx, h.rec, h.id, study.AmendRequest{Prediction: "P1", Set: study.Change{Hi: &hi2}, Reason: "tighten", AsDeviation: true})
	if err != nil || res.Kind != "deviation" {
		t.Fatalf("deviation: %+v %v", res, err)
	}
	rep, _ := study.Show(ctx, h.rec, h.id)
	var p1, p2 study.ReportScore
	for _, s := range rep.Scoreboard {
		switch s.Prediction {
		case "P1":
			p1 = s
		case "P2":
			p2 = s
		}
	}
	if !p1.Amended || p1.Expected != ">= 2000" || p1.Word != "HIT" || len(p1.Deviations) != 1 ||
		p1.Deviations[0].Word != "DEVIATION: MISS +12.5%" || p1.Recorded == nil || p1.Recorded.Outcome != "HIT" {
		t.Errorf("P1 %+v", p1)
	}
	if p2.Word != "INCONCLUSIVE" {
		t.Errorf("P2 %+v", p2)
	}
	if len(rep.Deviations) != 1 || rep.Deviations[0].Prediction != "P1" || len(rep.Amendments) != 2 {
		t.Errorf("deviations %+v amendments %d", rep.Deviations, len(rep.Amendments))
	}

	// Human verdicts and findings.
	if err := study.RecordHumanVerdict(ctx, h.rec, h.id, study.HumanVerdict{Prediction: "P3", Outcome: "NOTE", Rationale: "moe wins at depth"}); err != nil {
		t.Fatal(err)
	}
	if err := study.RecordHumanVerdict(ctx, h.rec, h.id, study.HumanVerdict{Prediction: "P3", Outcome: "MAYBE", Rationale: "x"}); err == nil {
		t.Error("MAYBE accepted")
	}
	label, err := study.AddFinding(ctx, h.rec, h.id, study.FindingRequest{Text: "moe holds its rate deeper", Legs: []string{"moe/d256", "tiny/d256"}, Predictions: []string{"P3"}})
	if err != nil || label != "F1" {
		t.Fatalf("finding %q %v", label, err)
	}
	if _, err := study.AddFinding(ctx, h.rec, h.id, study.FindingRequest{Text: "x", Legs: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "not a leg") {
		t.Errorf("unknown leg: %v", err)
	}
	rep, _ = study.Show(ctx, h.rec, h.id)
	if len(rep.Findings) != 1 || !slices.Equal(rep.Findings[0].Legs, []string{"moe/d256", "tiny/d256"}) || rep.Scoreboard[2].Human.Outcome != "NOTE" {
		t.Errorf("findings %+v human %+v", rep.Findings, rep.Scoreboard[2].Human)
	}
}

func TestMismatchIsRefused(t *testing.T) {
	ctx := context.Background()
	// Registering a plan whose model does not match its SHA-256.
	p := loadValid(t)
	p.Models[0].SHA256 = strings.Repeat("0", 64)
	_, err := study.Register(ctx, newMemRecorder(), p, filepath.Join(planDir, "valid.json"), sha256File)
	var ref *study.RefusedError
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "MISMATCH") {
		t.Fatalf("register: %v", err)
	}
	// A model replaced after registration: the run refuses before any leg.
	dir := t.TempDir()
	for _, name := range []string{"tiny-llama-f32.gguf", "tiny-moe-f32.gguf"} {
		b, _ := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", name))
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	h := newHarness(t, func(p *study.Plan) {
		for i := range p.Models {
			p.Models[i].Path = filepath.Join(dir, filepath.Base(p.Models[i].Path))
		}
	})
	f16, _ := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "models", "tiny-llama-f16.gguf"))
	os.WriteFile(filepath.Join(dir, "tiny-llama-f32.gguf"), f16, 0o644)
	_, err = h.run(ctx)
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "MISMATCH") || len(h.bench.ran) != 0 {
		t.Fatalf("run: %v, ran %q", err, h.bench.ran)
	}
}

func TestRegisterIsIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	reg, err := study.Register(context.Background(), h.rec, loadValid(t), filepath.Join(planDir, "valid.json"), sha256File)
	if err != nil || !reg.Existing || reg.StudyID != h.id || reg.Legs != 8 {
		t.Fatalf("%+v %v", reg, err)
	}
	if n := h.journalCount("plan.registered"); n != 1 {
		t.Errorf("plan registered %d times", n)
	}
}

func TestRowRefRoundTrip(t *testing.T) {
	l, s, err := study.ParseRowRef(study.RowRef(12, 3))
	if err != nil || l != 12 || s != 3 {
		t.Fatal(l, s, err)
	}
	for _, bad := range []string{"", "leg 1", "leg x seq 2", "row 1 seq 2"} {
		if _, _, err := study.ParseRowRef(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestEngineMeasuresBandwidthOnceAndRefusesASecondRunner(t *testing.T) {
	h := newHarness(t, func(p *study.Plan) { p.Bandwidth = &study.Bandwidth{Measure: true} })
	measured := 0
	e := h.engine()
	e.MeasureBandwidth = func(context.Context) (BandwidthMeasurement, error) {
		measured++
		return BandwidthMeasurement{GBs: 25, Report: map[string]float64{"triad_gbs": 25, "copy_gbs": 24}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.bench.onLeg = func(id string) {
		if id == "tiny/d128" {
			cancel()
		}
	}
	if _, err := e.Run(ctx, h.id); !errors.Is(err, study.ErrStopped) {
		t.Fatal(err)
	}
	h.bench.onLeg = nil
	if _, err := e.Run(context.Background(), h.id); err != nil {
		t.Fatal(err)
	}
	if measured != 1 || len(h.rec.envs) != 2 || h.rec.envs[0].BandwidthGBs != 25 || h.rec.envs[1].BandwidthGBs != 25 {
		t.Fatalf("measured %d times, machines %+v", measured, h.rec.envs)
	}
	rep, _ := study.Show(context.Background(), h.rec, h.id)
	if rep.Bandwidth != "measured" || rep.BandwidthGBs == nil || *rep.BandwidthGBs != 25 {
		t.Errorf("report bandwidth %s %v", rep.Bandwidth, rep.BandwidthGBs)
	}
	ceilings := 0
	for _, f := range rep.Figures {
		if f.Figure == study.FigureCeiling && f.Value != nil {
			ceilings++
		}
	}
	if ceilings != 4 {
		t.Errorf("%d ceilings from the measured bandwidth", ceilings)
	}

	// A leg left running belongs to a live process: a second run refuses.
	h2 := newHarness(t, nil)
	h2.rec.StartLeg(context.Background(), study.LegStart{StudyID: h2.id, Label: "tiny/d0#start", PlanLeg: "tiny/d0#start", Role: study.RoleLeg, Attempt: 1})
	if _, err := h2.run(context.Background()); !errors.Is(err, study.ErrBusy) || len(h2.bench.ran) != 0 {
		t.Fatalf("second runner: %v, ran %q", err, h2.bench.ran)
	}
}
