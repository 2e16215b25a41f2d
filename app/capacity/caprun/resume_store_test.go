package caprun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// The acceptance test of resuming on the real llama-server and the real notebook: a study
// (tiny dense model, P {1,2} x C {1}, forward and reverse) is stopped when its first server
// lifetime is done; the notebook is closed and opened again (as after a restart); Run resumes
// it. The finished lifetime is not run again (no server started for it, its requests file
// unchanged, one leg), the rest run, study.json is what `capacity assemble` gives for the
// folder, the pass keeps one clock, and the journal verifies.
func TestEngineResumeRealServer(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	plan := writeRunPlanOne(t, dir, "dense", llamatest.Model(t, "tiny-llama-f32.gguf"), []string{"-t", llamatest.Threads, "-lv", "4"},
		[]int{1, 2}, []int{1}, 0, 2, 4)
	nbPath := filepath.Join(dir, "notebook.db")
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { nb.Close() }()
	ctx := context.Background()
	p, err := capacity.Load(plan)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capacity.Register(ctx, store.CapacityRecorder{N: nb}, p, plan, hashFile)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{tag(t)}
	engine := func(onEvent func(capacity.RunEvent)) *Engine {
		return &Engine{Rec: store.CapacityRecorder{N: nb}, Server: loc.Server, Env: env, DataDir: filepath.Join(dir, "data"),
			StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile, OnEvent: onEvent}
	}

	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	t0 := time.Now()
	first, err := engine(func(ev capacity.RunEvent) {
		if ev.Type == capacity.LifetimeDone {
			stop()
		}
	}).Run(stopCtx, reg.StudyID, "")
	if err == nil || first == nil || first.Status != capacity.StatusHalted {
		t.Fatalf("stopped run: %+v %v", first, err)
	}
	t.Logf("stopped after the first lifetime in %v: %v", time.Since(t0).Round(time.Millisecond), err)
	const kept = "forward/dense/p1"
	keptDir := filepath.Join(first.RunDir, lifetimeDir(capacity.LifetimeKey{Pass: "forward", Candidate: "dense", Slots: 1}))
	reqBefore, err := os.ReadFile(filepath.Join(keptDir, capacity.RunRequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	legsBefore, _ := store.CapacityRecorder{N: nb}.Legs(ctx, reg.StudyID)

	// As after a restart.
	if err := nb.Close(); err != nil {
		t.Fatal(err)
	}
	if nb, err = store.Open(nbPath); err != nil {
		t.Fatal(err)
	}
	var lines []string
	servers := map[string]int{}
	t0 = time.Now()
	sum, err := engine(func(ev capacity.RunEvent) {
		if l := capacity.ProgressLine(ev); l != "" {
			lines = append(lines, l)
		}
		if ev.Type == capacity.LifetimeStarted {
			servers[ev.Lifetime]++
		}
	}).Run(ctx, reg.StudyID, "")
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, strings.Join(lines, "\n"))
	}
	t.Logf("resumed in %v:\n%s", time.Since(t0).Round(time.Millisecond), strings.Join(lines, "\n"))
	if !sum.Resumed || sum.LifetimesKept != 1 || sum.RunDir != first.RunDir || sum.Status != capacity.StatusComplete || sum.Legs != 3 {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(lines[0], "resumed: 1 lifetime done before") {
		t.Errorf("first console line %q", lines[0])
	}
	if servers[kept] != 0 || len(servers) != 3 {
		t.Errorf("server lifetimes started on resume: %v", servers)
	}
	if after, _ := os.ReadFile(filepath.Join(keptDir, capacity.RunRequestsFile)); !bytes.Equal(after, reqBefore) {
		t.Error("the kept lifetime's requests.jsonl changed")
	}
	rep := sum.Report
	study, err := os.ReadFile(filepath.Join(sum.RunDir, capacity.RunStudyFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := assembleFromArgs(t, rep.AssembleArgs); !bytes.Equal(got, study) {
		t.Error("study.json differs from `capacity assemble` of the run folder")
	}
	for _, c := range rep.Result.Candidates[0].Cells {
		for _, ps := range c.Passes {
			if ps.GenerationRate == nil || ps.CompletionRate != 1 {
				t.Errorf("P%d/C%d %s: rate %v completion %v", c.Slots, c.Clients, ps.Pass, ps.GenerationRate, ps.CompletionRate)
			}
		}
	}
	// One clock per pass: forward/dense/p2, measured after the resume, comes after p1.
	_, p1End := requestSpan(t, filepath.Join(keptDir, capacity.RunRequestsFile))
	i := slices.IndexFunc(rep.Lifetimes, func(rl capacity.RunLifetime) bool { return rl.Key == "forward/dense/p2" })
	if i < 0 {
		t.Fatalf("run.json lists no forward/dense/p2: %+v", rep.Lifetimes)
	}
	p2Start, _ := requestSpan(t, filepath.Join(sum.RunDir, rep.Lifetimes[i].Files["requests"]))
	if p2Start <= p1End {
		t.Errorf("forward/dense/p2 starts at %.1f ms, before forward/dense/p1 ended (%.1f ms)", p2Start, p1End)
	}

	// The notebook: the kept lifetime has its one leg; every lifetime has exactly one leg that
	// finished ok; the journal verifies.
	legs, err := store.CapacityRecorder{N: nb}.Legs(ctx, reg.StudyID)
	if err != nil {
		t.Fatal(err)
	}
	if len(legs) != len(legsBefore)+3 {
		t.Errorf("%d legs after the resume, %d before", len(legs), len(legsBefore))
	}
	ok := map[string]int{}
	for _, l := range legs {
		key, _, _ := strings.Cut(l.Label, " (attempt ")
		if l.Class == "ok" {
			ok[key]++
		}
		if l.Label == kept && l.ID != legsBefore[0].ID {
			t.Errorf("a second leg for %s: %+v", kept, l)
		}
	}
	if len(ok) != 4 {
		t.Errorf("ok legs per lifetime: %v", ok)
	}
	for k, n := range ok {
		if n != 1 {
			t.Errorf("%s: %d ok legs", k, n)
		}
	}
	vr, err := nb.Verify(ctx)
	if err != nil || !vr.OK() {
		t.Errorf("journal verify: %+v %v", vr, err)
	}
	es, _ := nb.Journal(ctx, reg.StudyID, 0, 0)
	resumed := 0
	for _, e := range es {
		if e.Kind == capacity.NoteResumed {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("%d %s entries", resumed, capacity.NoteResumed)
	}
	a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, reg.StudyID)
	if err != nil || a.Result == nil || a.Problem != "" {
		t.Errorf("assembled: %+v %v", a, err)
	}
}
