// Package telemetrytest holds the fakes the telemetry tests share: a fake NVML whose energy
// counter is the exact integral of a synthetic power profile, fake sysfs trees whose counters
// advance and wrap, and a scripted source.
package telemetrytest

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"sparkbench/runner/telemetry"
)

// Clock is a manual clock: tests move it, fakes read it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Load is a synthetic power profile in watts over seconds since the clock's start.
type Load func(sec float64) float64

// SyntheticLoad idles at 60 W, ramps to 300 W over 2 s, holds with a 5 Hz ripple of ±20 W,
// and falls back to idle after 8 s: the shape of a bench leg.
func SyntheticLoad(sec float64) float64 {
	switch {
	case sec < 1:
		return 60
	case sec < 3:
		return 60 + 240*(sec-1)/2
	case sec < 8:
		return 300 + 20*math.Sin(2*math.Pi*5*(sec-3))
	}
	return 60
}

// GPU is one fake NVML device.
type GPU struct {
	Label           string
	Load            Load
	SMClock         func(sec float64) uint32 // nil: 2520 MHz
	Reasons         func(sec float64) uint64 // nil: none
	MemNotSupported bool                     // unified memory (DGX Spark)
	NoEnergyCounter bool                     // before Volta
	EnergyOffsetMJ  uint64                   // the counter's value at the clock's start

	mu   sync.Mutex
	lost bool
}

// Lose makes every later call fail as NVML does for a GPU that fell off the bus.
func (g *GPU) Lose() {
	g.mu.Lock()
	g.lost = true
	g.mu.Unlock()
}

// NVML is a fake libnvidia-ml.
type NVML struct {
	Clock   *Clock
	GPUs    []*GPU
	InitErr error
	start   time.Time
	started bool
}

func (n *NVML) Init() error {
	if n.InitErr != nil {
		return n.InitErr
	}
	if !n.started {
		n.start, n.started = n.Clock.Now(), true
	}
	return nil
}

func (n *NVML) Shutdown() error           { return nil }
func (n *NVML) DeviceCount() (int, error) { return len(n.GPUs), nil }

func (n *NVML) Device(i int) (telemetry.NVMLDevice, error) {
	if i < 0 || i >= len(n.GPUs) {
		return nil, fmt.Errorf("invalid argument")
	}
	return &device{n: n, g: n.GPUs[i]}, nil
}

type device struct {
	n *NVML
	g *GPU
}

func (d *device) sec() float64 { return d.n.Clock.Now().Sub(d.n.start).Seconds() }

func (d *device) check() error {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	if d.g.lost {
		return fmt.Errorf("GPU is lost: %w", telemetry.ErrGone)
	}
	return nil
}

func (d *device) Name() (string, error) { return d.g.Label, d.check() }

// PowerUsage is the load at this instant, in mW.
func (d *device) PowerUsage() (uint32, error) {
	return uint32(math.Round(d.g.Load(d.sec()) * 1000)), d.check()
}

// TotalEnergyConsumption is the exact integral of the load since the start (Simpson's rule on
// 1 ms steps), in mJ, plus the offset.
func (d *device) TotalEnergyConsumption() (uint64, error) {
	if d.g.NoEnergyCounter {
		return 0, fmt.Errorf("Not Supported: %w", telemetry.ErrNotSupported)
	}
	return d.g.EnergyOffsetMJ + uint64(math.Round(Integral(d.g.Load, 0, d.sec())*1000)), d.check()
}

// Integral integrates f over [a, b] by Simpson's rule on steps of at most 1 ms.
func Integral(f Load, a, b float64) float64 {
	if b <= a {
		return 0
	}
	n := int(math.Ceil((b-a)/0.001)) * 2
	h := (b - a) / float64(n)
	s := f(a) + f(b)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * f(a+float64(i)*h)
	}
	return s * h / 3
}

func (d *device) ClockSM() (uint32, error) {
	if d.g.SMClock != nil {
		return d.g.SMClock(d.sec()), d.check()
	}
	return 2520, d.check()
}

func (d *device) ClockMem() (uint32, error)   { return 10501, d.check() }
func (d *device) MaxClockSM() (uint32, error) { return 3105, d.check() }

func (d *device) Temperature() (uint32, error) {
	return uint32(40 + d.g.Load(d.sec())/10), d.check()
}

func (d *device) MemoryInfo() (uint64, uint64, error) {
	if d.g.MemNotSupported {
		return 0, 0, fmt.Errorf("Not Supported: %w", telemetry.ErrNotSupported)
	}
	return 18 << 30, 24 << 30, d.check()
}

func (d *device) ClockEventReasons() (uint64, error) {
	if d.g.Reasons != nil {
		return d.g.Reasons(d.sec()), d.check()
	}
	return 0, d.check()
}

func (d *device) Utilization() (uint32, error) { return 97, d.check() }

// Tree is a fake sysfs and /proc root in a temporary folder.
type Tree struct{ Root string }

// Write writes a file under the root (folders made as needed).
func (t Tree) Write(rel, content string) error {
	p := filepath.Join(t.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o644)
}

// WriteAll writes files (path → content), stopping at the first error.
func (t Tree) WriteAll(files map[string]string) error {
	for rel, c := range files {
		if err := t.Write(rel, c); err != nil {
			return err
		}
	}
	return nil
}

// Script is a source that replays scripted reads, one per Read, then repeats the last.
type Script struct {
	SourceName string
	Reads      []ScriptRead
	mu         sync.Mutex
	n          int
}

// ScriptRead is one scripted answer.
type ScriptRead struct {
	Points []telemetry.Point
	Err    error
}

func (s *Script) Name() string { return s.SourceName }
func (s *Script) Close() error { return nil }

func (s *Script) Read(context.Context) ([]telemetry.Point, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(s.n, len(s.Reads)-1)
	s.n++
	if i < 0 {
		return nil, nil
	}
	return s.Reads[i].Points, s.Reads[i].Err
}

// ReadCount counts the reads so far.
func (s *Script) ReadCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// FullTree writes a workstation's worth of sensors under root, for cost measurements: two
// RAPL packages with core and uncore zones and DRAM, an amdgpu card, six hwmon chips with four
// temperatures each, sixteen cores with cpufreq, and the host's pressure, load and memory.
func FullTree(root string) error {
	t := Tree{Root: root}
	files := map[string]string{
		"proc/pressure/cpu":    "some avg10=1.81 avg60=8.16 avg300=44.70 total=7110580531\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/pressure/memory": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/pressure/io":     "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/loadavg":         "1.60 4.01 4.34 2/115 22087\n",
		"proc/meminfo":         "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n",
	}
	for p := 0; p < 2; p++ {
		z := fmt.Sprintf("sys/class/powercap/intel-rapl:%d/", p)
		files[z+"name"], files[z+"energy_uj"], files[z+"max_energy_range_uj"] = fmt.Sprintf("package-%d", p), "123456789", "262143328850"
		for i, name := range []string{"core", "uncore", "dram"} {
			s := fmt.Sprintf("sys/class/powercap/intel-rapl:%d:%d/", p, i)
			files[s+"name"], files[s+"energy_uj"], files[s+"max_energy_range_uj"] = name, "23456789", "262143328850"
		}
	}
	for c := 0; c < 6; c++ {
		d := fmt.Sprintf("sys/class/hwmon/hwmon%d/", c)
		files[d+"name"] = []string{"k10temp", "nvme", "amdgpu", "acpitz", "it8688", "spd5118"}[c]
		for s := 1; s <= 4; s++ {
			files[fmt.Sprintf("%stemp%d_input", d, s)] = fmt.Sprint(40000 + 1000*s)
		}
	}
	a := "sys/class/hwmon/hwmon2/"
	files[a+"power1_average"], files[a+"freq1_input"], files[a+"device/gpu_busy_percent"] = "212000000", "2304000000", "99"
	files[a+"device/pp_dpm_sclk"] = "0: 500Mhz\n1: 1800Mhz\n2: 2304Mhz *\n"
	files[a+"device/mem_info_vram_used"], files[a+"device/mem_info_vram_total"] = "9126805504", "17163091968"
	for c := 0; c < 16; c++ {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/", c)
		files[d+"scaling_cur_freq"], files[d+"cpuinfo_max_freq"] = "3601000", "5200000"
	}
	return t.WriteAll(files)
}
