package caprun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/runner/llamacpp"
)

// fakePlan is a one-candidate plan for the fake server: P {1,2} x C {1,2}, forward and
// reverse (four lifetimes: forward/fake/p1, forward/fake/p2, reverse/fake/p2, reverse/fake/p1).
func fakePlan(t *testing.T, dir string) string {
	t.Helper()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	return writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-t", "1"}, capacity.Markers{Must: []string{`CPU_Mapped model buffer`}}}},
		[]int{1, 2}, []int{1, 2}, 1, 3, 8)
}

// startFake starts a run of plan on the fake server.
func startFake(t *testing.T, plan, out string, resume bool, env []string) *Run {
	t.Helper()
	return StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: out, Resume: resume,
		Env: env, StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second})
}

// stopAfterFirstLifetime runs until the first lifetime is done, then stops the run.
func stopAfterFirstLifetime(t *testing.T, r *Run) (*capacity.RunReport, []capacity.RunEvent) {
	t.Helper()
	var evs []capacity.RunEvent
	for ev := range r.Events() {
		evs = append(evs, ev)
		if ev.Type == capacity.LifetimeDone {
			r.Stop()
		}
	}
	rep, err := r.Wait()
	if !errors.Is(err, capacity.ErrRunStopped) || rep == nil {
		t.Fatalf("stopped run: %v", err)
	}
	return rep, evs
}

func readManifest(t *testing.T, out string) capacity.RunReport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, capacity.RunManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var rep capacity.RunReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assembleFromArgs does what `sparkbench capacity assemble ARGS…` does with a run's
// assemble_args: read each named file and assemble; it returns the bytes it would write.
func assembleFromArgs(t *testing.T, args []string) []byte {
	t.Helper()
	in := capacity.Inputs{Requests: map[capacity.LifetimeKey]capacity.InputFile{}, RSS: map[capacity.LifetimeKey]capacity.InputFile{}, ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{},
		Quality: map[capacity.QualityKey]capacity.InputFile{}, BenchTG: map[string]float64{}}
	var plan *capacity.Plan
	for i := 0; i+1 < len(args); i += 2 {
		flag, val := args[i], args[i+1]
		switch flag {
		case "--plan":
			plan = mustLoad(t, val)
			continue
		case "--output":
			continue
		}
		ks, path, ok := strings.Cut(val, "=")
		if !ok {
			t.Fatalf("assemble arg %s %s", flag, val)
		}
		f := capacity.InputFile{Name: path, Data: readFile(t, path)}
		if flag == capacity.FlagQuality {
			k, err := capacity.ParseQualityKey(ks)
			if err != nil {
				t.Fatal(err)
			}
			in.Quality[k] = f
			continue
		}
		k, err := capacity.ParseLifetimeKey(ks)
		if err != nil {
			t.Fatal(err)
		}
		map[string]map[capacity.LifetimeKey]capacity.InputFile{capacity.FlagRequests: in.Requests, capacity.FlagRSS: in.RSS, capacity.FlagServerLog: in.ServerLogs}[flag][k] = f
	}
	if plan == nil {
		t.Fatal("no --plan in the assemble args")
	}
	res, err := capacity.Assemble(plan, in)
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// requestSpan is the first send and the last end (ms) of a lifetime's request file.
func requestSpan(t *testing.T, path string) (first, last float64) {
	t.Helper()
	f, err := capacity.ReadRequests(path, readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	first = f.Records[0].SendMs
	for _, r := range f.Records {
		first, last = min(first, r.SendMs), max(last, r.EndMs)
	}
	return first, last
}

// A run stopped in its second lifetime resumes: the finished lifetime is kept (its files
// untouched, no server started for it), the one the stop cut is run again in a new folder
// beside the cut attempt's (whose files stay as they were), the rest run, each pass on its
// recorded clock, and the folder assembles as `capacity assemble` assembles it.
func TestRunResume(t *testing.T) {
	dir := t.TempDir()
	plan := fakePlan(t, dir)
	out := filepath.Join(dir, "run")
	env := []string{tag(t), fakeServerEnv + "=1"}
	r1 := startFake(t, plan, out, false, env)
	for ev := range r1.Events() {
		if ev.Type == capacity.RequestDone && ev.Lifetime == "forward/fake/p2" && ev.Clients == 1 {
			r1.Stop() // in its first client level
		}
	}
	rep1, err := r1.Wait()
	if !errors.Is(err, capacity.ErrRunStopped) || rep1 == nil || len(rep1.Lifetimes) != 2 {
		t.Fatalf("stopped run: %v %+v", err, rep1)
	}
	first, cut := rep1.Lifetimes[0], rep1.Lifetimes[1]
	if first.Key != "forward/fake/p1" || first.Interrupted != "" || len(first.Cells) != 2 {
		t.Fatalf("first lifetime %+v", first)
	}
	if cut.Key != "forward/fake/p2" || !strings.Contains(cut.Interrupted, capacity.ErrRunStopped.Error()) {
		t.Fatalf("the lifetime the stop cut: %+v", cut)
	}
	m1 := readManifest(t, out)
	if m1.InProgress || !strings.Contains(m1.Error, capacity.ErrRunStopped.Error()) || m1.PassOrigins["forward"].IsZero() {
		t.Fatalf("run.json of the stopped run: %+v", m1)
	}
	firstReq := filepath.Join(out, first.Files["requests"])
	reqBytes := readFile(t, firstReq)
	logBytes := readFile(t, filepath.Join(out, first.Files["server_log"]))
	cutFiles := map[string][]byte{} // the cut attempt's files: kept as they are
	for _, rel := range cut.Files {
		cutFiles[rel] = readFile(t, filepath.Join(out, rel))
	}
	if len(cutFiles) == 0 || cut.Dir != lifetimeDir(capacity.LifetimeKey{Pass: "forward", Candidate: "fake", Slots: 2}) {
		t.Fatalf("the cut attempt: %+v", cut)
	}
	time.Sleep(50 * time.Millisecond) // the resumed part of the pass starts measurably later

	r := startFake(t, plan, out, true, env)
	var evs []capacity.RunEvent
	for ev := range r.Events() {
		evs = append(evs, ev)
		if ev.Type == capacity.RunStarted {
			// Were the resumed run killed now, its checkpoint still keeps what it kept.
			// (Read as run_started arrives: the run may be a lifetime further, never less.)
			if cp := readManifest(t, out); !cp.InProgress || len(cp.Lifetimes) == 0 || cp.Lifetimes[0].Key != first.Key || len(cp.Resumes) != 1 {
				t.Errorf("first checkpoint of the resumed run: %+v", cp)
			}
		}
	}
	rep, err := r.Wait()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	t.Logf("resumed: %s", capacity.ProgressLine(evs[0]))
	if evs[0].Type != capacity.RunStarted || evs[0].Resume == nil || !slices.Equal(evs[0].Resume.Lifetimes, []string{"forward/fake/p1"}) ||
		!slices.Equal(evs[0].Resume.Kept, []string{cut.Dir}) || len(evs[0].Resume.Cleared) != 0 {
		t.Fatalf("run_started %+v", evs[0])
	}
	if p := evs[0].Progress; p.LifetimesDone != 1 || p.CellsDone != 2 || p.LifetimesKept != 1 || p.CellsKept != 2 {
		t.Errorf("progress at the start of the resumed run: %+v", p)
	}
	line := capacity.ProgressLine(evs[0])
	if !strings.Contains(line, "resumed: 1 lifetime done before") {
		t.Errorf("console line %q", line)
	}
	if !strings.Contains(line, "run again, the earlier attempt's files kept in "+cut.Dir) {
		t.Errorf("console line %q does not say where the cut attempt's files are", line)
	}
	var started []string
	again := cut.Dir + ".2" // the cut lifetime's new attempt, beside the cut one
	for _, ev := range evs {
		if ev.Type == capacity.LifetimeStarted {
			started = append(started, ev.Lifetime)
			if want := map[bool]string{true: again}[ev.Lifetime == cut.Key]; ev.Dir != want {
				t.Errorf("%s: lifetime_started dir %q, want %q", ev.Lifetime, ev.Dir, want)
			}
			if !ev.Origin.Equal(m1.PassOrigins["forward"]) && strings.HasPrefix(ev.Lifetime, "forward/") {
				t.Errorf("%s: origin %v, the pass's recorded origin is %v", ev.Lifetime, ev.Origin, m1.PassOrigins["forward"])
			}
		}
	}
	if want := []string{"forward/fake/p2", "reverse/fake/p2", "reverse/fake/p1"}; !slices.Equal(started, want) {
		t.Errorf("lifetimes started on resume: %v, want %v", started, want)
	}
	if last := evs[len(evs)-1]; last.Progress.LifetimesDone != 4 || last.Progress.CellsDone != 8 {
		t.Errorf("final progress %+v", last.Progress)
	}
	if !bytes.Equal(readFile(t, firstReq), reqBytes) || !bytes.Equal(readFile(t, filepath.Join(out, first.Files["server_log"])), logBytes) {
		t.Error("the kept lifetime's files changed")
	}
	if len(rep.Lifetimes) != 4 || rep.Lifetimes[0].Key != first.Key || rep.Lifetimes[0].Server.Pid != first.Server.Pid {
		t.Fatalf("lifetimes of the resumed report: %+v", rep.Lifetimes)
	}
	for _, rl := range rep.Lifetimes {
		if rl.Interrupted != "" || len(rl.Cells) != 2 {
			t.Errorf("%s: %+v", rl.Key, rl)
		}
	}
	if rl := rep.Lifetimes[1]; rl.Key != cut.Key || rl.Dir != again || rl.Files["requests"] != filepath.Join(again, capacity.RunRequestsFile) {
		t.Errorf("the cut lifetime measured again: %+v, want its files in %s", rl, again)
	}
	for rel, data := range cutFiles {
		if !bytes.Equal(readFile(t, filepath.Join(out, rel)), data) {
			t.Errorf("the cut attempt's %s changed", rel)
		}
	}
	m := readManifest(t, out)
	if m.InProgress || m.Error != "" || !m.Started.Equal(m1.Started) || len(m.Resumes) != 1 || !m.PassOrigins["forward"].Equal(m1.PassOrigins["forward"]) {
		t.Errorf("run.json after the resume: started %v (was %v), resumes %+v, origins %v (were %v)", m.Started, m1.Started, m.Resumes, m.PassOrigins, m1.PassOrigins)
	}
	if m.Duration < m1.Duration {
		t.Errorf("duration %v is less than the first run's %v", m.Duration, m1.Duration)
	}
	// One time axis per pass: forward/p2, measured after the pause, comes after forward/p1.
	_, p1End := requestSpan(t, firstReq)
	p2Start, _ := requestSpan(t, filepath.Join(out, rep.Lifetimes[1].Files["requests"]))
	if p2Start <= p1End+50 {
		t.Errorf("forward/fake/p2 starts at %.1f ms, forward/fake/p1 ended at %.1f ms: not one clock", p2Start, p1End)
	}
	study := readFile(t, filepath.Join(out, capacity.RunStudyFile))
	if got := assembleFromArgs(t, rep.AssembleArgs); !bytes.Equal(got, study) {
		t.Error("study.json differs from `capacity assemble` of the folder")
	}
	if res := rep.Result; res == nil || len(res.Candidates[0].Cells) != 4 {
		t.Fatalf("result %+v", res)
	}

	// Resuming the complete folder runs nothing and assembles the same bytes.
	r = startFake(t, plan, out, true, env)
	for ev := range r.Events() {
		if ev.Type == capacity.LifetimeStarted {
			t.Errorf("resuming a complete folder started %s", ev.Lifetime)
		}
	}
	if rep, err := r.Wait(); err != nil || rep.StudySHA != canon.SHA256Hex(study) {
		t.Errorf("resume of a complete folder: %v", err)
	}
}

// A killed run leaves its last checkpoint (in_progress) and the partial folder of the lifetime
// it was running: a resume keeps what the checkpoint lists, and that folder as it was (the
// lifetime is measured again in a new one).
func TestRunResumeAfterKill(t *testing.T) {
	dir := t.TempDir()
	plan := fakePlan(t, dir)
	out := filepath.Join(dir, "run")
	env := []string{tag(t), fakeServerEnv + "=1"}
	var checkpoint []byte
	r := startFake(t, plan, out, false, env)
	for ev := range r.Events() {
		// After forward/fake/p2 started the checkpoint lists forward/fake/p1 only.
		if ev.Type == capacity.ServerReady && ev.Lifetime == "forward/fake/p2" && checkpoint == nil {
			checkpoint = readFile(t, filepath.Join(out, capacity.RunManifestFile))
		}
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	var cp capacity.RunReport
	if err := json.Unmarshal(checkpoint, &cp); err != nil || !cp.InProgress || len(cp.Lifetimes) != 1 {
		t.Fatalf("checkpoint %s (%v)", checkpoint, err)
	}
	// The kill: the final run.json and study.json never written, later lifetimes' folders
	// missing, forward/fake/p2 half there.
	_ = os.WriteFile(filepath.Join(out, capacity.RunManifestFile), checkpoint, 0o644)
	_ = os.Remove(filepath.Join(out, capacity.RunStudyFile))
	for _, k := range []string{"reverse/fake/p1", "reverse/fake/p2"} {
		lk, _ := capacity.ParseLifetimeKey(k)
		_ = os.RemoveAll(filepath.Join(out, lifetimeDir(lk)))
	}
	p2 := filepath.Join(out, lifetimeDir(capacity.LifetimeKey{Pass: "forward", Candidate: "fake", Slots: 2}), capacity.RunRequestsFile)
	_ = os.Truncate(p2, 100)

	r = startFake(t, plan, out, true, env)
	var rs *capacity.RunResume
	for ev := range r.Events() {
		if ev.Type == capacity.RunStarted {
			rs = ev.Resume
		}
	}
	rep, err := r.Wait()
	if err != nil {
		t.Fatalf("resume after the kill: %v", err)
	}
	if rs == nil || len(rs.Lifetimes) != 1 || !slices.Equal(rs.Kept, []string{lifetimeDir(capacity.LifetimeKey{Pass: "forward", Candidate: "fake", Slots: 2})}) || !strings.HasPrefix(rs.Previous, "killed") {
		t.Fatalf("resume %+v", rs)
	}
	if got := assembleFromArgs(t, rep.AssembleArgs); !bytes.Equal(got, readFile(t, filepath.Join(out, capacity.RunStudyFile))) {
		t.Error("study.json differs from `capacity assemble` of the folder")
	}
	if st, err := os.Stat(p2); err != nil || st.Size() != 100 {
		t.Errorf("the killed attempt's requests file: %v %v, want it kept as it was (100 bytes)", st, err)
	}
}

// What cannot be resumed is refused before anything runs, and the folder is left as it was.
func TestRunResumeRefusals(t *testing.T) {
	dir := t.TempDir()
	plan := fakePlan(t, dir)
	out := filepath.Join(dir, "run")
	env := []string{tag(t), fakeServerEnv + "=1"}
	stopAfterFirstLifetime(t, startFake(t, plan, out, false, env))
	manifest := readFile(t, filepath.Join(out, capacity.RunManifestFile))

	refused := func(name, plan, out, want string) {
		t.Helper()
		r := startFake(t, plan, out, true, env)
		for ev := range r.Events() {
			if ev.Type != capacity.RunDone {
				t.Errorf("%s: event %s before the refusal", name, ev.Type)
			}
		}
		_, err := r.Wait()
		if !capacity.IsResumeError(err) || !capacity.IsRefusal(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--fresh") {
			t.Errorf("%s: %v, want a resume refusal saying %q", name, err, want)
		}
	}
	// The plan changed (another n_predict): the folder is another plan's.
	other := filepath.Join(t.TempDir(), "plan.json")
	p := mustLoad(t, plan)
	p.NPredict = 9
	b, _ := json.Marshal(p)
	_ = os.WriteFile(other, b, 0o644)
	_ = os.WriteFile(filepath.Join(filepath.Dir(other), "prompt-plan.json"), readFile(t, filepath.Join(dir, "prompt-plan.json")), 0o644)
	_ = os.WriteFile(filepath.Join(filepath.Dir(other), "model.gguf"), readFile(t, filepath.Join(dir, "model.gguf")), 0o644)
	refused("other plan", other, out, "not this plan")
	refused("no folder", plan, filepath.Join(dir, "nowhere"), "does not exist")
	empty := filepath.Join(dir, "empty")
	_ = os.MkdirAll(empty, 0o755)
	refused("not a run folder", plan, empty, "no plan.json")
	if !bytes.Equal(readFile(t, filepath.Join(out, capacity.RunManifestFile)), manifest) {
		t.Error("a refused resume changed run.json")
	}

	// Another build: a study measures one build.
	var m capacity.RunReport
	_ = json.Unmarshal(manifest, &m)
	m.Build = &llamacpp.Build{VersionLine: "version: 1 (build 1, commit old)"}
	b, _ = json.Marshal(m)
	_ = os.WriteFile(filepath.Join(out, capacity.RunManifestFile), b, 0o644)
	r := StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: out, Resume: true, Env: env,
		Build: &llamacpp.Build{VersionLine: "version: 2 (build 2, commit new)"}})
	for range r.Events() {
	}
	if _, err := r.Wait(); !capacity.IsResumeError(err) || !strings.Contains(err.Error(), "one build") {
		t.Errorf("another build: %v", err)
	}
	// A run.json from before runs could be resumed (no pass origins) with finished lifetimes.
	m.Build, m.PassOrigins = nil, nil
	b, _ = json.Marshal(m)
	_ = os.WriteFile(filepath.Join(out, capacity.RunManifestFile), b, 0o644)
	refused("no pass origins", plan, out, "no clock origin")
	// No run.json at all, but lifetime folders: which ones finished is unknown.
	_ = os.Remove(filepath.Join(out, capacity.RunManifestFile))
	refused("no run.json", plan, out, "killed before")

	// Another process runs into the folder.
	_ = os.WriteFile(filepath.Join(out, capacity.RunManifestFile), manifest, 0o644)
	unlock, err := lockRunDir(out)
	if err != nil {
		t.Fatal(err)
	}
	r = startFake(t, plan, out, true, env)
	for range r.Events() {
	}
	if _, err := r.Wait(); !errors.Is(err, capacity.ErrBusy) || capacity.IsResumeError(err) || !strings.Contains(err.Error(), "another sparkbench process is running into") {
		t.Errorf("locked: %v, want ErrBusy", err)
	}
	unlock()
}

// engineFor is an engine on the fake server.
func engineFor(t *testing.T, rec capacity.Recorder, dataDir string, onEvent func(capacity.RunEvent)) *Engine {
	return &Engine{Rec: rec, Server: os.Args[0], Env: []string{tag(t), fakeServerEnv + "=1"}, DataDir: dataDir,
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, OnEvent: onEvent}
}

// haltInSecondLifetime runs study id with the engine and cancels it at the first request of
// its second lifetime (forward/fake/p2): the study is halted.
func haltInSecondLifetime(t *testing.T, rec capacity.Recorder, id int64, dataDir string) *capacity.RunSummary {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := engineFor(t, rec, dataDir, func(ev capacity.RunEvent) {
		if ev.Type == capacity.RequestDone && ev.Lifetime == "forward/fake/p2" {
			cancel()
		}
	})
	sum, err := e.Run(ctx, id, "")
	if err == nil || sum == nil || sum.Status != capacity.StatusHalted {
		t.Fatalf("halted run: %+v %v", sum, err)
	}
	return sum
}

func notesOf(st capacity.StoredStudy, kind string) []map[string]any {
	var out []map[string]any
	for _, n := range st.Notes {
		if n.Kind == kind {
			var m map[string]any
			_ = json.Unmarshal(n.Payload, &m)
			out = append(out, m)
		}
	}
	return out
}

// Run on a halted study resumes its run folder: the lifetime recorded before keeps its leg and
// is not run again, the rest get legs (a lifetime run again is "KEY (attempt 2)"), the resume
// is journaled, and the pass keeps its clock origin in the notebook's rows.
func TestEngineResume(t *testing.T) {
	dir := t.TempDir()
	planPath := fakePlan(t, dir)
	rec := &memRecorder{}
	ctx := context.Background()
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	first := haltInSecondLifetime(t, rec, reg.StudyID, data)
	m1 := readManifest(t, first.RunDir)
	legs1, _ := rec.Legs(ctx, reg.StudyID)
	if len(legs1) != 2 || legs1[0].Label != "forward/fake/p1" || legs1[0].Class != "ok" || legs1[1].Class != "halted" ||
		!strings.Contains(legs1[1].Reason, "measures this lifetime again") {
		t.Fatalf("legs after the halt: %+v", legs1)
	}

	// While another process runs into the folder, Run is busy: no new folder either.
	unlock, err := lockRunDir(first.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engineFor(t, rec, data, nil).Run(ctx, reg.StudyID, ""); !errors.Is(err, capacity.ErrBusy) {
		t.Errorf("run while the folder is locked: %v", err)
	}
	unlock()
	if _, err := os.Stat(first.RunDir + ".2"); err == nil {
		t.Error("a busy run made a new folder")
	}

	var evs []capacity.RunEvent
	sum, err := engineFor(t, rec, data, func(ev capacity.RunEvent) { evs = append(evs, ev) }).Run(ctx, reg.StudyID, "")
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if !sum.Resumed || sum.LifetimesKept != 1 || sum.RunDir != first.RunDir || sum.Status != capacity.StatusComplete || sum.Legs != 3 || sum.NotResumed != "" {
		t.Fatalf("summary %+v (first run in %s)", sum, first.RunDir)
	}
	for _, ev := range evs {
		if ev.Lifetime == "forward/fake/p1" {
			t.Errorf("the kept lifetime ran again: %s", ev.Type)
		}
	}
	legs, _ := rec.Legs(ctx, reg.StudyID)
	if len(legs) != len(legs1)+3 {
		t.Fatalf("%d legs after the resume, %d before", len(legs), len(legs1))
	}
	labels := map[string]int{}
	for _, l := range legs {
		if l.State != "finished" {
			t.Errorf("leg %+v", l)
		}
		labels[l.Label]++
	}
	for label, n := range labels {
		if n != 1 {
			t.Errorf("label %s used %d times", label, n)
		}
	}
	if labels["forward/fake/p2 (attempt 2)"] != 1 {
		t.Errorf("the lifetime cut by the halt and run again: labels %v", labels)
	}
	st := mustStudy(t, rec, reg.StudyID)
	res := notesOf(st, capacity.NoteResumed)
	if len(res) != 1 || res[0]["run_dir"] != first.RunDir || res[0]["lifetimes_skipped"] != float64(1) || res[0]["lifetimes_total"] != float64(4) {
		t.Errorf("resume notes %v", res)
	}
	if n := notesOf(st, capacity.NoteRun); len(n) != 1 {
		t.Errorf("run notes %v", n)
	}
	// Rows of the lifetimes measured after the resume hang on the pass's first origin.
	for _, lid := range rec.studies[reg.StudyID].order {
		for _, r := range rec.legs[lid].reqs {
			if want := m1.PassOrigins[r.Key.Pass]; !want.IsZero() && !r.Origin.Equal(want) {
				t.Errorf("%s: origin %v, the pass's is %v", r.Key, r.Origin, want)
			}
		}
	}
	a, err := capacity.LoadAssembled(ctx, rec, reg.StudyID)
	if err != nil || a.Result == nil || a.Problem != "" {
		t.Fatalf("assembled: %+v %v", a, err)
	}
	if got := assembleFromArgs(t, sum.Report.AssembleArgs); !bytes.Equal(got, readFile(t, a.Path)) {
		t.Error("study.json differs from `capacity assemble` of the folder")
	}
}

// Fresh starts a new run folder; a last run folder that cannot be resumed (here: removed)
// is reported (NotResumed) and a new one is used; a study with a running leg is busy.
func TestEngineFreshNotResumedBusy(t *testing.T) {
	dir := t.TempDir()
	planPath := fakePlan(t, dir)
	rec := &memRecorder{}
	ctx := context.Background()
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	first := haltInSecondLifetime(t, rec, reg.StudyID, data)

	ctx2, cancel := context.WithCancel(ctx)
	e := engineFor(t, rec, data, func(ev capacity.RunEvent) {
		if ev.Type == capacity.LifetimeDone {
			cancel()
		}
	})
	e.Fresh = true
	sum, _ := e.Run(ctx2, reg.StudyID, "")
	cancel()
	if sum == nil || sum.Resumed || sum.RunDir == first.RunDir || sum.RunDir != first.RunDir+".2" {
		t.Fatalf("fresh run: %+v", sum)
	}

	// The last folder (runs/1.2) is gone: a new folder, and why.
	if err := os.RemoveAll(sum.RunDir); err != nil {
		t.Fatal(err)
	}
	var notResumed []string
	sum, err = engineFor(t, rec, data, func(ev capacity.RunEvent) {
		if ev.Type == capacity.NotResumed {
			notResumed = append(notResumed, capacity.ProgressLine(ev))
		}
		if ev.Type == capacity.RunDone && ev.Error != "" {
			t.Errorf("run_done of the refused resume reached the console: %s", ev.Error)
		}
	}).Run(ctx, reg.StudyID, "")
	if err != nil || sum.Resumed || !strings.Contains(sum.NotResumed, "does not exist") || len(notResumed) != 1 || sum.Status != capacity.StatusComplete {
		t.Fatalf("not resumed: %+v %v %q", sum, err, notResumed)
	}
	t.Logf("%s", notResumed[0])
	runs := notesOf(mustStudy(t, rec, reg.StudyID), capacity.NoteRun)
	if last := runs[len(runs)-1]; last["not_resumed"] == nil || last["run_dir"] != sum.RunDir {
		t.Errorf("run note %v", last)
	}

	// A leg left running: another process runs the study.
	reg2, _ := capacity.Register(ctx, rec, mustLoad(t, writeEnginePlan(t, t.TempDir())), filepath.Join(dir, "x.json"), nil)
	if _, _, err := rec.StartLeg(ctx, capacity.LegStart{StudyID: reg2.StudyID, Label: "forward/fake/p1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := engineFor(t, rec, data, nil).Run(ctx, reg2.StudyID, ""); !errors.Is(err, capacity.ErrBusy) {
		t.Errorf("busy: %v", err)
	}
}

// A process that dies after a lifetime's files and run.json checkpoint but before the notebook
// recorded its leg: the resumed run keeps the lifetime and records its leg from the folder.
func TestEngineResumeRecordsAnUnrecordedLifetime(t *testing.T) {
	dir := t.TempDir()
	planPath := fakePlan(t, dir)
	rec := &memRecorder{}
	ctx := context.Background()
	reg, err := capacity.Register(ctx, rec, mustLoad(t, planPath), planPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	haltInSecondLifetime(t, rec, reg.StudyID, data)
	// forward/fake/p1's leg: as the notebook finds it after such a death.
	firstLeg := rec.legs[rec.studies[reg.StudyID].order[0]]
	firstLeg.end, firstLeg.reqs, firstLeg.interrupted = nil, nil, true

	var started []string
	sum, err := engineFor(t, rec, data, func(ev capacity.RunEvent) {
		if ev.Type == capacity.LifetimeStarted {
			started = append(started, ev.Lifetime)
		}
	}).Run(ctx, reg.StudyID, "")
	if err != nil || !sum.Resumed || sum.LifetimesKept != 1 || sum.Legs != 4 {
		t.Fatalf("resume: %+v %v", sum, err)
	}
	if slices.Contains(started, "forward/fake/p1") {
		t.Error("the kept lifetime ran again")
	}
	var found *memLeg
	for _, lid := range rec.studies[reg.StudyID].order {
		if l := rec.legs[lid]; l.start.Label == "forward/fake/p1 (attempt 2)" {
			found = l
		}
	}
	if found == nil || found.end == nil || found.end.Class != "ok" || len(found.reqs) != 1 || len(found.reqs[0].Records) != 8 ||
		found.start.Detail["recorded_on_resume"] == nil || len(found.end.Transcript) == 0 {
		t.Fatalf("the kept lifetime's leg: %+v", found)
	}
	if m := readManifest(t, sum.RunDir); !found.reqs[0].Origin.Equal(m.PassOrigins["forward"]) {
		t.Errorf("origin %v, the pass's %v", found.reqs[0].Origin, m.PassOrigins["forward"])
	}
}

// Quality guards resume too: a guard that finished is kept (not run again), one the stop cut
// runs again, and a changed case list is not mixed with the kept evidence.
func TestRunResumeQualityGuards(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-t", "1"}, capacity.Markers{}}}, []int{1, 2}, []int{1}, 0, 2, 4)
	p := mustLoad(t, plan)
	floor := 0.5
	p.Limits.QualityFloor = &floor
	p.Passes = []string{capacity.PassForward}
	b, _ := json.Marshal(p)
	_ = os.WriteFile(plan, b, 0o644)
	casesPath := filepath.Join(dir, "cases.json")
	_ = os.WriteFile(casesPath, []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[
	  {"id":"right","prompt":"ab","n_predict":3,"matcher":"exact","expect":"cde"}]}`), 0o644)
	env := []string{tag(t), fakeServerEnv + "=1"}
	out := filepath.Join(dir, "run")
	start := func(resume bool) *Run {
		return StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: out, Resume: resume,
			Env: env, QualityCases: casesPath, StartTimeout: time.Minute, Grace: 2 * time.Second})
	}
	r := start(false)
	for ev := range r.Events() {
		if ev.Type == capacity.GuardDone {
			r.Stop()
		}
	}
	if rep, err := r.Wait(); !errors.Is(err, capacity.ErrRunStopped) || len(rep.Guards) == 0 || rep.Guards[0].Interrupted != "" {
		t.Fatalf("stopped in the guards: %v %+v", err, rep)
	}
	r = start(true)
	var guardsRun []string
	var rs *capacity.RunResume
	for ev := range r.Events() {
		switch ev.Type {
		case capacity.RunStarted:
			rs = ev.Resume
		case capacity.GuardStarted, capacity.LifetimeStarted:
			guardsRun = append(guardsRun, string(ev.Type)+" "+ev.Lifetime)
		}
	}
	rep, err := r.Wait()
	if err != nil || rs == nil || len(rs.Lifetimes) != 2 || !slices.Equal(rs.Guards, []string{"fake/p1"}) {
		t.Fatalf("resume: %v %+v", err, rs)
	}
	if !slices.Equal(guardsRun, []string{"guard_started fake/p2"}) {
		t.Errorf("ran on resume: %v", guardsRun)
	}
	if q := rep.Result.Candidates[0].Quality; len(q) != 2 || !q[0].Passed || !q[1].Passed {
		t.Errorf("quality %+v", q)
	}
	if got := assembleFromArgs(t, rep.AssembleArgs); !bytes.Equal(got, readFile(t, filepath.Join(out, capacity.RunStudyFile))) {
		t.Error("study.json differs from `capacity assemble` of the folder")
	}
	// Another case list: every guard runs again, no lifetime does.
	_ = os.WriteFile(casesPath, []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[
	  {"id":"right","prompt":"ab","n_predict":3,"matcher":"exact","expect":"cde"},
	  {"id":"also","prompt":"ab","n_predict":3,"matcher":"contains","expect":"cd"}]}`), 0o644)
	r = start(true)
	guardsRun = nil
	for ev := range r.Events() {
		if ev.Type == capacity.GuardStarted || ev.Type == capacity.LifetimeStarted {
			guardsRun = append(guardsRun, string(ev.Type)+" "+ev.Lifetime)
		}
	}
	if rep, err := r.Wait(); err != nil || rep.Result.Candidates[0].Quality[0].Cases != 2 {
		t.Fatalf("resume with another case list: %v", err)
	}
	if !slices.Equal(guardsRun, []string{"guard_started fake/p1", "guard_started fake/p2"}) {
		t.Errorf("ran with another case list: %v", guardsRun)
	}
}
