package vocab

import (
	"slices"
	"testing"
)

func TestDeviceOf(t *testing.T) {
	for name, want := range map[string]string{
		"CPU": "CPU", "CPU_Mapped": "CPU", "CPU_REPACK": "CPU", "CPU_KLEIDIAI": "CPU", "Host": "CPU",
		"CUDA_Host": "CPU", "Vulkan_Host": "CPU", "MTL0_Mapped": "MTL0", "HTP0-REPACK": "HTP0",
		"CUDA1": "CUDA1", "Vulkan0": "Vulkan0", "RPC[10.0.2.233:50052]": "RPC[10.0.2.233:50052]", "_Mapped": "_Mapped",
	} {
		if got := DeviceOf(name); got != want {
			t.Errorf("DeviceOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// The helpers on a hand-made evidence: the breakdown wins over the buffers where it names the
// device; a device whose only entries are 0 MiB is not used; a row without "self" sums its
// parts. (The same helpers on real logs: runner/devlog's tests.)
func TestEvidenceHelpers(t *testing.T) {
	e := Evidence{
		Buffers: []Buffer{{Kind: BufferModel, Device: "CUDA0", MiB: 100}, {Kind: BufferKV, Device: "CUDA0", MiB: 20},
			{Kind: BufferModel, Device: "CUDA1", MiB: 0}, {Kind: BufferCompute, Device: "CUDA_Host", MiB: 4}},
		Breakdown: []BreakdownRow{{Device: "CUDA0", MiB: map[string]float64{"self": 130, "model": 100}},
			{Device: "Host", MiB: map[string]float64{"model": 1, "context": 2, "compute": 3}}},
	}
	if got := e.DevicesUsed(); !slices.Equal(got, []string{"CUDA0", "CPU"}) {
		t.Errorf("used %q", got)
	}
	for dev, want := range map[string]float64{"CUDA0": 130, "CPU": 6, "CUDA1": 0} {
		if got, ok := e.PeakDeviceMiB(dev); !ok || got != want {
			t.Errorf("peak %s = %v %v, want %v", dev, got, ok, want)
		}
	}
	if _, ok := e.PeakDeviceMiB("Vulkan0"); ok {
		t.Error("a device the evidence does not name has a peak")
	}
	if _, _, ok := e.OffloadedLayers(); ok {
		t.Error("offloaded without a line")
	}
	e.Offloaded = &Offload{Layers: 3, Of: 3, Line: 9}
	if n, of, ok := e.OffloadedLayers(); !ok || n != 3 || of != 3 {
		t.Errorf("offloaded %d/%d", n, of)
	}
}
