package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"errors"

	"sparkbench/app/capacity"
	"sparkbench/app/capacity/caprun"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// capacityStudyPlan is the acceptance plan (capacityRunPlan) with four predictions.
func capacityStudyPlan(t *testing.T, dir string) string {
	t.Helper()
	path := capacityRunPlan(t, dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["predictions"] = []any{
		map[string]any{"id": "P1", "text": "dense generates at P1/C1", "kind": "band",
			"about": map[string]any{"figure": "cell_rate", "candidate": "dense", "slots": 1, "clients": 1}, "lo": 0},
		map[string]any{"id": "P2", "text": "dense's selected point gains at least -100%", "kind": "band",
			"about": map[string]any{"figure": "selected_gain", "candidate": "dense"}, "lo": -1},
		map[string]any{"id": "P3", "text": "which slot count serves moe best?", "kind": "question",
			"about": map[string]any{"figure": "selected_slots", "candidate": "moe"}},
		map[string]any{"id": "P4", "text": "moe at P2/C2 is within 90% of dense", "kind": "comparison", "op": "within", "tolerance": 0.9,
			"about": map[string]any{"figure": "cell_rate", "candidate": "moe", "slots": 2, "clients": 2},
			"than":  map[string]any{"figure": "cell_rate", "candidate": "dense", "slots": 2, "clients": 2}},
	}
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func countJournal(t *testing.T, nb *store.Notebook, study int64, kind string) int {
	t.Helper()
	es, err := nb.Journal(context.Background(), study, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// register → run (real llama-server, 2 candidates x P{1,2} x C{1,2} x 2 passes) → show, with
// the legs, request rows, verdicts and the assembled study.json in the notebook.
func TestCapacityStudyRegisterRunShow(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := capacityStudyPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")

	code, stdout, stderr := runCapacity("register", plan, "--notebook", nbPath)
	if code != 0 || !strings.Contains(stdout, `study 1 "tiny capacity (CLI test)" registered (capacity): plan sha256 `) {
		t.Fatalf("register: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCapacity("register", plan, "--notebook", nbPath, "--json")
	var reg capacity.Registration
	if code != 0 || json.Unmarshal([]byte(stdout), &reg) != nil || !reg.Existing || reg.StudyID != 1 || len(reg.PlanSHA256) != 64 {
		t.Fatalf("register again: exit %d %+v\n%s%s", code, reg, stdout, stderr)
	}

	start := time.Now()
	code, stdout, stderr = runCapacity("run", "1", "--notebook", nbPath)
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("capacity run 1 took %v\n%s", time.Since(start).Round(time.Millisecond), stdout)
	runDir := filepath.Join(dir, "data", "sparkbench", "runs", "1")
	for _, w := range []string{"study 1 \"tiny capacity (CLI test)\": complete, 8 server lifetimes recorded, run folder " + runDir,
		"  dense ", "  moe ", "P1       HIT", "(journaled)"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("run stdout lacks %q:\n%s", w, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, capacity.RunStudyFile)); err != nil {
		t.Fatal(err)
	}

	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	legs, err := nb.LegTimeline(ctx, 1)
	if err != nil || len(legs) != 8 {
		t.Fatalf("%d legs (%v), want 8", len(legs), err)
	}
	for _, l := range legs {
		// 2 client levels x (1 warmup + 3 measured)
		if l.Kind != store.LegKindServer || l.State != store.LegFinished || l.Class != "ok" || l.RequestRows != 8 ||
			l.TranscriptBytes == 0 || l.PeakRSSBytes <= 0 || len(l.Argv) == 0 {
			t.Errorf("leg %d %s: kind %s state %s class %s requests %d log %d rss %d argv %v", l.ID, l.Label, l.Kind, l.State, l.Class,
				l.RequestRows, l.TranscriptBytes, l.PeakRSSBytes, l.Argv)
		}
	}
	rows, err := nb.RequestRows(ctx, legs[0].ID)
	if err != nil || len(rows) != 8 || rows[0].Candidate != "dense" || rows[0].Pass != "forward" || rows[0].Slots != 1 || rows[0].TSend.IsZero() {
		t.Errorf("request rows of %s: %v %+v", legs[0].Label, err, rows)
	}
	if n := countJournal(t, nb, 1, "verdict"); n != 4 {
		t.Errorf("%d verdicts journaled, want 4", n)
	}
	if n := countJournal(t, nb, 1, capacity.NoteAssembled); n != 1 {
		t.Errorf("%d %s entries", n, capacity.NoteAssembled)
	}
	if s, _ := nb.Study(ctx, 1); s.Status != store.StatusComplete {
		t.Errorf("status %s", s.Status)
	}
	a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, 1)
	if err != nil || a.Result == nil || len(a.Result.Candidates) != 2 {
		t.Fatalf("load assembled: %+v %v", a, err)
	}
	nb.Close()

	// A second run is refused; nothing is journaled twice.
	if code, _, stderr = runCapacity("run", "1", "--notebook", nbPath); code != 1 || !strings.Contains(stderr, "complete") {
		t.Errorf("second run: exit %d: %s", code, stderr)
	}
	var vo, ve strings.Builder
	if code := cmdNotebook([]string{"verify", "--notebook", nbPath}, &vo, &ve); code != 0 {
		t.Errorf("notebook verify: exit %d\n%s%s", code, vo.String(), ve.String())
	}

	code, stdout, stderr = runCapacity("show", "1", "--notebook", nbPath)
	if code != 0 {
		t.Fatalf("show: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, w := range []string{"(capacity, complete)", "(matches the journal)", "server lifetimes (8):", "forward/dense/p1",
		"selected points:", "P1/C1", "P2/C2", "verdicts:", "P3 ",
		// issue 31, item 6: the passes are the units, said so
		"envelope (each figure is the median over the cell's 2 pass(es) (forward, reverse), each pass one server lifetime: the unit of replication; latency percentiles are each pass's own, never pooled across passes"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("show lacks %q:\n%s", w, stdout)
		}
	}
	t.Logf("show:\n%s", stdout)
	code, stdout, _ = runCapacity("show", "1", "--notebook", nbPath, "--json")
	var rep capacity.Report
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.Trusted || len(rep.Envelope) != 2 || len(rep.Verdicts) != 4 || len(rep.Legs) != 8 ||
		!strings.HasPrefix(rep.Units, "each figure is the median over the cell's 2 pass(es)") || rep.Envelope[0].Cells[0].Passes != 2 {
		t.Errorf("show --json: exit %d %+v", code, rep)
	}

	// A tampered study.json is reported, not trusted.
	study := filepath.Join(runDir, capacity.RunStudyFile)
	b, _ := os.ReadFile(study)
	if err := os.WriteFile(study, append(b, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCapacity("show", "1", "--notebook", nbPath)
	if code != 1 || !strings.Contains(stdout, "study.json NOT TRUSTED") || !strings.Contains(stderr, "not the journaled") ||
		strings.Contains(stdout, "envelope (") || !strings.Contains(stdout, "selected points (from the journal):") {
		t.Errorf("tampered show: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestCapacityRunRouting(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	_ = os.WriteFile(plan, []byte("{}"), 0o644)
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{plan}, false},
		{[]string{plan, "--out", "x"}, false},
		{[]string{plan, "--notebook", "nb.db"}, true},
		{[]string{"--notebook=nb.db", plan}, true},
		{[]string{"3"}, true},
		{[]string{"--out", plan, "3"}, true},
		{[]string{"--out", "3", plan}, false},
		{[]string{filepath.Join(dir, "missing.json")}, false},
		{[]string{"a.json"}, false},
		{[]string{"tiny capacity"}, true},
	} {
		if got := capacityRunsInNotebook(c.args); got != c.want {
			t.Errorf("%v: %v, want %v", c.args, got, c.want)
		}
	}
}

func TestCapacityShowRefusesThroughputStudy(t *testing.T) {
	dir := t.TempDir()
	nbPath := filepath.Join(dir, "nb.db")
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.CreateStudy(context.Background(), store.Study{Name: "tp", Kind: store.StudyThroughput}); err != nil {
		t.Fatal(err)
	}
	nb.Close()
	code, _, stderr := runCapacity("show", "1", "--notebook", nbPath)
	if code != 2 || !strings.Contains(stderr, "throughput study") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// `capacity run PLAN --notebook P` registers the plan first (idempotently).
func TestCapacityStudyRunPlanRegistersFirst(t *testing.T) {
	dir := t.TempDir()
	nbPath := filepath.Join(dir, "nb.db")
	plan := capacityStudyPlan(t, dir)
	code, stdout, stderr := runCapacity("run", plan, "--notebook", nbPath, "--llama-dir", filepath.Join(dir, "no-llama"))
	if code != 2 || !strings.Contains(stdout, `study 1 "tiny capacity (CLI test)" registered (capacity)`) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCapacity("show", "1", "--notebook", nbPath)
	if code != 0 || !strings.Contains(stdout, "(capacity, registered)") || !strings.Contains(stdout, "not assembled yet") ||
		!strings.Contains(stdout, "P4       PENDING") {
		t.Errorf("show: exit %d\n%s", code, stdout)
	}
}

// smallCapacityPlan is the acceptance plan cut to one candidate (dense), P {1,2} x C {1},
// 2 measured requests of 4 tokens, named name (another name is another plan).
func smallCapacityPlan(t *testing.T, dir, name string) string {
	t.Helper()
	path := capacityRunPlan(t, dir)
	var m map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["name"] = name
	m["candidates"] = m["candidates"].([]any)[:1]
	m["clients"], m["warmups"], m["measured"], m["n_predict"] = []int{1}, 0, 2, 4
	b, _ = json.MarshalIndent(m, "", "  ")
	out := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// haltCapacityStudy runs study id with the engine `capacity run` uses and stops it when its
// first server lifetime is done: the study is halted.
func haltCapacityStudy(t *testing.T, nbPath string, id int64) *capacity.RunSummary {
	t.Helper()
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, _, _, err := capacityEngine(ctx, nb, id, "", false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e.OnEvent = func(ev capacity.RunEvent) {
		if ev.Type == capacity.LifetimeDone {
			cancel()
		}
	}
	sum, err := e.Run(ctx, id, "")
	if err == nil || sum == nil || sum.Status != capacity.StatusHalted {
		t.Fatalf("halt study %d: %+v %v", id, sum, err)
	}
	return sum
}

// `capacity run ID` on a halted study resumes its run folder (what it kept is printed);
// --fresh starts a new run folder and leaves the halted one as it was.
func TestCapacityStudyRunResumeAndFresh(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	runs := filepath.Join(dir, "data", "sparkbench", "runs")
	nbPath := filepath.Join(dir, "notebook.db")
	for _, name := range []string{"resume me", "start me afresh"} {
		if code, stdout, stderr := runCapacity("register", smallCapacityPlan(t, dir, name), "--notebook", nbPath); code != 0 {
			t.Fatalf("register %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
	}

	// Study 1: halted, then resumed by a plain `capacity run 1`.
	halted := haltCapacityStudy(t, nbPath, 1)
	if halted.RunDir != filepath.Join(runs, "1") {
		t.Fatalf("run folder %s", halted.RunDir)
	}
	code, stdout, stderr := runCapacity("run", "1", "--notebook", nbPath)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Logf("capacity run 1 (resume):\n%s%s", stdout, stderr)
	for _, w := range []string{"complete, 3 server lifetimes recorded (resumed: 1 kept from before), run folder " + halted.RunDir} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	if !strings.Contains(stderr, "resumed: 1 lifetime done before (kept, not run again), 3 to run") {
		t.Errorf("stderr lacks the resume line:\n%s", stderr)
	}
	// study.json is what `capacity assemble` gives for the folder.
	var rep capacity.RunReport
	b, _ := os.ReadFile(filepath.Join(halted.RunDir, capacity.RunManifestFile))
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Resumes) != 1 || len(rep.Lifetimes) != 4 {
		t.Fatalf("run.json: %v %+v", err, rep)
	}
	again := filepath.Join(dir, "again.json")
	args := append([]string{"assemble"}, rep.AssembleArgs[:len(rep.AssembleArgs)-1]...)
	if code, _, stderr := runCapacity(append(args, again)...); code != 0 {
		t.Fatalf("assemble: exit %d %s", code, stderr)
	}
	a, _ := os.ReadFile(again)
	s, _ := os.ReadFile(filepath.Join(halted.RunDir, capacity.RunStudyFile))
	if len(s) == 0 || !bytes.Equal(a, s) {
		t.Error("study.json differs from `capacity assemble` of the resumed folder")
	}

	// Study 2: halted, then --fresh: a new folder, the halted one untouched.
	halted = haltCapacityStudy(t, nbPath, 2)
	before, _ := os.ReadFile(filepath.Join(halted.RunDir, capacity.RunManifestFile))
	code, stdout, stderr = runCapacity("run", "2", "--notebook", nbPath, "--fresh")
	if code != 0 {
		t.Fatalf("--fresh: exit %d\n%s%s", code, stdout, stderr)
	}
	if w := "complete, 4 server lifetimes recorded, run folder " + halted.RunDir + ".2,"; !strings.Contains(stdout, w) || strings.Contains(stdout+stderr, "resumed") {
		t.Errorf("--fresh: want %q and no resume:\n%s%s", w, stdout, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(halted.RunDir, capacity.RunManifestFile)); !bytes.Equal(before, after) {
		t.Error("--fresh changed the halted run's folder")
	}

	var vo, ve strings.Builder
	if code := cmdNotebook([]string{"verify", "--notebook", nbPath}, &vo, &ve); code != 0 {
		t.Errorf("notebook verify: exit %d\n%s%s", code, vo.String(), ve.String())
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	if n := countJournal(t, nb, 1, capacity.NoteResumed); n != 1 {
		t.Errorf("study 1: %d %s entries", n, capacity.NoteResumed)
	}
	if n := countJournal(t, nb, 2, capacity.NoteResumed); n != 0 {
		t.Errorf("study 2: %d %s entries", n, capacity.NoteResumed)
	}
}

// `capacity run PLAN --resume DIR` refuses a folder that is not a run of the plan, and --out
// with --resume.
func TestCapacityRunResumeRefusals(t *testing.T) {
	llamatest.Binaries(t)
	dir := t.TempDir()
	plan := smallCapacityPlan(t, dir, "refusals")
	empty := filepath.Join(dir, "empty")
	_ = os.MkdirAll(empty, 0o755)
	if code, _, stderr := runCapacity("run", plan, "--resume", empty); code != 2 || !strings.Contains(stderr, "cannot resume the run in "+empty+": it has no plan.json") {
		t.Errorf("not a run folder: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCapacity("run", plan, "--resume", empty, "--out", filepath.Join(dir, "x")); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("--out and --resume: exit %d %s", code, stderr)
	}
}

// capacityEngine is the engine that runs study id, as `capacity run` and the window use it
// (workbench.CapacityEngine; warnings on warn). needDataDir: no --out was given, so runs go
// under the data folder. code is the exit status for the error (2: bad input, 1: the notebook).
func capacityEngine(ctx context.Context, nb *store.Notebook, id int64, llamaDir string, needDataDir bool, warn io.Writer) (*caprun.Engine, capacity.StoredStudy, int, error) {
	out := ""
	if !needDataDir {
		out = "given"
	}
	e, st, err := workbench.CapacityEngine(ctx, nb, workbench.CapacityRunRequest{ID: id, LlamaDir: llamaDir, Out: out, Hash: hashShow(warn),
		Warn: func(msg string) { fprintf(warn, "sparkbench capacity run: %s\n", msg) }})
	if errors.As(err, new(*workbench.RequestError)) {
		return nil, st, 2, err
	}
	if err != nil {
		return nil, st, 1, err
	}
	return e, st, 0, nil
}
