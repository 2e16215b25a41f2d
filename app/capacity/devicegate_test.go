package capacity

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sparkbench/runner/vocab"
)

// The device memory gate (limits.max_device_mib) on recorded-style server logs: each of its
// three failure paths has a log that takes it, and a log that passes it next to it, so a gate
// that always passes (or always fails) is caught.

// deviceLog is a two-load server log whose real load offloads n of of layers (n < 0: no
// "offloaded" line) and puts modelMiB of model buffer and kvMiB of KV buffer on Vulkan0.
func deviceLog(n, of int, modelMiB, kvMiB float64) []byte {
	var extra []string
	if n >= 0 {
		extra = append(extra, fmt.Sprintf("offloaded %d/%d layers to GPU", n, of))
	}
	if modelMiB > 0 {
		extra = append(extra, fmt.Sprintf("      Vulkan0 model buffer size = %8.2f MiB", modelMiB))
	}
	log := serverLog(nil, extra)
	if kvMiB > 0 {
		log = fmt.Appendf(log, "0.00.329.000 I llama_kv_cache:    Vulkan0 KV buffer size = %8.2f MiB\n", kvMiB)
	}
	return log
}

// devicePlan is the small plan with the device memory gate at limit MiB; candidate a asks
// for -ngl 99, candidate b names no -ngl (its offloaded_layers check is not applied).
func devicePlan(limit float64) *Plan {
	p := smallPlan()
	p.Limits.MaxDeviceMiB = limit
	p.Candidates[0].ServerFlags = append(p.Candidates[0].ServerFlags, "-ngl", "99")
	return p
}

// wantOtherLifetimesPass: every cell outside (cand, slots) passes.
func wantOtherLifetimesPass(t *testing.T, r Result, cand string, slots int) {
	t.Helper()
	for _, c := range r.Candidates {
		for _, cell := range c.Cells {
			if (c.ID != cand || cell.Slots != slots) && !cell.Passed {
				t.Errorf("%s P%d/C%d fails %v too", c.ID, cell.Slots, cell.Clients, cell.Failures)
			}
		}
	}
}

func checkOf(t *testing.T, cell CellResult, gate string) GateCheck {
	t.Helper()
	for _, g := range cell.Checks {
		if g.Gate == gate {
			return g
		}
	}
	t.Fatalf("P%d/C%d has no %s check: %+v", cell.Slots, cell.Clients, gate, cell.Checks)
	return GateCheck{}
}

func TestDeviceGatePasses(t *testing.T) {
	p := devicePlan(150)
	in := fixture{logs: func(LifetimeKey) []byte { return deviceLog(3, 3, 100, 20) }}.inputs(t, p)
	r := mustAssemble(t, p, in)
	if !strings.Contains(r.Definitions["device_memory_gate"], CodeOffloadBelow) {
		t.Errorf("definition %q", r.Definitions["device_memory_gate"])
	}
	for _, cand := range []string{"a", "b"} {
		for _, s := range []int{1, 2} {
			for _, c := range []int{1, 2} {
				cell := cellOf(t, r, cand, s, c)
				wantFailures(t, cell)
				if cell.PeakDeviceMiB == nil || *cell.PeakDeviceMiB != 120 {
					t.Errorf("%s P%d/C%d peak %v, want 120 (model 100 + KV 20)", cand, s, c, cell.PeakDeviceMiB)
				}
				if !checkOf(t, cell, "device_used").Passed {
					t.Errorf("%s P%d/C%d device_used failed", cand, s, c)
				}
			}
		}
	}
	// -ngl asked: the check is there (and passes); no -ngl: it is not applied
	checkOf(t, cellOf(t, r, "a", 1, 1), "offloaded_layers")
	for _, g := range cellOf(t, r, "b", 1, 1).Checks {
		if g.Gate == "offloaded_layers" {
			t.Errorf("b names no -ngl and has an offloaded_layers check: %+v", g)
		}
	}
}

// A lifetime whose real load keeps every layer on the CPU: device:not_used, on that
// lifetime's cells only; a compute buffer on the device alone does not count as used.
func TestDeviceGateNotUsed(t *testing.T) {
	p := devicePlan(150)
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "b" && k.Slots == 2 && k.Pass == PassReverse {
			log := serverLog(nil, nil) // CPU_Mapped model buffer only
			return append(log, "0.00.329.100 I llama_context:    Vulkan0 compute buffer size =    12.00 MiB\n"...)
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "b", 2, c)
		wantFailures(t, cell, CodeDeviceNotUsed)
		g := checkOf(t, cell, "device_used")
		if g.Passed || !strings.Contains(g.Detail, "reverse: no layer on a device") {
			t.Errorf("check %+v", g)
		}
	}
	wantOtherLifetimesPass(t, r, "b", 2)
	for _, c := range []int{1, 2} {
		wantFailures(t, cellOf(t, r, "b", 1, c))
		wantFailures(t, cellOf(t, r, "a", 2, c))
	}
}

// "offloaded 0/3" is not used either, even with a model buffer named on a device.
func TestDeviceGateZeroOffloadedIsNotUsed(t *testing.T) {
	p := devicePlan(150)
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "b" && k.Slots == 1 && k.Pass == PassForward {
			return deviceLog(0, 3, 0.5, 0)
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		wantFailures(t, cellOf(t, r, "b", 1, c), CodeDeviceNotUsed)
		wantFailures(t, cellOf(t, r, "b", 2, c))
	}
}

// -ngl 99 on a 3-layer model offloading 2: offload:layers_below_requested; the same log on a
// candidate that asked for -ngl 2 passes (asked for no more than it got).
func TestDeviceGateLayersBelowRequested(t *testing.T) {
	p := devicePlan(150)
	p.Candidates[1].ServerFlags = append(p.Candidates[1].ServerFlags, "--n-gpu-layers=2")
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Slots == 1 && k.Pass == PassForward {
			return deviceLog(2, 3, 100, 0)
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "a", 1, c)
		wantFailures(t, cell, CodeOffloadBelow)
		g := checkOf(t, cell, "offloaded_layers")
		if g.Passed || !strings.Contains(g.Detail, "forward: offloaded 2/3 layers, -ngl asked for 99") {
			t.Errorf("check %+v", g)
		}
		wantFailures(t, cellOf(t, r, "b", 1, c))
		if g := checkOf(t, cellOf(t, r, "b", 1, c), "offloaded_layers"); !g.Passed {
			t.Errorf("b asked for 2 and got 2: %+v", g)
		}
	}
	wantOtherLifetimesPass(t, r, "a", 1)
}

// -ngl all asks for every layer.
func TestDeviceGateNGLAll(t *testing.T) {
	p := devicePlan(150)
	p.Candidates[1].ServerFlags = append(p.Candidates[1].ServerFlags, "-ngl", "all")
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "b" && k.Slots == 2 && k.Pass == PassForward {
			return deviceLog(1, 3, 40, 0)
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		wantFailures(t, cellOf(t, r, "b", 2, c), CodeOffloadBelow)
		wantFailures(t, cellOf(t, r, "b", 1, c))
	}
}

// The worst lifetime's device peak above the limit: peak_device_mib_above_maximum, with the
// observed peak; at the limit exactly it passes. No device memory at all: the peak is
// undefined, which fails too.
func TestDeviceGatePeakAboveLimit(t *testing.T) {
	p := devicePlan(150)
	in := fixture{logs: func(k LifetimeKey) []byte {
		switch {
		case k.Candidate == "a" && k.Slots == 2 && k.Pass == PassReverse:
			return deviceLog(3, 3, 140, 10.5) // 150.5 MiB
		case k.Candidate == "b" && k.Slots == 2:
			return deviceLog(3, 3, 140, 10) // exactly 150
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "a", 2, c)
		wantFailures(t, cell, CodePeakDeviceAbove)
		if cell.PeakDeviceMiB == nil || *cell.PeakDeviceMiB != 150.5 {
			t.Errorf("a P2/C%d peak %v, want 150.5", c, cell.PeakDeviceMiB)
		}
		g := checkOf(t, cell, "peak_device_mib")
		if g.Passed || g.Observed == nil || *g.Observed != 150.5 || g.Limit == nil || *g.Limit != 150 {
			t.Errorf("check %+v", g)
		}
		wantFailures(t, cellOf(t, r, "b", 2, c))
	}
	wantOtherLifetimesPass(t, r, "a", 2)

	p = devicePlan(150)
	p.Candidates[0].ServerFlags = slices.Clone(p.Candidates[0].ServerFlags[:4]) // no -ngl
	in = fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "a" {
			return serverLog(nil, nil) // no device in the log
		}
		return deviceLog(3, 3, 100, 0)
	}}.inputs(t, p)
	r = mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "a", 1, c)
		wantFailures(t, cell, CodeDeviceNotUsed, CodePeakDeviceAbove)
		if g := checkOf(t, cell, "peak_device_mib"); g.Passed || !strings.Contains(g.Detail, "the peak is undefined") {
			t.Errorf("check %+v", g)
		}
		wantFailures(t, cellOf(t, r, "b", 1, c))
	}
}

// TestRequestedLayers: the -ngl a candidate's flags ask for, in each spelling; a flag with no
// value after it (the last argument) asks for nothing, and the last one given wins.
func TestRequestedLayers(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		n     int
		ok    bool
	}{
		{nil, 0, false},
		{[]string{"-ngl"}, 0, false},
		{[]string{"-c", "512", "--n-gpu-layers"}, 0, false},
		{[]string{"-ngl", "7"}, 7, true},
		{[]string{"-ngl", "7", "-ngl"}, 7, true},
		{[]string{"--n-gpu-layers=12"}, 12, true},
		{[]string{"--gpu-layers", "all"}, 1 << 30, true},
		{[]string{"-ngl", "x"}, 0, false},
		{[]string{"-ngl", "3", "--gpu-layers=5"}, 5, true},
	} {
		if n, ok := requestedLayers(tc.flags); n != tc.n || ok != tc.ok {
			t.Errorf("requestedLayers(%q) = %d, %v; want %d, %v", tc.flags, n, ok, tc.n, tc.ok)
		}
	}
}

// TestLayersOnDevice: with no "offloaded" line a model buffer above 0 MiB on a device other
// than the CPU is what says the layers went there; 0 MiB, a host buffer or a compute buffer
// alone do not; an "offloaded N/M" line decides by N whatever the buffers say.
func TestLayersOnDevice(t *testing.T) {
	buf := func(kind, dev string, mib float64) vocab.Buffer {
		return vocab.Buffer{Kind: kind, Device: dev, MiB: mib}
	}
	for _, tc := range []struct {
		name string
		ev   vocab.Evidence
		want bool
	}{
		{"device model buffer", vocab.Evidence{Buffers: []vocab.Buffer{buf(vocab.BufferModel, "Vulkan0", 100)}}, true},
		{"device model buffer 0 MiB", vocab.Evidence{Buffers: []vocab.Buffer{buf(vocab.BufferModel, "Vulkan0", 0), buf(vocab.BufferCompute, "Vulkan0", 12)}}, false},
		{"host model buffer", vocab.Evidence{Buffers: []vocab.Buffer{buf(vocab.BufferModel, "CPU_Mapped", 100)}}, false},
		{"device compute buffer only", vocab.Evidence{Buffers: []vocab.Buffer{buf(vocab.BufferCompute, "Vulkan0", 12)}}, false},
		{"offloaded 0/3 with a device buffer", vocab.Evidence{Offloaded: &vocab.Offload{Layers: 0, Of: 3}, Buffers: []vocab.Buffer{buf(vocab.BufferModel, "Vulkan0", 100)}}, false},
		{"offloaded 1/3 without a device buffer", vocab.Evidence{Offloaded: &vocab.Offload{Layers: 1, Of: 3}}, true},
	} {
		if got := layersOnDevice(tc.ev); got != tc.want {
			t.Errorf("%s: layersOnDevice = %v, want %v", tc.name, got, tc.want)
		}
	}
}
