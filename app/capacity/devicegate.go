package capacity

import (
	"fmt"
	"strconv"
	"strings"

	"sparkbench/runner/vocab"
)

// The device memory gate (limits.max_device_mib): device evidence read from each server
// lifetime's log, and the three gates a cell applies to it.

// deviceGateDefinition is printed on results of plans with limits.max_device_mib.
const deviceGateDefinition = "device memory gate (limits.max_device_mib): every server lifetime must hold model layers on a device (its 'offloaded N/M layers to GPU' says N > 0, else a model buffer on a device other than the CPU; else device:not_used), offload as many layers as -ngl asked, up to the model's (else offload:layers_below_requested), and keep the worst device's peak memory - the larger of the memory breakdown's self figures and the sum of its model, KV, compute and output buffers in the last load block - at or below the limit (else peak_device_mib_above_maximum)"

// deviceMemory lists the devices other than the CPU that hold memory in a lifetime's last load
// block, with their peaks (the larger of the memory breakdown's and the buffer lines' sums), in
// the order the log names them.
func deviceMemory(ev vocab.Evidence) []DeviceMemory {
	var out []DeviceMemory
	for _, d := range ev.DevicesUsed() {
		if d == "CPU" {
			continue
		}
		// the breakdown table rounds each figure to whole MiB (a small model's reads 0), the
		// buffer lines do not: the gate takes the larger
		mib, ok := ev.PeakDeviceMiB(d)
		buffers := 0.0
		for _, b := range ev.Buffers {
			if vocab.DeviceOf(b.Device) == d {
				buffers += b.MiB
			}
		}
		if ok || buffers > 0 {
			out = append(out, DeviceMemory{Device: d, PeakMiB: max(mib, buffers)})
		}
	}
	return out
}

// layersOnDevice says whether a device other than the CPU holds model layers: the block's
// "offloaded N/M layers" when it has one (N > 0), else a model buffer on such a device. A
// compute buffer alone does not count: llama.cpp allocates one on the device even at -ngl 0.
func layersOnDevice(ev vocab.Evidence) bool {
	if n, _, ok := ev.OffloadedLayers(); ok {
		return n > 0
	}
	for _, b := range ev.Buffers {
		if b.Kind == vocab.BufferModel && b.MiB > 0 && vocab.DeviceOf(b.Device) != "CPU" {
			return true
		}
	}
	return false
}

// requestedLayers is the -ngl a candidate's server flags ask for (ok false: none given).
func requestedLayers(flags []string) (n int, ok bool) {
	for i, f := range flags {
		v, found := "", false
		for _, name := range []string{"-ngl", "--n-gpu-layers", "--gpu-layers"} {
			if f == name && i+1 < len(flags) {
				v, found = flags[i+1], true
			} else if after, cut := strings.CutPrefix(f, name+"="); cut {
				v, found = after, true
			}
		}
		if found {
			if v == "all" {
				return 1 << 30, true
			}
			if x, err := strconv.Atoi(v); err == nil {
				n, ok = x, true
			}
		}
	}
	return n, ok
}

// deviceGates applies the device memory gate to a cell's lifetimes: the layers went to a
// device (device:not_used when none but the CPU holds memory; offload:layers_below_requested
// when fewer layers were offloaded than -ngl asked), and the worst device peak stays at or
// below limits.max_device_mib. It returns that peak (nil when no device was used).
func (a *assembler) deviceGates(c Candidate, lives []*lifetime, check func(GateCheck, string), above func(string, *float64, float64, string, string)) *float64 {
	var unused, short []string
	var peak *float64
	want, asked := requestedLayers(c.ServerFlags)
	for _, life := range lives {
		devs := deviceMemory(life.evidence)
		if !layersOnDevice(life.evidence) {
			unused = append(unused, fmt.Sprintf("%s: no layer on a device in the last load block (from line %d): the model ran on the CPU", life.key.Pass, life.block.StartLine))
		}
		for _, d := range devs {
			if peak == nil || d.PeakMiB > *peak {
				peak = fptr(d.PeakMiB)
			}
		}
		if n, of, ok := life.evidence.OffloadedLayers(); ok && asked && n < min(want, of) {
			short = append(short, fmt.Sprintf("%s: offloaded %d/%d layers, -ngl asked for %d", life.key.Pass, n, of, want))
		}
	}
	g := GateCheck{Gate: "device_used", Passed: len(unused) == 0}
	if len(unused) > 0 {
		g.Detail = strings.Join(unused, "; ")
	}
	check(g, CodeDeviceNotUsed)
	if asked {
		g := GateCheck{Gate: "offloaded_layers", Passed: len(short) == 0}
		if len(short) > 0 {
			g.Detail = strings.Join(short, "; ")
		}
		check(g, CodeOffloadBelow)
	}
	above("peak_device_mib", peak, a.p.Limits.MaxDeviceMiB, CodePeakDeviceAbove, "no device memory in the server logs: the peak is undefined")
	return peak
}
