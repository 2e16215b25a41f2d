package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/server"
)

func capacitySHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// capacityRunPlan writes the acceptance plan: 2 candidates (the dense and the MoE tiny model)
// x P {1,2} x C {1,2} x forward/reverse, 1 warmup, 3 measured, 16 tokens.
func capacityRunPlan(t *testing.T, dir string) string {
	t.Helper()
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox jumps over the lazy dog."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dense, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.capacity/v1",
  "name": "tiny capacity (CLI test)",
  "candidates": [
    {"id": "dense", "label": "tiny dense f32", "model": {"path": %q, "sha256": %q},
     "server_flags": ["-t", "1", "-lv", "4"], "markers": {"must": ["CPU_Mapped model buffer"]}},
    {"id": "moe", "label": "tiny MoE f32", "model": {"path": %q, "sha256": %q},
     "server_flags": ["-t", "1", "-lv", "4"], "markers": {"must_not": ["CPU_KLEIDIAI model buffer"]}}
  ],
  "slots": [1, 2], "clients": [1, 2],
  "warmups": 1, "measured": 3, "n_predict": 16, "ctx_per_slot": 256, "seed": 42,
  "prompt_plan": {"path": "prompt-plan.json", "sha256": %q},
  "limits": {"ttft_ms_p95_max": 5000, "e2e_ms_p95_max": 20000, "peak_rss_mib_max": 8192,
             "generation_rate_spread_max": 0.9, "e2e_p95_spread_max": 0.9}
}
`, dense, capacitySHA(t, dense), moe, capacitySHA(t, moe), capacitySHA(t, pp))
	path := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// capacityTag marks every server the command starts (through the inherited environment) and
// checks when the test ends that none survived.
func capacityTag(t *testing.T) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	kv := "SPARKBENCH_TEST_TAG=" + hex.EncodeToString(b)
	k, v, _ := strings.Cut(kv, "=")
	t.Setenv(k, v)
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
				t.Errorf("llama-server processes survived: %v", left)
				return
			}
		}
	})
}

func TestCapacityRunRealServer(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	plan := capacityRunPlan(t, dir)
	out := filepath.Join(dir, "run")
	start := time.Now()
	code, stdout, stderr := runCapacity("run", plan, "--no-notebook", "--out", out)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("capacity run (2 candidates x P{1,2} x C{1,2} x 2 passes) took %v\n%s", took.Round(time.Millisecond), stdout)
	if took > 3*time.Minute {
		t.Errorf("took %v, over 3 minutes", took)
	}
	for _, w := range []string{"[configurations 0/8, cells 0/16", "forward/dense/p1: llama-server ready on 127.0.0.1:",
		"reverse/dense/p1 C=1: 3/3 completed", "[configurations 8/8, cells 16/16"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("progress lacks %q:\n%s", w, stderr)
		}
	}
	for _, w := range []string{"study.json: capacity study \"tiny capacity (CLI test)\"", "  dense ", "  moe ", "reproduce: sparkbench capacity assemble --plan "} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	// Every raw file is where `capacity assemble` expects it.
	for _, pass := range []string{"forward", "reverse"} {
		for _, c := range []string{"dense", "moe"} {
			for _, p := range []string{"p1", "p2"} {
				for _, f := range []string{"requests.jsonl", "rss.json", "server.log", "evidence.json"} {
					if _, err := os.Stat(filepath.Join(out, "runs", pass, c, p, f)); err != nil {
						t.Error(err)
					}
				}
			}
		}
	}
	// Re-running `capacity assemble` on the saved files gives byte-identical JSON.
	var rep capacity.RunReport
	b, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"assemble"}, rep.AssembleArgs...)
	again := filepath.Join(dir, "again.json")
	for i, a := range args {
		if a == "--output" {
			args[i+1] = again
		}
	}
	if code, _, stderr := runCapacity(args...); code != 0 {
		t.Fatalf("assemble exit %d: %s", code, stderr)
	}
	s1, _ := os.ReadFile(filepath.Join(out, "study.json"))
	s2, _ := os.ReadFile(again)
	if len(s1) == 0 || !bytes.Equal(s1, s2) {
		t.Fatal("capacity assemble on the saved raw files does not reproduce study.json byte for byte")
	}
	// Every cell has its metrics in both passes.
	var res capacity.Result
	if err := json.Unmarshal(s1, &res); err != nil {
		t.Fatal(err)
	}
	cells := 0
	for _, c := range res.Candidates {
		for _, cell := range c.Cells {
			for _, ps := range cell.Passes {
				cells++
				if ps.GenerationRate == nil || ps.CompletionRate != 1 {
					t.Errorf("%s P%d/C%d %s: %+v", c.ID, cell.Slots, cell.Clients, ps.Pass, ps)
				}
			}
		}
	}
	if cells != 16 {
		t.Errorf("%d cell passes, want 16", cells)
	}
}

func TestCapacityRunUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "want one study id (or name) or one plan file"},
		{[]string{"run", filepath.Join(dir, "missing.json")}, "read plan"},
		{[]string{"run", "a.json", "--start-timeout", "-1s"}, "timeouts must be positive"},
		{[]string{"run", "a.json", "--llama-dir", filepath.Join(dir, "nope")}, ""},
	} {
		code, _, stderr := runCapacity(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
	// An output folder in use is refused before anything runs.
	llamatest.Binaries(t)
	plan := capacityRunPlan(t, dir)
	busy := filepath.Join(dir, "busy")
	_ = os.MkdirAll(busy, 0o755)
	_ = os.WriteFile(filepath.Join(busy, "x"), nil, 0o644)
	if code, _, stderr := runCapacity("run", plan, "--no-notebook", "--out", busy); code != 2 || !strings.Contains(stderr, "not empty") {
		t.Errorf("busy folder: exit %d, %s", code, stderr)
	}
	// A quality-gated plan needs the guard's case list.
	b, _ := os.ReadFile(plan)
	gated := strings.Replace(string(b), `"limits": {`, `"limits": {"quality_floor": 0.5, `, 1)
	_ = os.WriteFile(plan, []byte(gated), 0o644)
	if code, _, stderr := runCapacity("run", plan, "--no-notebook", "--out", filepath.Join(dir, "gated")); code != 2 || !strings.Contains(stderr, "--quality-cases") {
		t.Errorf("gated plan without cases: exit %d, %s", code, stderr)
	}
}
