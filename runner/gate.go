package runner

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/vocab"
)

// Default CV gate limits (stddev / mean of t/s over the repetitions; runner/vocab).
const (
	DefaultCVTG      = vocab.DefaultCVTG      // tg (and pg) at any depth
	DefaultCVPPDepth = vocab.DefaultCVPPDepth // pp at depth > 0
	DefaultCVPP      = vocab.DefaultCVPP      // pp at depth 0
)

// CVGate flags a test whose coefficient of variation is above its limit and halts the leg
// (or, with Count, records the flag and keeps the row as a result: the process is anomalous,
// not missing). Zero limits take the defaults; Off disables the gate. A test with fewer than
// two repetitions has no CV and passes.
type CVGate struct {
	Off     bool    `json:"off,omitempty"`
	TG      float64 `json:"tg,omitempty"`
	PPDepth float64 `json:"pp_depth,omitempty"`
	PP      float64 `json:"pp,omitempty"`
	Count   bool    `json:"count,omitempty"`
}

func (g CVGate) withDefaults() CVGate {
	if g.TG <= 0 {
		g.TG = DefaultCVTG
	}
	if g.PPDepth <= 0 {
		g.PPDepth = DefaultCVPPDepth
	}
	if g.PP <= 0 {
		g.PP = DefaultCVPP
	}
	return g
}

// Limit is the CV limit for a row.
func (g CVGate) Limit(r *benchfmt.Result) float64 {
	g = g.withDefaults()
	if r.Kind() == benchfmt.KindPP {
		if r.NDepth > 0 {
			return g.PPDepth
		}
		return g.PP
	}
	return g.TG
}

// CV is stddev_ts / avg_ts; 0 with fewer than two repetitions or no mean.
func CV(r *benchfmt.Result) float64 {
	if r.AvgTs <= 0 || len(r.SamplesTs) < 2 || math.IsNaN(r.StddevTs) {
		return 0
	}
	return r.StddevTs / r.AvgTs
}

// Check returns the CV, the limit and whether the row passes.
func (g CVGate) Check(r *benchfmt.Result) (cv, limit float64, ok bool) {
	cv, limit = CV(r), g.Limit(r)
	if g.Off {
		return cv, limit, true
	}
	return cv, limit, cv <= limit
}

// DefaultCanaryMaxDrop is how far below its baseline a canary may run and still pass.
const DefaultCanaryMaxDrop = 0.20

// CanarySpec is the small, short leg a queue runs after a leg of class device_lost, crashed or
// oom, to learn whether the machine is still fit to measure.
type CanarySpec struct {
	Leg LegSpec `json:"leg"`
	// Baseline is the canary's recorded t/s per test name ("pp64", "tg32"); a test not named
	// here is only required to complete.
	Baseline map[string]float64 `json:"baseline,omitempty"`
	// MaxDrop is the fraction below the baseline still accepted (default 0.20).
	MaxDrop float64 `json:"max_drop,omitempty"`
}

// EvaluateCanary passes a canary leg that completed (class ok) with every baselined test no
// more than MaxDrop below its baseline.
func EvaluateCanary(spec CanarySpec, res *LegResult) (pass bool, reason string, observed map[string]float64) {
	maxDrop := spec.MaxDrop
	if maxDrop <= 0 {
		maxDrop = DefaultCanaryMaxDrop
	}
	observed = map[string]float64{}
	for _, r := range res.Rows {
		observed[r.Sample.Test] = r.Sample.AvgTs
	}
	if res.Exit.Class != ClassOK {
		return false, fmt.Sprintf("canary did not complete: %s: %s", res.Exit.Class, res.Exit.Reason), observed
	}
	names := make([]string, 0, len(spec.Baseline))
	for n := range spec.Baseline {
		names = append(names, n)
	}
	sort.Strings(names)
	var bad []string
	for _, n := range names {
		base := spec.Baseline[n]
		got, ok := observed[n]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s missing (baseline %.2f t/s)", n, base))
		case base > 0 && got < base*(1-maxDrop):
			bad = append(bad, fmt.Sprintf("%s %.2f t/s is %.1f%% below its baseline %.2f (limit %.0f%%)",
				n, got, 100*(1-got/base), base, 100*maxDrop))
		}
	}
	if len(bad) > 0 {
		return false, "canary below baseline: " + strings.Join(bad, "; "), observed
	}
	return true, "canary passed", observed
}

// DeviceGate is the device evidence a leg must show: every row must have run on Want's
// backends (benchfmt's RanOn), not on the CPU. Want is the leg's devices value ("Vulkan0",
// "CUDA0/CUDA1", "RPC0"), or, for a leg that asked for offload without naming a device
// (-dev auto with -ngl ≠ 0 and a device visible), "auto": any device but the CPU.
type DeviceGate struct {
	Want string `json:"want"`
}

// Device gate failure codes.
const (
	CodeDeviceNotUsed      = "device:not_used"      // the row ran on the CPU
	CodeDeviceOtherBackend = "device:other_backend" // the row ran on another backend's device
)

// Check returns "" when row r ran where the gate wants, else the failure code and why.
func (g DeviceGate) Check(r *benchfmt.Result) (code, why string) {
	if g.Want == "" || g.Want == "none" {
		return "", ""
	}
	if r.Known.Has(benchfmt.FNGPULayers) && r.NGPULayers == 0 {
		return "", "" // -ngl 0 (an ngl sweep's first point) asks for no layer on the device
	}
	if !r.Known.Has(benchfmt.FGPUInfo) || !r.Known.Has(benchfmt.FNGPULayers) {
		return CodeDeviceNotUsed, fmt.Sprintf("asked for %s, and the row does not say where it ran (no gpu_info or n_gpu_layers)", g.Want)
	}
	ran := r.RanOn()
	if ran == "CPU" {
		return CodeDeviceNotUsed, fmt.Sprintf("asked for %s, and the row ran on the CPU (gpu_info %q, n_gpu_layers %d, devices %q)",
			g.Want, r.GPUInfo, r.NGPULayers, r.Devices)
	}
	if g.Want == "auto" {
		return "", ""
	}
	if want := benchfmt.DeviceBackends(g.Want); want != "" && want != ran {
		return CodeDeviceOtherBackend, fmt.Sprintf("asked for %s (%s), and the row ran on %s (gpu_info %q)", g.Want, want, ran, r.GPUInfo)
	}
	return "", ""
}
