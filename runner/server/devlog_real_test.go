package server

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sparkbench/runner/sharedtest"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/devlog"
	"sparkbench/runner/llamatest"
)

// runAndStop starts llama-server with args (-lv 4 added by Start), sends one request of n
// tokens, stops it, and returns the stopped evidence, the evidence before the stop, the
// request's timings from the response, and the log.
func runAndStop(t *testing.T, env []string, args ...string) (Stopped, Evidence, *float64, int, string) {
	t.Helper()
	loc := llamatest.Binaries(t)
	spec := Spec{Binary: loc.Server, Args: append(args, "--parallel", "1", "--ctx-size", "512", "-t", llamatest.Threads),
		Env: append([]string{tagged(t)}, env...), StartTimeout: time.Minute}
	var log syncBuffer
	spec.Log = &log
	srv, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	rs := loadgenOnce(t, srv.URL(), 1, 8)
	if len(rs) != 1 || !rs[0].OK() || rs[0].Timings == nil {
		t.Fatalf("request %+v", rs)
	}
	live := srv.Evidence()
	st := srv.Stop(context.Background())
	tps := rs[0].Timings.PredictedPerSecond
	return st, live, &tps, rs[0].Timings.PredictedN, log.String()
}

func hasBackend(dir, name string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "libggml-"+name+"*"))
	return len(m) > 0
}

// The real llama-server on the Vulkan backend (Mesa's software device, shown only with
// GGML_VK_VISIBLE_DEVICES=0), the tiny model fully offloaded: the evidence names the device,
// counts the layers, holds Vulkan0's buffers and, after the stop, the memory breakdown row;
// the log's timing of the request is the response's.
func TestRealServerVulkanEvidence(t *testing.T) {
	loc := llamatest.Binaries(t)
	if !hasBackend(loc.Dir, "vulkan") {
		sharedtest.Require(t, fmt.Sprintf("the llama.cpp build in %s has no Vulkan backend (no libggml-vulkan*): run make setup (the full prefix)", loc.Dir))
	}
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	st, live, tps, predicted, log := runAndStop(t, []string{"GGML_VK_VISIBLE_DEVICES=0"}, "-m", model, "-ngl", "99")
	if strings.Contains(log, "ggml_vulkan: No devices found") {
		sharedtest.Require(t, "the Vulkan backend found no device: run make setup (mesa-vulkan-drivers)")
	}
	ev := st.Evidence
	// The tiny model: 2 repeating layers and the output layer.
	if n, of, ok := ev.OffloadedLayers(); !ok || n != 3 || of != 3 {
		t.Errorf("offloaded %d/%d (%v), want 3/3", n, of, ok)
	}
	if !slices.Contains(ev.DevicesUsed(), "Vulkan0") {
		t.Errorf("devices used %q", ev.DevicesUsed())
	}
	var vk *LogDevice
	for i := range ev.Devices {
		if ev.Devices[i].Name == "Vulkan0" {
			vk = &ev.Devices[i]
		}
	}
	if vk == nil || vk.Description == "" || !vk.Selected || vk.TotalMiB <= 0 {
		t.Errorf("devices %+v", ev.Devices)
	}
	kinds := map[string]float64{}
	for _, b := range ev.Buffers {
		if b.Device == "Vulkan0" {
			kinds[b.Kind] += b.MiB
		}
	}
	if kinds[BufferModel] <= 0 || kinds[BufferKV] <= 0 || kinds[BufferCompute] <= 0 {
		t.Errorf("Vulkan0 buffers %v in %+v", kinds, ev.Buffers)
	}
	// Live, the table of the real load is not printed yet: the peak is the buffers' sum.
	if len(live.Breakdown) != 0 {
		t.Errorf("a live server's evidence has a breakdown: %+v", live.Breakdown)
	}
	if got, ok := live.PeakDeviceMiB("Vulkan0"); !ok || math.Abs(got-(kinds[BufferModel]+kinds[BufferKV]+kinds[BufferCompute])) > 1e-9 {
		t.Errorf("live peak %v %v, buffers %v", got, ok, kinds)
	}
	// Stopped: llama-server printed the table at exit.
	var row *BreakdownRow
	for i := range ev.Breakdown {
		if ev.Breakdown[i].Device == "Vulkan0" {
			row = &ev.Breakdown[i]
		}
	}
	if row == nil {
		t.Fatalf("no Vulkan0 breakdown row: %+v\n%s", ev.Breakdown, tail(log, 20))
	}
	for _, col := range []string{"total", "free", "self", "model", "context", "compute"} {
		if _, ok := row.MiB[col]; !ok {
			t.Errorf("row %+v has no %s", row, col)
		}
	}
	// Each figure is rounded to a whole MiB on its own (self 3 = 0 + 0 + 2 is real).
	self := row.MiB["self"]
	if math.Abs(self-(row.MiB["model"]+row.MiB["context"]+row.MiB["compute"])) > 1.5 || self <= 0 || row.MiB["total"] < row.MiB["free"] {
		t.Errorf("row %+v", row)
	}
	if got, ok := ev.PeakDeviceMiB("Vulkan0"); !ok || got != self {
		t.Errorf("peak %v %v, row self %v", got, ok, self)
	}
	t.Logf("Vulkan0 %q: offloaded %v, buffers %v, breakdown %v", vk.Description, *ev.Offloaded, kinds, row.MiB)
	checkLogTiming(t, log, predicted, *tps)
}

// The real llama-server on the CPU with a Q4_0 model: the weights are repacked, and the
// breakdown printed at exit has a CPU_REPACK row beside Host.
func TestRealServerCPURepackBreakdown(t *testing.T) {
	model := llamatest.Model(t, "medium-llama-q4_0.gguf")
	st, _, tps, predicted, log := runAndStop(t, nil, "-m", model, "--device", "none")
	if !strings.Contains(log, "CPU_REPACK") {
		t.Skip("this CPU gets no repacked Q4_0 weights (no CPU_REPACK in the log)")
	}
	ev := st.Evidence
	byDev := map[string]map[string]float64{}
	for _, r := range ev.Breakdown {
		byDev[r.Device] = r.MiB
	}
	rp, host := byDev["CPU_REPACK"], byDev["Host"]
	if rp == nil || host == nil {
		t.Fatalf("breakdown %+v\n%s", ev.Breakdown, tail(log, 12))
	}
	if rp["self"] <= 0 || rp["self"] != rp["model"] || host["self"] <= 0 {
		t.Errorf("CPU_REPACK %v Host %v", rp, host)
	}
	var repackBuf float64
	for _, b := range ev.Buffers {
		if b.Device == "CPU_REPACK" && b.Kind == BufferModel {
			repackBuf += b.MiB
		}
	}
	// The table rounds to whole MiB.
	if math.Abs(repackBuf-rp["model"]) >= 1 {
		t.Errorf("CPU_REPACK buffer %v MiB, table %v", repackBuf, rp["model"])
	}
	if got, _ := ev.PeakDeviceMiB("CPU"); got != rp["self"]+host["self"] {
		t.Errorf("peak CPU %v, rows %v + %v", got, rp, host)
	}
	if used := ev.DevicesUsed(); !slices.Equal(used, []string{"CPU"}) {
		t.Errorf("devices used %q", used)
	}
	checkLogTiming(t, log, predicted, *tps)
}

// checkLogTiming: the log's print_timing of the one request is the response's timings
// (the log rounds to 2 decimals).
func checkLogTiming(t *testing.T, log string, predicted int, tps float64) {
	t.Helper()
	l := devlog.ScanText([]byte(log), nil)
	if len(l.Timings) != 1 {
		t.Fatalf("timings %+v", l.Timings)
	}
	tm := l.Timings[0]
	if tm.Source != "print_timing" || tm.GenTokens != predicted || math.Abs(tm.GenTPS-tps) > 0.006 || tm.PromptTokens <= 0 {
		t.Errorf("log timing %+v, response %d tokens at %v t/s", tm, predicted, tps)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
