// Package telemetry samples what the machine does while a leg runs: power and energy counters,
// clocks, temperatures, throttle reasons, utilisation, memory, CPU frequency, pressure and load
// (docs/telemetry.md). It holds the words (Point, Sample, Status), the readers of sysfs and
// /proc trees under a root path, the parsers of nvidia-smi, amd-smi, rocm-smi and powermetrics
// output, the NVML source over an interface, the counter unwrapping and the Sampler goroutines.
// It starts no process and loads no library: runner/telemetry/live runs the commands and loads
// libnvidia-ml, so every reader here is tested on fake trees, recorded output and a fake NVML.
package telemetry

import (
	"context"
	"time"
)

// Metric names. A point's value is in the unit its name ends with; energy_j is a counter
// (cumulative since the source was opened, already unwrapped), every other metric a reading.
const (
	PowerW        = "power_w"         // average or instantaneous power draw
	EnergyJ       = "energy_j"        // energy counter since the source opened (unwrapped)
	ClockSMMHz    = "clock_sm_mhz"    // GPU shader / graphics clock
	ClockMemMHz   = "clock_mem_mhz"   // GPU memory clock
	ClockMaxMHz   = "clock_max_mhz"   // the GPU's maximum shader clock
	TempC         = "temp_c"          // a temperature sensor
	MemUsedBytes  = "mem_used_bytes"  // device (or host) memory in use
	MemTotalBytes = "mem_total_bytes" // device (or host) memory
	Throttle      = "throttle"        // NVML clock event reasons, a bit mask (0: none)
	ThrottleHot   = "throttle_thermal"
	UtilPct       = "util_pct"     // busy share of the device
	FreqMHz       = "freq_mhz"     // a CPU core's current frequency
	FreqMaxMHz    = "freq_max_mhz" // a CPU core's maximum frequency
	PressureAvg10 = "some_avg10"   // /proc/pressure: share of time some task stalled, last 10 s (%)
	FullAvg10     = "full_avg10"   // /proc/pressure: share of time every task stalled (%)
	Load1         = "load1"        // load average over one minute
)

// Marks are the samples a recorder adds beside the readings, under the source SourceMark: a
// row's arrival (metric MarkRow, device "leg", the row's sequence number as value) and the
// leg's end (MarkEnd), so the figures can split a leg by rows from the notebook alone.
const (
	SourceMark = "mark"
	MarkRow    = "row"
	MarkEnd    = "leg_end"
)

// NVML clock event (throttle) reasons, as nvml.h numbers them; nvidia-smi's
// clocks_throttle_reasons.active prints the same mask in hex.
const (
	ReasonGpuIdle           = 0x1
	ReasonAppClocksSetting  = 0x2
	ReasonSwPowerCap        = 0x4
	ReasonHwSlowdown        = 0x8
	ReasonSyncBoost         = 0x10
	ReasonSwThermalSlowdown = 0x20
	ReasonHwThermalSlowdown = 0x40
	ReasonHwPowerBrake      = 0x80
	ReasonDisplayClock      = 0x100
	// ReasonsThermal are the reasons the thermal gate counts: the clocks were cut because the
	// chip was hot or the hardware asked (a power cap under load is the normal state of a busy
	// GPU and is reported, not gated).
	ReasonsThermal = ReasonHwSlowdown | ReasonSwThermalSlowdown | ReasonHwThermalSlowdown | ReasonHwPowerBrake
)

// Point is one reading of one metric of one device.
type Point struct {
	Device string  `json:"device"` // GPU0, package-0, cpu3, k10temp/Tctl, host
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
}

// Sample is what one source read at one moment. T is on the leg's clock (since the leg
// started) once a recorder places it; At is the wall clock with Go's monotonic reading.
type Sample struct {
	Source string        `json:"source"`
	T      time.Duration `json:"t_ns"`
	At     time.Time     `json:"-"`
	Points []Point       `json:"points,omitempty"`
	// Err says why this read gave nothing (unreadable output, a device gone): the sampler
	// goes on, and the sample is kept so the gap is on record.
	Err string `json:"error,omitempty"`
}

// Status is what discovery found for one source: available or not, and why.
type Status struct {
	Source    string   `json:"source"`
	Available bool     `json:"available"`
	Reason    string   `json:"reason,omitempty"` // why not, or a note (host memory for a unified-memory GPU)
	Devices   []string `json:"devices,omitempty"`
	// Energy is how the source knows energy: "counter" (a hardware energy counter), "power"
	// (power readings only: energy is integrated), or "" (neither).
	Energy string `json:"energy,omitempty"`
}

// Source is one sampler: a sysfs tree, a command, NVML. Read must return within its own bound
// (commands are bounded by live's runner; sysfs reads are file reads).
type Source interface {
	Name() string
	Read(ctx context.Context) ([]Point, error)
	Close() error
}
