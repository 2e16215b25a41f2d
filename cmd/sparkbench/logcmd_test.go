package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/devlog"
)

// sparkbench log inspect on published logs (read in place): a two-GPU CUDA llama-cli log and
// a Metal server fragment, as text and as JSON; bad input exits 2 with one line.
func TestLogInspect(t *testing.T) {
	wild := wildFolder(t)
	cuda := filepath.Join(wild, "cli-log-cuda-2gpu-rtx4090-rtx5090-ot-b5622.log")
	code, out, errOut := runCLI("log", "inspect", cuda)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"device CUDA0: NVIDIA GeForce RTX 4090 (9862 MiB free), selected (line 18)",
		"device CUDA1: NVIDIA GeForce RTX 5090 (31518 MiB free), selected (line 19)",
		"offloaded: 49/49 layers to GPU",
		"memory CUDA1: peak 2880.66 MiB (buffers: model 648.66, kv 1152.00, compute 1080.00)",
		"timing (llama_perf, line 186): prompt 14 tokens at 93.49 t/s, generation 189 tokens at 45.29 t/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI("log", "inspect", "--json", filepath.Join(wild, "server-log-metal-m2pro-MTL0-FRAGMENT-2026.log"))
	var lg devlog.Log
	if code != 0 || json.Unmarshal([]byte(out), &lg) != nil {
		t.Fatalf("json: %d %s %s", code, out, errOut)
	}
	if n, of, ok := lg.Evidence.OffloadedLayers(); !ok || n != 66 || of != 66 {
		t.Errorf("Metal offload %d/%d %v, want 66/66", n, of, ok)
	}
	if used := lg.Evidence.DevicesUsed(); !strings.Contains(strings.Join(used, ","), "MTL0") {
		t.Errorf("Metal devices used %v", used)
	}
	for _, bad := range [][]string{
		{"log", "inspect", filepath.Join(t.TempDir(), "absent.log")},
		{"log", "inspect", t.TempDir()},
		{"log", "inspect"},
		{"log", "show", cuda},
	} {
		if code, _, errOut := runCLI(bad...); code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}
