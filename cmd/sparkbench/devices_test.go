package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/charts"
	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// Device studies on a real non-CPU backend: Mesa's software Vulkan device (llvmpipe), which
// the default prefix's libggml-vulkan.so uses once GGML_VK_VISIBLE_DEVICES names it (ggml skips
// Vulkan devices of CPU type by default). It is slow (the medium model's tg runs at about 5 t/s
// there), so the plans keep their tests short.

const vkEnv = "GGML_VK_VISIBLE_DEVICES=0"

// vulkanDevice returns the Vulkan device's name, failing under make test (the set-up installs
// libvulkan1 and mesa-vulkan-drivers, and the installer puts the Vulkan backend in the prefix)
// and skipping in a bare go test when there is none.
func vulkanDevice(t *testing.T) (bench string, device string) {
	t.Helper()
	loc := llamatest.Binaries(t)
	dl, err := llamacpp.ListDevices(context.Background(), loc.Bench, []string{vkEnv}, nil)
	if err == nil {
		for _, d := range dl.Devices {
			if strings.HasPrefix(d.Name, "Vulkan") {
				return loc.Bench, d.Name
			}
		}
	}
	msg := fmt.Sprintf("no Vulkan device with %s (err %v): run make setup (libvulkan1, mesa-vulkan-drivers, the full llama.cpp prefix)", vkEnv, err)
	if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return "", ""
}

func sha256Of(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(llamatest.ModelsDir(), "QUANTIZED.json"))
	if err != nil {
		t.Fatal(err)
	}
	if name == "medium-llama-f16.gguf" {
		m := regexp.MustCompile(`"file": "medium-llama-f16.gguf",\s*"sha256": "([0-9a-f]{64})"`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("QUANTIZED.json names no source sha256")
		}
		return string(m[1])
	}
	m := regexp.MustCompile(`"file": "` + regexp.QuoteMeta(name) + `",\s*"sha256": "([0-9a-f]{64})"`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("QUANTIZED.json does not list %s", name)
	}
	return string(m[1])
}

// TestDeviceStudyCPUAndVulkan runs one throughput study of the medium model on the CPU
// (-dev none) and on the Vulkan device over the same depths, plus an ngl sweep on Vulkan, through
// the CLI on the real llama-bench: each Vulkan row must show it ran there (the device gate),
// show gives one cell per device, the depth chart one series per backend, and the receipt
// names the device and the backend libraries' hashes and verifies byte for byte.
func TestDeviceStudyCPUAndVulkan(t *testing.T) {
	_, dev := vulkanDevice(t)
	medium := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "cpu vs vulkan",
  "build": {"env": {"GGML_VK_VISIBLE_DEVICES": "0"}},
  "models": [{"id": "medium", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 32], "n_prompt": [16], "n_gen": [4], "reps": 2, "threads": [1], "ngl": [99],
           "devices": ["none", %q]},
  "split": "combined",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, medium, sha256Of(t, "medium-llama-f16.gguf"), dev)
	file := filepath.Join(dir, "devices.json")
	os.WriteFile(file, []byte(plan), 0o644)

	code, out, errOut := runCLI("study", "validate", file)
	if code != 0 || !strings.Contains(out, "medium/dev-none") || !strings.Contains(out, "medium/dev-"+dev) ||
		!strings.Contains(out, "-dev "+dev) {
		t.Fatalf("validate: %d\n%s\n%s", code, out, errOut)
	}
	nb, id, rep := runWithoutCVFlags(t, dir, file, "")
	cells := map[string]float64{}
	for _, c := range rep.Results {
		cells[fmt.Sprintf("%s d%d %s", c.Test, c.Depth, c.Config)] = c.Mean
	}
	for _, test := range []string{"pp16", "tg4"} {
		for _, d := range []int{0, 32} {
			cpu := fmt.Sprintf("%s d%d ub512 b2048 fa-auto kv-f16/f16 t1 ngl99 dev-none", test, d)
			vk := fmt.Sprintf("%s d%d ub512 b2048 fa-auto kv-f16/f16 t1 ngl99 dev-%s on-Vulkan", test, d, dev)
			if cells[cpu] <= 0 || cells[vk] <= 0 {
				t.Errorf("missing cells %q or %q in %v", cpu, vk, cells)
			}
		}
	}

	// the per-backend chart: the depth chart has one series per device
	ch, err := charts.Depth(rep, "tg", 0)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range ch.Series {
		labels = append(labels, s.Label)
		if len(s.Points) != 2 {
			t.Errorf("series %q has %d depths, want 2", s.Label, len(s.Points))
		}
	}
	if len(labels) != 2 || !strings.Contains(labels[0]+labels[1], "dev-none") || !strings.Contains(labels[0]+labels[1], "on-Vulkan") {
		t.Errorf("depth chart series %q: want one CPU (dev-none) and one Vulkan series", labels)
	}
	png := filepath.Join(dir, "depth.png")
	if code, out, errOut := runCLI("plot", id, "--kind", "depth", "--metric", "tg", "--out", png, "--notebook", nb); code != 0 {
		t.Errorf("plot: %d\n%s\n%s", code, out, errOut)
	}

	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{dev + " (", "libggml-vulkan.so", "dev-" + dev + " on-Vulkan", "dev-none"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	if !regexp.MustCompile("`libggml-vulkan.so` SHA-256 `[0-9a-f]{64}`").Match(md) {
		t.Errorf("receipt.md does not hash libggml-vulkan.so")
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
}

// capacityCell finds a candidate's cell in an assembled capacity study.
func capacityCell(t *testing.T, res *capacity.Result, cand string) capacity.CellResult {
	t.Helper()
	for _, c := range res.Candidates {
		if c.ID == cand && len(c.Cells) > 0 {
			return c.Cells[0]
		}
	}
	t.Fatalf("no candidate %q in the study", cand)
	return capacity.CellResult{}
}

func gateOf(cell capacity.CellResult, gate string) *capacity.GateCheck {
	for i := range cell.Checks {
		if cell.Checks[i].Gate == gate {
			return &cell.Checks[i]
		}
	}
	return nil
}

// runCapacityPlan writes a one-cell capacity plan (P1, C1, forward and reverse) with the given
// candidates and limits, runs it on the real llama-server and returns the assembled study.
func runCapacityPlan(t *testing.T, name, build, candidates, limits string) *capacity.Result {
	t.Helper()
	dir := t.TempDir()
	pp := filepath.Join(dir, "prompt-plan.json")
	os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox."}`+"\n"), 0o644)
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.capacity/v1", "name": %q, %s
  "candidates": [%s],
  "slots": [1], "clients": [1], "warmups": 0, "measured": 2, "n_predict": 4, "ctx_per_slot": 128, "seed": 42,
  "prompt_plan": {"path": "prompt-plan.json", "sha256": %q},
  "limits": {"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 120000, "peak_rss_mib_max": 8192,
             "generation_rate_spread_max": 10, "e2e_p95_spread_max": 10 %s}
}`, name, build, candidates, capacitySHA(t, pp), limits)
	file := filepath.Join(dir, "plan.json")
	os.WriteFile(file, []byte(plan), 0o644)
	out := filepath.Join(dir, "run")
	code, stdout, stderr := runCapacity("run", file, "--no-notebook", "--out", out)
	if code != 0 {
		t.Fatalf("capacity run: %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "study.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestCapacityDeviceMemoryGate runs capacity candidates on the Vulkan device: the tiny model
// fits the device memory limit (every device gate passes), the medium one is over it
// (peak_device_mib_above_maximum), and the tiny model kept on the CPU fails device:not_used.
func TestCapacityDeviceMemoryGate(t *testing.T) {
	vulkanDevice(t)
	capacityTag(t)
	tiny, medium := llamatest.Model(t, "tiny-llama-f16.gguf"), llamatest.Model(t, "medium-llama-f16.gguf")
	cand := func(id, model, flags string) string {
		return fmt.Sprintf(`{"id": %q, "label": %q, "model": {"path": %q, "sha256": %q}, "server_flags": [%s]}`,
			id, id, model, capacitySHA(t, model), flags)
	}
	res := runCapacityPlan(t, "vulkan device memory", `"build": {"env": {"GGML_VK_VISIBLE_DEVICES": "0"}},`,
		strings.Join([]string{
			cand("tiny-vk", tiny, `"-t", "1", "-lv", "4", "-ngl", "99"`),
			cand("medium-vk", medium, `"-t", "1", "-lv", "4", "-ngl", "99"`),
			cand("tiny-cpu", tiny, `"-t", "1", "-lv", "4", "-ngl", "0"`),
		}, ",\n"), `, "max_device_mib": 32`)

	if !strings.Contains(res.Definitions["device_memory_gate"], "peak_device_mib_above_maximum") {
		t.Errorf("the study does not define its device memory gate: %q", res.Definitions["device_memory_gate"])
	}
	ok := capacityCell(t, res, "tiny-vk")
	if !ok.Passed || ok.PeakDeviceMiB == nil || *ok.PeakDeviceMiB <= 0 || *ok.PeakDeviceMiB > 32 {
		t.Errorf("tiny-vk: passed %v, peak device %s MiB, failures %v", ok.Passed, fmtPtr(ok.PeakDeviceMiB), ok.Failures)
	}
	for _, g := range []string{"device_used", "offloaded_layers", "peak_device_mib"} {
		if c := gateOf(ok, g); c == nil || !c.Passed {
			t.Errorf("tiny-vk gate %s: %+v", g, c)
		}
	}
	for _, c := range res.Candidates {
		if c.ID != "tiny-vk" {
			continue
		}
		for _, l := range c.Lifetimes {
			if l.Offloaded == nil || l.Offloaded.Layers != l.Offloaded.Of || l.Offloaded.Of == 0 ||
				len(l.Devices) != 1 || !strings.HasPrefix(l.Devices[0].Device, "Vulkan") {
				t.Errorf("tiny-vk %s lifetime: offloaded %+v, devices %+v", l.Pass, l.Offloaded, l.Devices)
			}
		}
	}
	big := capacityCell(t, res, "medium-vk")
	if big.Passed || !slices.Contains(big.Failures, capacity.CodePeakDeviceAbove) || big.PeakDeviceMiB == nil || *big.PeakDeviceMiB <= 32 {
		t.Errorf("medium-vk: passed %v, peak %s, failures %v (want %s)", big.Passed, fmtPtr(big.PeakDeviceMiB), big.Failures, capacity.CodePeakDeviceAbove)
	}
	cpu := capacityCell(t, res, "tiny-cpu")
	if cpu.Passed || !slices.Contains(cpu.Failures, capacity.CodeDeviceNotUsed) {
		t.Errorf("tiny-cpu: passed %v, failures %v (want %s)", cpu.Passed, cpu.Failures, capacity.CodeDeviceNotUsed)
	}
}

// TestCapacityCPURepackMarker: llama-server repacks a Q4_0 model's weights for this x86 CPU
// (a CPU_REPACK buffer in the last load block, the counterpart of the seed's CPU_KLEIDIAI): a
// candidate that requires the marker passes its gate, its twin that forbids it fails with
// backend_marker_forbidden_present.
func TestCapacityCPURepackMarker(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	q4 := llamatest.Model(t, "medium-llama-q4_0.gguf")
	sha := capacitySHA(t, q4)
	cand := func(id, markers string) string {
		return fmt.Sprintf(`{"id": %q, "label": %q, "model": {"path": %q, "sha256": %q},
		  "server_flags": ["-t", "1", "-lv", "4", "--device", "none"], "markers": %s}`, id, id, q4, sha, markers)
	}
	res := runCapacityPlan(t, "cpu repack marker", "", cand("q4-repack", `{"must": ["CPU_REPACK model buffer"]}`)+",\n"+
		cand("q4-no-repack", `{"must_not": ["CPU_REPACK model buffer"]}`), "")
	must := capacityCell(t, res, "q4-repack")
	if g := gateOf(must, "backend_markers_required"); g == nil || !g.Passed || !must.Passed {
		t.Errorf("q4-repack: gate %+v, passed %v, failures %v", g, must.Passed, must.Failures)
	}
	not := capacityCell(t, res, "q4-no-repack")
	if g := gateOf(not, "backend_markers_forbidden"); g == nil || g.Passed || !slices.Contains(not.Failures, capacity.CodeMarkerForbidden) {
		t.Errorf("q4-no-repack: gate %+v, failures %v (want %s)", g, not.Failures, capacity.CodeMarkerForbidden)
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// startRPCServer runs the prefix's ggml-rpc-server on a free loopback port for the test (own
// process group, killed at the end) and returns its endpoint once it accepts connections.
func startRPCServer(t *testing.T) string {
	t.Helper()
	loc := llamatest.Binaries(t)
	bin := filepath.Join(loc.Dir, "ggml-rpc-server")
	if _, err := os.Stat(bin); err != nil {
		msg := "no ggml-rpc-server beside the tools: run make setup (the full llama.cpp prefix)"
		if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ep := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port), "-t", "1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", ep, time.Second); err == nil {
			c.Close()
			return ep
		}
		if time.Now().After(end) {
			t.Fatalf("ggml-rpc-server on %s did not accept within 10 s:\n%s", ep, log.String())
		}
	}
}

// TestRPCLegOverLoopback runs the tiny model locally (-dev none) and on a ggml-rpc-server over
// loopback (-dev RPC0) in one study: the RPC rows say RPC in their backends and the endpoint in
// gpu_info, and the RPC/local ratio is a derived figure and a prediction's answer.
func TestRPCLegOverLoopback(t *testing.T) {
	ep := startRPCServer(t)
	tiny := llamatest.Model(t, "tiny-llama-f16.gguf")
	dir := t.TempDir()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "rpc vs local",
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0], "n_prompt": [128], "n_gen": [32], "reps": 3, "threads": [1], "ngl": [99],
           "devices": ["none", "RPC0"], "rpc": [%q]},
  "split": "combined",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
  "predictions": [{"id": "P1", "kind": "question", "text": "how fast is tg over RPC, relative to local?",
    "about": {"figure": "device_ratio", "model": "tiny", "test": "tg", "depth": 0, "device": "RPC0", "base_device": "none"}}]
}`, tiny, "051f36703c755992aa490c43c53f5fbe1dc59fd3aa00ab436f0cedb2df135354", ep)
	file := filepath.Join(dir, "rpc.json")
	os.WriteFile(file, []byte(plan), 0o644)
	nb, id, rep := runWithoutCVFlags(t, dir, file, "")
	rpcCells := 0
	for _, c := range rep.Results {
		if strings.Contains(c.Config, "dev-RPC0") {
			rpcCells++
			if !strings.HasSuffix(c.Config, "on-RPC") {
				t.Errorf("RPC cell config %q does not say it ran on RPC", c.Config)
			}
		}
	}
	if rpcCells != 2 {
		t.Errorf("%d RPC cells, want 2 (pp128, tg32)", rpcCells)
	}
	n, err := store.Open(nb)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rows, err := n.StudyBenchRows(context.Background(), mustAtoi(t, id))
	if err != nil {
		t.Fatal(err)
	}
	rpcRows := 0
	for _, r := range rows {
		if r.Devices == "RPC0" {
			rpcRows++
			if !strings.Contains(r.Backends, "RPC") || r.GPUInfo != ep || r.RanOn() != "RPC" {
				t.Errorf("RPC row: backends %q, gpu_info %q, ran on %q", r.Backends, r.GPUInfo, r.RanOn())
			}
		}
	}
	if rpcRows != 2 {
		t.Errorf("%d rows with devices RPC0, want 2", rpcRows)
	}
	var ratio *study.ReportFigure
	for i, f := range rep.Figures {
		if f.Figure == study.FigureDeviceRatio && f.Selector.Test == "tg32" {
			ratio = &rep.Figures[i]
		}
	}
	if ratio == nil || ratio.Value == nil || *ratio.Value <= 0 || len(ratio.Sources) != 2 {
		t.Fatalf("no tg32 RPC0/none ratio among the figures: %+v", rep.Figures)
	}
	if len(rep.Scoreboard) != 1 || rep.Scoreboard[0].Verdict.Outcome != study.Answered {
		t.Errorf("P1: %+v", rep.Scoreboard)
	} else if v := rep.Scoreboard[0].Verdict.Value; v == nil || *v != *ratio.Value {
		t.Errorf("P1 answered %v, the figure says %v", v, *ratio.Value)
	}
	if code, out, errOut := runCLI("study", "show", id, "--notebook", nb); code != 0 || !strings.Contains(out, "device_ratio tg32 @ d0 of tiny RPC0 / none") {
		t.Errorf("show: %d\n%s\n%s", code, out, errOut)
	}
}

// TestDevicePlanRefusals: device plans the build cannot run are refused by study validate and
// study register with a message that names what is wrong and what to do, and register writes
// nothing; offload asked of a build without devices is a warning.
func TestDevicePlanRefusals(t *testing.T) {
	_, dev := vulkanDevice(t)
	tiny := llamatest.Model(t, "tiny-llama-f16.gguf")
	const tinyF16 = "051f36703c755992aa490c43c53f5fbe1dc59fd3aa00ab436f0cedb2df135354"
	// an endpoint nothing listens on, and one that accepts and never answers
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().String()
	l.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()

	for _, tc := range []struct {
		name, build, axes string
		code              int
		want              []string
	}{
		{"vulkan without the visibility variable", ``, `"ngl": [99], "devices": ["Vulkan0"]`, 2,
			[]string{"axes.devices[0]", "Vulkan0: no such device", "GGML_VK_VISIBLE_DEVICES", "mesa-vulkan-drivers"}},
		{"a device that does not exist", `"env": {"GGML_VK_VISIBLE_DEVICES": "0"}`, `"ngl": [99], "devices": ["Vulkan7"]`, 2,
			[]string{"axes.devices[0]", "Vulkan7: no such device; the build lists " + dev}},
		{"an RPC endpoint that refuses", ``, fmt.Sprintf(`"devices": ["RPC0"], "rpc": [%q]`, closed), 2,
			[]string{"axes.rpc", "RPC endpoint " + closed + " refused the connection", "ggml-rpc-server"}},
		{"an RPC endpoint that does not answer", ``, fmt.Sprintf(`"devices": ["RPC0"], "rpc": [%q]`, silent.Addr().String()), 2,
			[]string{"axes.rpc", "RPC endpoint " + silent.Addr().String() + " did not answer within 10s"}},
		{"a tensor split with the wrong number of entries", `"env": {"GGML_VK_VISIBLE_DEVICES": "0"}`, `"ngl": [99], "devices": ["` + dev + `"], "tensor_split": ["1/1"]`, 2,
			[]string{"axes.tensor_split[0]", `"1/1" has 2 entries, and devices "` + dev + `" names 1 devices`}},
		{"a variable that is not a device variable", `"env": {"LD_PRELOAD": "x.so"}`, `"ngl": [99]`, 2,
			[]string{"build.env.LD_PRELOAD", "not a device visibility variable", "GGML_VK_VISIBLE_DEVICES"}},
		{"offload on a build that lists no device", ``, `"ngl": [99]`, 0,
			[]string{"warning: axes.ngl[0]", "-ngl 99 on a build that lists no device"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			build := ""
			if tc.build != "" {
				build = `"build": {` + tc.build + `},`
			}
			plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": "refusal", %s
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0], "n_prompt": [16], "n_gen": [4], "reps": 1, "threads": [1], %s}}`, build, tiny, tinyF16, tc.axes)
			file := filepath.Join(dir, "plan.json")
			os.WriteFile(file, []byte(plan), 0o644)
			code, out, errOut := runCLI("study", "validate", file)
			for _, w := range tc.want {
				if code != tc.code || !strings.Contains(out+errOut, w) {
					t.Errorf("validate: exit %d (want %d), output lacks %q:\n%s%s", code, tc.code, w, out, errOut)
				}
			}
			if tc.code == 0 {
				return
			}
			nb := filepath.Join(dir, "notebook.db")
			code, out, errOut = runCLI("study", "register", file, "--notebook", nb)
			if code != 2 || !strings.Contains(errOut, tc.want[1]) {
				t.Errorf("register: exit %d, want 2 naming %q:\n%s%s", code, tc.want[1], out, errOut)
			}
			if _, err := os.Stat(nb); err == nil {
				n, err := store.Open(nb)
				if err != nil {
					t.Fatal(err)
				}
				defer n.Close()
				if s, err := n.Studies(context.Background()); err != nil || len(s) != 0 {
					t.Errorf("a refused plan left %d studies (%v)", len(s), err)
				}
			}
		})
	}
}

// TestNGLSweepOnVulkan sweeps -ngl over the tiny model's layers on the Vulkan device: one
// cell per value (ngl 0 runs on the CPU and says so, the others on Vulkan), the t/s-vs-ngl
// chart has one series with every value, and the receipt carries it and verifies.
func TestNGLSweepOnVulkan(t *testing.T) {
	_, dev := vulkanDevice(t)
	tiny := llamatest.Model(t, "tiny-llama-f16.gguf")
	dir := t.TempDir()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "ngl sweep",
  "build": {"env": {"GGML_VK_VISIBLE_DEVICES": "0"}},
  "models": [{"id": "tiny", "path": %q, "sha256": "051f36703c755992aa490c43c53f5fbe1dc59fd3aa00ab436f0cedb2df135354"}],
  "axes": {"depths": [0], "n_prompt": [32], "n_gen": [8], "reps": 3, "threads": [1], "ngl": [0, 1, 2, 3], "devices": [%q]},
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, tiny, dev)
	file := filepath.Join(dir, "ngl.json")
	os.WriteFile(file, []byte(plan), 0o644)
	nb, id, rep := runWithoutCVFlags(t, dir, file, "")
	tg := map[int]string{}
	for _, c := range rep.Results {
		if c.Test != "tg8" {
			continue
		}
		m := regexp.MustCompile(`\bngl(\d+)\b`).FindStringSubmatch(c.Config)
		if m == nil {
			t.Fatalf("config %q has no ngl", c.Config)
		}
		tg[int(mustAtoi(t, m[1]))] = c.Config
	}
	for ngl := 0; ngl <= 3; ngl++ {
		onVulkan := strings.HasSuffix(tg[ngl], " on-Vulkan")
		if tg[ngl] == "" || onVulkan != (ngl > 0) {
			t.Errorf("ngl %d: config %q (want a cell, on Vulkan when ngl > 0)", ngl, tg[ngl])
		}
	}
	ch, err := charts.NGL(rep, "tg")
	if err != nil || len(ch.Series) != 1 || len(ch.Series[0].Points) != 4 || ch.Series[0].Points[3].Depth != 3 {
		t.Fatalf("ngl chart: %v %+v", err, ch)
	}
	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(bundle, "plots", "ngl-tg.png")); err != nil {
		t.Errorf("the receipt has no t/s-vs-ngl chart: %v", err)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
}

// TestFitFindsTheLargestFittingNGL: llama-fit-params on the Vulkan device (2048 MiB) with the
// medium model (8 layers, 48 MiB): a margin that leaves room for every layer fits them all,
// tighter margins fit fewer layers, never more, and the suggested sweep ends at the fit.
func TestFitFindsTheLargestFittingNGL(t *testing.T) {
	vulkanDevice(t)
	medium := llamatest.Model(t, "medium-llama-f16.gguf")
	fit := func(margin int) fitReport {
		t.Helper()
		code, out, errOut := runCLI("fit", medium, "--env", vkEnv, "--margin", fmt.Sprint(margin), "--ctx", "512", "--json")
		var r fitReport
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("fit --margin %d: %d\n%s\n%s", margin, code, out, errOut)
		}
		return r
	}
	all := fit(0)
	if all.NGL != -1 || all.Layers != 8 || all.Ctx != 512 || all.Sweep[len(all.Sweep)-1] != 8 {
		t.Errorf("margin 0: %+v (want every layer, sweep to 8)", all)
	}
	prev := 8
	for _, m := range []int{2000, 2020, 2040} {
		r := fit(m)
		if r.NGL < 0 || r.NGL > prev || r.Sweep[len(r.Sweep)-1] != r.NGL || r.Sweep[0] != 0 {
			t.Errorf("margin %d: ngl %d (previous %d), sweep %v", m, r.NGL, prev, r.Sweep)
		}
		prev = r.NGL
	}
	if prev >= 8 {
		t.Errorf("a 2040 MiB margin of a 2048 MiB device still fits %d layers", prev)
	}
	for _, bad := range [][]string{
		{"fit", filepath.Join(t.TempDir(), "absent.gguf")},
		{"fit", medium, "--env", "LD_PRELOAD=x"},
		{"fit", medium, "--margin", "-1"},
	} {
		if code, _, _ := runCLI(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

func TestFitSweep(t *testing.T) {
	for _, tc := range []struct {
		fit, layers int
		want        string
	}{{5, 8, "[0 1 2 3 5]"}, {-1, 8, "[0 2 4 6 8]"}, {2, 8, "[0 1 2]"}, {0, 8, "[0]"}, {-1, 0, "[0 -1]"}, {48, 48, "[0 12 24 36 48]"}} {
		if got := fmt.Sprint(fitSweep(tc.fit, tc.layers)); got != tc.want {
			t.Errorf("fitSweep(%d, %d) = %s, want %s", tc.fit, tc.layers, got, tc.want)
		}
	}
}

// cvAttempts is how many fresh runs of a real-binary study a test makes before a leg the CV
// gate flagged fails it.
const cvAttempts = 3

// cvFlagged lists the legs the CV gate flagged (a leg the device gate flagged is not listed:
// that is what the device tests are about).
func cvFlagged(rep *study.Report) []string {
	var out []string
	for _, l := range rep.Legs {
		if l.Class == string(runner.ClassFlagged) && !strings.Contains(l.Reason, "device:") {
			out = append(out, l.Label+": "+l.Reason)
		}
	}
	return out
}

// runWithoutCVFlags registers and runs the plan file on a fresh notebook in dir, again (on
// another fresh notebook) while the CV gate flags a leg: under a loaded machine a test of a
// few milliseconds can vary past even a 100% gate, and that leg ends with fewer results. A
// study still flagged after cvAttempts runs fails the test (never skips it). It returns the
// notebook, the study id and its show --json.
func runWithoutCVFlags(t *testing.T, dir, file, llamaDir string) (nb, id string, rep *study.Report) {
	t.Helper()
	var flagged []string
	for attempt := 1; attempt <= cvAttempts; attempt++ {
		nb = filepath.Join(dir, fmt.Sprintf("notebook-%d.db", attempt))
		id = registerAndRun(t, nb, file, llamaDir, true)
		rep = showJSON(t, id, nb)
		if flagged = cvFlagged(rep); len(flagged) == 0 {
			return nb, id, rep
		}
		t.Logf("attempt %d of %d: the CV gate flagged %q; running again on a fresh notebook", attempt, cvAttempts, flagged)
	}
	t.Fatalf("the CV gate flagged legs in each of %d runs (last: %q)", cvAttempts, flagged)
	return "", "", nil
}
