package caprun

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/server"
)

// fakeServerEnv turns this test binary into a llama-server stand-in (see fakeLlamaServer).
const (
	fakeServerEnv       = "SPARKBENCH_FAKE_LLAMA_SERVER"
	fakeServerFaultsEnv = "SPARKBENCH_FAKE_LLAMA_FAULTS" // JSON: request number -> loadgen.Fault
	fakeWordTokensEnv   = "SPARKBENCH_FAKE_WORD_TOKENS"  // 1: loadgen.FakeConfig.WordTokens
	fakeServiceEnv      = "SPARKBENCH_FAKE_SERVICE_MS"   // N: a request takes N ms (its TTFT), --parallel of them at a time
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		os.Exit(fakeLlamaServer(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeLlamaServer takes llama-server's arguments, prints a load block like llama-server's at
// -lv 4 and serves loadgen's fake SSE schedule on --host/--port, with the faults of
// SPARKBENCH_FAKE_LLAMA_FAULTS, until SIGTERM.
func fakeLlamaServer(args []string) int {
	host, port, model, parallel := "", "", "", 0
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--parallel", "-np":
			parallel, _ = strconv.Atoi(args[i+1])
		case "--host":
			host = args[i+1]
		case "--port":
			port = args[i+1]
		case "-m":
			model = args[i+1]
		}
	}
	faults := map[int]loadgen.Fault{}
	if s := os.Getenv(fakeServerFaultsEnv); s != "" {
		var m map[string]loadgen.Fault
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			fmt.Println("fake: bad faults:", err)
			return 1
		}
		for k, f := range m {
			n, _ := strconv.Atoi(k)
			faults[n] = f
		}
	}
	fmt.Printf("0.00.001.000 I llama_model_loader: loaded meta data with 18 key-value pairs and 21 tensors from %s (version GGUF V3 (latest))\n", model)
	fmt.Println("0.00.001.100 I load_tensors:   CPU_Mapped model buffer size =     0.63 MiB")
	fmt.Println("0.00.001.200 I llama_kv_cache:        CPU KV buffer size =     0.25 MiB")
	fmt.Println("0.00.001.300 I sched_reserve:        CPU compute buffer size =     2.39 MiB")
	cfg := loadgen.FakeConfig{Addr: host + ":" + port, TTFT: 2 * time.Millisecond, ITL: 200 * time.Microsecond,
		Fault: func(n int) loadgen.Fault { return faults[n] }, WordTokens: os.Getenv(fakeWordTokensEnv) == "1"}
	if ms, _ := strconv.Atoi(os.Getenv(fakeServiceEnv)); ms > 0 { // a slow server with llama-server's slots
		cfg.TTFT, cfg.Slots = time.Duration(ms)*time.Millisecond, max(parallel, 1)
	}
	f, err := loadgen.StartFake(cfg)
	if err != nil {
		fmt.Println("0.00.002.000 E srv    operator(): couldn't bind HTTP server socket, hostname: " + host + ", port: " + port)
		return 1
	}
	fmt.Printf("0.00.002.000 I srv  llama_server: listening on http://%s:%s\n", host, port)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	_ = f.Close()
	return 0
}

// tag is an environment entry unique to the test; no process carrying it may outlive it.
func tag(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	kv := "SPARKBENCH_TEST_TAG=" + hex.EncodeToString(b)
	t.Cleanup(func() {
		for end := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			left := server.ProcessesWithEnv(kv)
			if len(left) == 0 {
				return
			}
			if time.Now().After(end) {
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Errorf("server processes survived the test: %v", left)
				return
			}
		}
	})
	return kv
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type runCand struct {
	id, model string
	flags     []string
	markers   capacity.Markers
}

// writeRunPlan writes a small capacity plan (and its prompt plan) into dir.
func writeRunPlan(t *testing.T, dir string, cands []runCand, slots, clients []int, warmups, measured, nPredict int) string {
	t.Helper()
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox jumps over the lazy dog."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := capacity.Plan{Schema: capacity.SchemaCapacity, Name: "run test", Slots: slots, Clients: clients, Warmups: &warmups, Measured: measured,
		NPredict: nPredict, CtxPerSlot: 256, Seed: 42, PromptPlan: capacity.FileRef{Path: "prompt-plan.json", SHA256: fileSHA(t, pp)},
		Limits: capacity.Limits{TTFTMsP95Max: 5000, E2EMsP95Max: 20000, PeakRSSMiBMax: 8192, GenRateSpreadMax: 0.9, E2EP95SpreadMax: 0.9}}
	for _, c := range cands {
		p.Candidates = append(p.Candidates, capacity.Candidate{ID: c.id, Label: c.id, Model: capacity.FileRef{Path: c.model, SHA256: fileSHA(t, c.model)},
			ServerFlags: c.flags, Markers: c.markers})
	}
	p.Defaults() // a plan file states its values: a written 0 is not the default
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func hashFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// runPlan runs a plan and collects its events; onEvent sees each as it arrives.
func runPlan(t *testing.T, planPath, bin, out string, env []string, onEvent func(capacity.RunEvent)) (*capacity.RunReport, []capacity.RunEvent, error) {
	t.Helper()
	p, err := capacity.Load(planPath)
	if err != nil {
		t.Fatal(err)
	}
	r := StartRun(context.Background(), RunSpec{PlanFile: planPath, Plan: p, Server: bin, OutDir: out, Env: env,
		StartTimeout: time.Minute, RequestTimeout: time.Minute, Grace: 2 * time.Second, Hash: hashFile})
	var evs []capacity.RunEvent
	for ev := range r.Events() {
		if onEvent != nil {
			onEvent(ev)
		}
		evs = append(evs, ev)
	}
	rep, err := r.Wait()
	return rep, evs, err
}

func tinyCandidates(t *testing.T) []runCand {
	th := []string{"-t", llamatest.Threads, "-lv", "4"}
	return []runCand{
		{"dense", llamatest.Model(t, "tiny-llama-f32.gguf"), th, capacity.Markers{Must: []string{`CPU_Mapped model buffer`}}},
		{"moe", llamatest.Model(t, "tiny-moe-f32.gguf"), th, capacity.Markers{MustNot: []string{`CPU_KLEIDIAI model buffer`}}},
	}
}

// The acceptance run: 2 candidates x P {1,2} x C {1,2} x forward/reverse on the real
// llama-server, under 3 minutes, with metrics in every cell; re-assembling the saved raw files
// gives the same bytes.
func TestRunRealServer(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	plan := writeRunPlan(t, dir, tinyCandidates(t), []int{1, 2}, []int{1, 2}, 1, 3, 16)
	out := filepath.Join(dir, "run")
	start := time.Now()
	rep, evs, err := runPlan(t, plan, loc.Server, out, []string{tag(t)}, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("2 candidates x P{1,2} x C{1,2} x 2 passes: %v (%d events)", took.Round(time.Millisecond), len(evs))
	if took > 3*time.Minute {
		t.Errorf("the run took %v, over 3 minutes", took)
	}
	res := rep.Result
	cells := 0
	for _, c := range res.Candidates {
		for _, cell := range c.Cells {
			cells++
			if len(cell.Passes) != 2 {
				t.Fatalf("%s P%d/C%d: %d passes", c.ID, cell.Slots, cell.Clients, len(cell.Passes))
			}
			for _, ps := range cell.Passes {
				if ps.GenerationRate == nil || ps.TTFTMsP95 == nil || ps.CompletionRate != 1 {
					t.Errorf("%s P%d/C%d %s: rate %v ttft %v completion %v", c.ID, cell.Slots, cell.Clients, ps.Pass, ps.GenerationRate, ps.TTFTMsP95, ps.CompletionRate)
				}
			}
		}
		for _, l := range c.Lifetimes {
			if l.PeakRSSKiB <= 0 {
				t.Errorf("%s %s p%d: no peak RSS", c.ID, l.Pass, l.Slots)
			}
		}
	}
	if cells != 8 {
		t.Fatalf("%d cells, want 8", cells)
	}
	// Re-assembling the saved files gives the same bytes.
	study1, err := os.ReadFile(filepath.Join(out, capacity.RunStudyFile))
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := assembleRun(out, nil, capacity.Schedule(mustLoad(t, plan), dir), nil)
	if err != nil || !bytes.Equal(study1, again) {
		t.Fatalf("re-assembly differs (err %v)", err)
	}
	// Events: progress reached the totals; every lifetime had its server.
	last := evs[len(evs)-1]
	if last.Type != capacity.RunDone || last.Progress.CellsDone != 16 || last.Progress.LifetimesDone != 8 {
		t.Errorf("last event %+v", last)
	}
	ready := 0
	for _, ev := range evs {
		if ev.Type == capacity.ServerReady {
			ready++
		}
	}
	if ready != 8 {
		t.Errorf("%d servers ready, want 8", ready)
	}
	for _, lt := range rep.Lifetimes {
		if lt.Server.Class != "stopped_by_user" || lt.Server.RSS == nil || !strings.HasPrefix(lt.Server.RSS.Source, "/proc/") || lt.Server.Escalated {
			t.Errorf("%s: server %+v", lt.Key, lt.Server)
		}
		if ev := lt.Server.Evidence; ev == nil || ev.MiB(server.BufferModel) <= 0 || len(ev.Failed()) != 0 {
			t.Errorf("%s: evidence %+v", lt.Key, lt.Server.Evidence)
		}
	}
}

func mustLoad(t *testing.T, path string) *capacity.Plan {
	t.Helper()
	p, err := capacity.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}

// A server killed in the middle of a cell: the cell fails with the reason, the lifetime's
// later levels are not sent, the next configuration starts a fresh server, and the study still
// assembles (the kill shows as a failed completion-rate gate).
func TestRunServerKilledMidCell(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	cands := tinyCandidates(t)[:1]
	// Requests of 1500 tokens (about 0.4 s each here): the kill after the first measured
	// request lands while the level's other requests run.
	plan := writeRunPlan(t, dir, cands, []int{1, 2}, []int{1, 2}, 1, 3, 1500)
	p := mustLoad(t, plan)
	p.Passes = []string{capacity.PassForward}
	p.CtxPerSlot = 2048
	b, _ := json.Marshal(p)
	_ = os.WriteFile(plan, b, 0o644)

	pids := map[string]int{}
	killed := false
	rep, _, err := runPlan(t, plan, loc.Server, filepath.Join(dir, "run"), []string{tag(t)}, func(ev capacity.RunEvent) {
		if ev.Type == capacity.ServerReady {
			pids[ev.Lifetime] = ev.Server.Pid
		}
		// The first measured request of forward/dense/p1 at C=1 has ended: kill the server.
		if !killed && ev.Type == capacity.RequestDone && ev.Lifetime == "forward/dense/p1" && ev.Clients == 1 && ev.Request.Phase == capacity.PhaseMeasured {
			killed = true
			_ = syscall.Kill(pids[ev.Lifetime], syscall.SIGKILL)
		}
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	lt := rep.Lifetimes[0]
	t.Logf("killed lifetime: server %s %q; cells %+v", lt.Server.Class, lt.Server.Reason, lt.Cells)
	if lt.Key != "forward/dense/p1" || !lt.Server.Unexpect || lt.Server.Class != "crashed" {
		t.Fatalf("killed lifetime %+v", lt.Server)
	}
	c1, c2 := lt.Cells[0], lt.Cells[1]
	if c1.Completed == c1.Attempted || !strings.Contains(c1.FirstErr, "llama-server exited: crashed") {
		t.Errorf("the killed cell: %+v", c1)
	}
	if c2.Completed != 0 || !strings.Contains(c2.FirstErr, "not sent: llama-server exited: crashed") {
		t.Errorf("the level after the kill: %+v", c2)
	}
	if lt.Server.RSS == nil || lt.Server.RSS.Source != "wait4 rusage" {
		t.Errorf("rss of the killed server: %+v", lt.Server.RSS)
	}
	next := rep.Lifetimes[1]
	if next.Server.Pid == lt.Server.Pid || next.Server.Pid == 0 || next.Cells[0].Completed != next.Cells[0].Attempted {
		t.Errorf("the next configuration: %+v %+v", next.Server, next.Cells)
	}
	var cell *capacity.CellResult
	for i, c := range rep.Result.Candidates[0].Cells {
		if c.Slots == 1 && c.Clients == 1 {
			cell = &rep.Result.Candidates[0].Cells[i]
		}
	}
	if cell == nil || cell.Passed || !containsStr(cell.Failures, "forward:completion_rate_below_minimum") {
		t.Errorf("P1/C1 after the kill: %+v", cell)
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// A candidate whose model does not load: its servers never become healthy, its cells record
// requests not sent with the reason, the other candidate's study is unaffected, and the run
// ends incomplete (an *IncompleteError naming both lifetimes) with run.json saying so.
func TestRunServerNeverHealthy(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("not a model at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cands := []runCand{tinyCandidates(t)[0], {"broken", bad, []string{"-t", "1"}, capacity.Markers{}}}
	plan := writeRunPlan(t, dir, cands, []int{1}, []int{1}, 1, 2, 8)
	rep, evs, err := runPlan(t, plan, loc.Server, filepath.Join(dir, "run"), []string{tag(t)}, nil)
	ie, ok := capacity.IsIncomplete(err)
	if !ok || !ie.Assembled || ie.Total != 4 || len(ie.Lifetimes) != 2 || ie.Lifetimes[0].Key != "forward/broken/p1" || ie.Lifetimes[1].Key != "reverse/broken/p1" ||
		!strings.Contains(ie.Lifetimes[0].Reason, "llama-server did not become healthy") || ie.Lifetimes[0].Class != "load_failed" {
		t.Fatalf("run: %v, want incomplete with forward/broken/p1 and reverse/broken/p1", err)
	}
	if !strings.HasPrefix(err.Error(), "incomplete: 2 of 4 server lifetimes ended without results: forward/broken/p1 (llama-server did not become healthy: ") {
		t.Errorf("message %q", err)
	}
	var manifest capacity.RunReport
	if jerr := json.Unmarshal(readFile(t, filepath.Join(dir, "run", capacity.RunManifestFile)), &manifest); jerr != nil || len(manifest.Incomplete) != 2 || manifest.Error != err.Error() {
		t.Errorf("run.json incomplete %+v error %q (%v)", manifest.Incomplete, manifest.Error, jerr)
	}
	failed := 0
	for _, ev := range evs {
		if ev.Type == capacity.ServerFailed {
			failed++
			if ev.Server.Class != "load_failed" || !strings.Contains(ev.Error, "invalid magic") {
				t.Errorf("server_failed %+v", ev)
			}
		}
	}
	if failed != 2 {
		t.Errorf("%d server_failed events, want 2 (one per pass)", failed)
	}
	for _, c := range rep.Result.Candidates {
		cell := c.Cells[0]
		switch c.ID {
		case "broken":
			if cell.Passed || cell.Passes[0].CompletionRate != 0 || c.Selected != nil {
				t.Errorf("broken: %+v", cell)
			}
		case "dense":
			if cell.Passes[0].CompletionRate != 1 {
				t.Errorf("dense: %+v", cell)
			}
		}
	}
}

// The whole orchestration against a llama-server stand-in that cuts one stream and answers
// one request with HTTP 500: both are recorded, the completion rate shows them, the study
// assembles, and no llama.cpp is needed.
func TestRunFakeServerFaults(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-t", "1"}, capacity.Markers{Must: []string{`CPU_Mapped model buffer`}}}},
		[]int{1}, []int{1, 2}, 1, 4, 8)
	faults := `{"2":{"CutAfter":3},"3":{"Status":500,"Body":"{\"error\":{\"code\":500,\"message\":\"injected failure\",\"type\":\"server_error\"}}"}}`
	env := []string{tag(t), fakeServerEnv + "=1", fakeServerFaultsEnv + "=" + faults}
	rep, _, err := runPlan(t, plan, os.Args[0], filepath.Join(dir, "run"), env, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// Requests 0..4 go to C=1 in the forward pass (1 warmup, then measured seq 0..3): request
	// 2 is measured seq 1, request 3 measured seq 2. The reverse pass visits C=2 first.
	data, err := os.ReadFile(filepath.Join(dir, "run", "runs", "forward", "fake", "p1", capacity.RunRequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := capacity.ReadRequests("requests.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
	var cut, http500 *capacity.RequestRecord
	for i, r := range f.Records {
		if r.Clients == 1 && r.Phase == capacity.PhaseMeasured && r.Seq == 1 {
			cut = &f.Records[i]
		}
		if r.Clients == 1 && r.Phase == capacity.PhaseMeasured && r.Seq == 2 {
			http500 = &f.Records[i]
		}
	}
	if cut == nil || cut.HTTPStatus != 200 || cut.Tokens != 3 || !strings.Contains(cut.Error, "without the final event") {
		t.Errorf("cut stream: %+v", cut)
	}
	if http500 == nil || http500.HTTPStatus != 500 || http500.Error != "HTTP 500: injected failure" || http500.FirstTokenMs != nil {
		t.Errorf("HTTP 500: %+v", http500)
	}
	for _, c := range rep.Result.Candidates[0].Cells {
		if c.Clients != 1 {
			continue
		}
		for _, ps := range c.Passes {
			want := 1.0
			if ps.Pass == capacity.PassForward {
				want = 0.5
			}
			if ps.CompletionRate != want {
				t.Errorf("C=1 %s completion rate %v, want %v", ps.Pass, ps.CompletionRate, want)
			}
		}
		if !containsStr(c.Failures, "forward:completion_rate_below_minimum") {
			t.Errorf("failures %v", c.Failures)
		}
	}
	// The stand-in's evidence passed the marker; every lifetime has its files.
	for _, lt := range rep.Lifetimes {
		if len(lt.Files) != 4 || lt.Server.Evidence == nil || len(lt.Server.Evidence.Failed()) != 0 {
			t.Errorf("%s: files %v evidence %+v", lt.Key, lt.Files, lt.Server.Evidence)
		}
	}
}

func TestRunRefusals(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("x"), 0o644)
	plan := writeRunPlan(t, dir, []runCand{{"a", model, nil, capacity.Markers{}}}, []int{1}, []int{1}, 0, 1, 4)
	p := mustLoad(t, plan)
	// The folder must be new or empty.
	out := filepath.Join(dir, "busy")
	_ = os.MkdirAll(out, 0o755)
	_ = os.WriteFile(filepath.Join(out, "x"), nil, 0o644)
	r := StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: p, Server: "/bin/false", OutDir: out})
	for range r.Events() {
	}
	if _, err := r.Wait(); err == nil || !capacity.IsRefusal(err) || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("busy folder: %v", err)
	}
	// A changed prompt plan is refused by its checksum.
	_ = os.WriteFile(filepath.Join(dir, "prompt-plan.json"), []byte(`{"schema":"sparkbench.prompts/v1","prefix":"{n}","body":"changed"}`), 0o644)
	r = StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: p, Server: "/bin/false", OutDir: filepath.Join(dir, "o2"), Hash: hashFile})
	for range r.Events() {
	}
	if _, err := r.Wait(); err == nil || !capacity.IsRefusal(err) || !strings.Contains(err.Error(), "prompt_plan") {
		t.Errorf("changed prompt plan: %v", err)
	}
}

func TestRequestRecordConversion(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		in   loadgen.Result
		want string // substring of the canonical line
	}{
		{"ok", loadgen.Result{Clients: 2, Phase: "measured", Seq: 1, Send: 10 * ms, FirstToken: 12 * ms, HasFirstToken: true, End: 20 * ms,
			Tokens: 8, HTTPStatus: 200, Timings: &loadgen.ServerTimings{PromptN: 9, PromptMs: 1.5, PredictedN: 8, PredictedMs: 7}},
			`"end_ms":20,"first_token_ms":12,"http_status":200,"phase":"measured","send_ms":10,"seq":1,"timings":{"predicted_ms":7,"predicted_n":8,"prompt_ms":1.5,"prompt_n":9},"tokens":8`},
		{"not sent", loadgen.Result{Clients: 1, Phase: "warmup", Send: 5 * ms, End: 5 * ms, NotSent: true, Error: "not sent: stopped"},
			`"end_ms":5,"error":"not sent: stopped","first_token_ms":null,"http_status":0`},
		{"first token at the end", loadgen.Result{Clients: 1, Phase: "measured", Send: 5 * ms, FirstToken: 9 * ms, HasFirstToken: true, End: 9 * ms, Tokens: 4, HTTPStatus: 200},
			`"first_token_ms":9,`},
		{"tokens without content", loadgen.Result{Clients: 1, Phase: "measured", Send: 5 * ms, End: 9 * ms, Tokens: 4, HTTPStatus: 200, Error: "stream ended"},
			`"tokens":0`},
	} {
		rec := requestRecord(tc.in)
		var buf bytes.Buffer
		rw, _ := capacity.NewRequestWriter(&buf, capacity.RequestHeader{Pass: capacity.PassForward, Candidate: "a", Slots: 1})
		if err := rw.Write(rec); err != nil {
			t.Errorf("%s: the writer refused %+v: %v", tc.name, rec, err)
			continue
		}
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("%s: %s lacks %s", tc.name, buf.String(), tc.want)
		}
		if _, err := capacity.ReadRequests("x", buf.Bytes()); err != nil {
			t.Errorf("%s: the reader refused it: %v", tc.name, err)
		}
	}
}

// A quality-gated plan: after the load passes the guard's cases run on a fresh server per
// (candidate, P); the evidence enters the assembly and the reproduce arguments.
func TestRunQualityGuard(t *testing.T) {
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
	// The stand-in answers prompt "ab" with "cde" (letters from the prompt's length).
	casesPath := filepath.Join(dir, "cases.json")
	_ = os.WriteFile(casesPath, []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[
	  {"id":"right","prompt":"ab","n_predict":3,"matcher":"exact","expect":"cde"},
	  {"id":"wrong","prompt":"ab","n_predict":3,"matcher":"contains","expect":"zz"}]}`), 0o644)
	env := []string{tag(t), fakeServerEnv + "=1"}

	// Without the case list the gated plan is refused.
	r := StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: filepath.Join(dir, "none"), Env: env})
	for range r.Events() {
	}
	if _, err := r.Wait(); !capacity.IsRefusal(err) || !strings.Contains(err.Error(), "--quality-cases") {
		t.Fatalf("gated plan without cases: %v", err)
	}

	out := filepath.Join(dir, "run")
	r = StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: out, Env: env,
		QualityCases: casesPath, StartTimeout: time.Minute, Grace: 2 * time.Second})
	guards := 0
	for ev := range r.Events() {
		if ev.Type == capacity.GuardDone {
			guards++
			if ev.Guard.Score != 1 || ev.Guard.Cases != 2 {
				t.Errorf("guard %+v", ev.Guard)
			}
		}
	}
	rep, err := r.Wait()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if guards != 2 || len(rep.Guards) != 2 || rep.QualityCases == "" {
		t.Fatalf("guards %d, report %+v", guards, rep.Guards)
	}
	q := rep.Result.Candidates[0].Quality
	if len(q) != 2 || q[0].Score != 1 || q[0].Cases != 2 || !q[0].Passed {
		t.Errorf("quality results %+v", q)
	}
	if !strings.Contains(strings.Join(rep.AssembleArgs, " "), "--quality fake/p2="+filepath.Join(out, "quality", "fake", "p2", capacity.RunQualityFile)) {
		t.Errorf("assemble args %v", rep.AssembleArgs)
	}
}

// Stop in the middle: the server is stopped, nothing is assembled, run.json says why.
func TestRunStop(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, nil, capacity.Markers{}}}, []int{1, 2}, []int{1, 2}, 1, 3, 8)
	out := filepath.Join(dir, "run")
	r := StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: out,
		Env: []string{tag(t), fakeServerEnv + "=1"}, StartTimeout: time.Minute, Grace: 2 * time.Second})
	var stoppedAt time.Time
	for ev := range r.Events() {
		if ev.Type == capacity.CellDone && stoppedAt.IsZero() {
			stoppedAt = time.Now()
			r.Stop()
			r.Stop()
		}
	}
	rep, err := r.Wait()
	if err == nil || !strings.Contains(err.Error(), capacity.ErrRunStopped.Error()) || capacity.IsRefusal(err) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(stoppedAt); d > 10*time.Second {
		t.Errorf("stopping took %v", d)
	}
	if rep == nil || rep.Result != nil || rep.Study != "" {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(out, capacity.RunStudyFile)); err == nil {
		t.Error("a stopped run wrote study.json")
	}
	b, err := os.ReadFile(filepath.Join(out, capacity.RunManifestFile))
	if err != nil || !strings.Contains(string(b), capacity.ErrRunStopped.Error()) {
		t.Errorf("run.json: %v %s", err, b)
	}
}

// The case list can be part of the plan (quality_cases, frozen by its SHA-256): the run uses
// it without --quality-cases and refuses a list that changed since.
func TestRunQualityCasesFromThePlan(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	_ = os.WriteFile(model, []byte("GGUF stand-in"), 0o644)
	plan := writeRunPlan(t, dir, []runCand{{"fake", model, []string{"-t", "1"}, capacity.Markers{}}}, []int{1}, []int{1}, 0, 2, 4)
	casesPath := filepath.Join(dir, "cases.json")
	cases := []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"right","prompt":"ab","n_predict":3,"matcher":"exact","expect":"cde"}]}`)
	_ = os.WriteFile(casesPath, cases, 0o644)
	sum := sha256.Sum256(cases)
	p := mustLoad(t, plan)
	floor := 0.5
	p.Limits.QualityFloor = &floor
	p.Passes = []string{capacity.PassForward}
	p.QualityCases = &capacity.FileRef{Path: "cases.json", SHA256: hex.EncodeToString(sum[:])}
	b, _ := json.Marshal(p)
	_ = os.WriteFile(plan, b, 0o644)
	env := []string{tag(t), fakeServerEnv + "=1"}

	r := StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: filepath.Join(dir, "run"), Env: env,
		StartTimeout: time.Minute, Grace: 2 * time.Second})
	for range r.Events() {
	}
	rep, err := r.Wait()
	if err != nil || len(rep.Guards) != 1 || rep.QualityCases != hex.EncodeToString(sum[:]) {
		t.Fatalf("run with the plan's cases: %v %+v", err, rep)
	}

	_ = os.WriteFile(casesPath, append(cases, ' '), 0o644)
	r = StartRun(context.Background(), RunSpec{PlanFile: plan, Plan: mustLoad(t, plan), Server: os.Args[0], OutDir: filepath.Join(dir, "run2"), Env: env})
	for range r.Events() {
	}
	if _, err := r.Wait(); !capacity.IsRefusal(err) {
		t.Fatalf("a changed case list must be refused, got %v", err)
	}

	p.Limits.QualityFloor = nil
	probs := capacity.Validate(p, capacity.ValidateOptions{PlanDir: dir})
	if errs := study.Errors(probs); len(errs) == 0 || !strings.Contains(errs[0].Msg, "no quality gate") {
		t.Fatalf("cases without a gate: %v", probs)
	}
}

func ptrTo(v float64) *float64 { return &v }

// writeRunPlanOne writes a one-candidate plan (and its prompt plan) into dir.
func writeRunPlanOne(t *testing.T, dir, id, model string, flags []string, slots, clients []int, warmups, measured, nPredict int) string {
	return writeRunPlan(t, dir, []runCand{{id, model, flags, capacity.Markers{}}}, slots, clients, warmups, measured, nPredict)
}
