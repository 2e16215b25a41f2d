package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/runner/llamatest"
)

// offloadShortServer is a binaries folder whose llama-server is the real one on the Vulkan
// device with its log passed through sed, so that its load block says it offloaded only one of
// the model's layers ("offloaded 1/3 layers to GPU") whatever -ngl asked: a build that keeps
// layers on the CPU although the plan asked for them all, seen through the real process, the
// real log reader and the real assembly.
func offloadShortServer(t *testing.T, realServer, realBench string) string {
	t.Helper()
	fifos := t.TempDir()
	body := fmt.Sprintf(`fifo=%q/log.$$
mkfifo "$fifo" || exit 1
sed -u 's#offloaded \([0-9][0-9]*\)/\([0-9][0-9]*\) layers#offloaded 1/\2 layers#' <"$fifo" >&2 &
exec %q "$@" >"$fifo" 2>&1`, fifos, realServer)
	return fakeServerDir(t, realServer, realBench, body)
}

// A capacity study through the real CLI on a llama-server that offloads fewer layers than its
// -ngl asked fails offload:layers_below_requested in the notebook's assembled result, naming
// the layers; the candidate that asked for no more than it got passes the gate; with the gate
// removed (devicegate.go) the first one passes and this test fails.
func TestCapacityOffloadBelowRequestedThroughTheCLI(t *testing.T) {
	vulkanDevice(t)
	loc := llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	tiny := llamatest.Model(t, "tiny-llama-f16.gguf")
	bin := offloadShortServer(t, loc.Server, loc.Bench)
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cand := func(id, ngl string) string {
		return fmt.Sprintf(`{"id": %q, "label": %q, "model": {"path": %q, "sha256": %q}, "server_flags": ["-t", "1", "-lv", "4", "-ngl", %q]}`,
			id, id, tiny, capacitySHA(t, tiny), ngl)
	}
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.capacity/v1", "name": "offload below requested", "build": {"env": {"GGML_VK_VISIBLE_DEVICES": "0"}},
  "candidates": [%s, %s],
  "slots": [1], "clients": [1], "passes": ["forward"], "warmups": 0, "measured": 1, "n_predict": 4, "ctx_per_slot": 128, "seed": 42,
  "prompt_plan": {"path": "prompt-plan.json", "sha256": %q},
  "limits": {"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 120000, "peak_rss_mib_max": 8192, "max_device_mib": 100000}
}`, cand("asks-all", "99"), cand("asks-one", "1"), capacitySHA(t, pp))
	file := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	nb := filepath.Join(dir, "notebook.db")
	code, out, errOut := runCLI("capacity", "run", file, "--notebook", nb, "--llama-dir", bin, "--out", filepath.Join(dir, "run"))
	if code != 0 {
		t.Fatalf("capacity run: %d\n%s\n%s", code, out, errOut)
	}
	// the run's assembled result, as the notebook trusts it (capacity show reads the same file)
	b, err := os.ReadFile(filepath.Join(dir, "run", "study.json"))
	if err != nil {
		t.Fatal(err)
	}
	var result capacity.Result
	if err := json.Unmarshal(b, &result); err != nil {
		t.Fatal(err)
	}
	res := &result
	short := capacityCell(t, res, "asks-all")
	g := gateOf(short, "offloaded_layers")
	if short.Passed || !slices.Contains(short.Failures, capacity.CodeOffloadBelow) || g == nil || g.Passed ||
		!strings.Contains(g.Detail, "forward: offloaded 1/3 layers, -ngl asked for 99") {
		t.Errorf("asks-all: passed %v, failures %v, gate %+v (want %s)", short.Passed, short.Failures, g, capacity.CodeOffloadBelow)
	}
	if g := gateOf(short, "device_used"); g == nil || !g.Passed {
		t.Errorf("asks-all: one layer on the device is a device used: %+v", g)
	}
	one := capacityCell(t, res, "asks-one")
	if g := gateOf(one, "offloaded_layers"); g == nil || !g.Passed || slices.Contains(one.Failures, capacity.CodeOffloadBelow) {
		t.Errorf("asks-one asked for 1 and got 1: gate %+v, failures %v", g, one.Failures)
	}
	code, text, _ := runCLI("capacity", "show", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(text, capacity.CodeOffloadBelow) {
		t.Errorf("capacity show's text does not name %s:\n%s", capacity.CodeOffloadBelow, text)
	}
}
