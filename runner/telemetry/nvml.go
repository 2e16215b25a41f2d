package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNotSupported is what an NVML call returns (wrapped) for a reading the device does not
// have: memory on unified-memory boxes, the energy counter before Volta.
var ErrNotSupported = errors.New("not supported")

// NVML is the part of libnvidia-ml the sampler uses, one call per reading, so tests give a fake
// and live gives go-nvml. An error wrapping ErrGone from a device call means the GPU is lost.
type NVML interface {
	Init() error
	Shutdown() error
	DeviceCount() (int, error)
	Device(i int) (NVMLDevice, error)
}

// NVMLDevice is one GPU's readings, in NVML's units.
type NVMLDevice interface {
	Name() (string, error)
	PowerUsage() (milliwatts uint32, err error)
	// TotalEnergyConsumption is nvmlDeviceGetTotalEnergyConsumption: mJ since the driver
	// loaded. Preferred over integrating power: NVML's power reading is a one-second average on
	// Ampere and newer, which misstates short legs.
	TotalEnergyConsumption() (millijoules uint64, err error)
	ClockSM() (mhz uint32, err error)
	ClockMem() (mhz uint32, err error)
	MaxClockSM() (mhz uint32, err error)
	Temperature() (celsius uint32, err error)
	MemoryInfo() (used, total uint64, err error)
	ClockEventReasons() (mask uint64, err error)
	Utilization() (gpuPercent uint32, err error)
}

type nvmlGPU struct {
	dev     NVMLDevice
	name    string
	counter *Counter
	lost    bool
}

// NVMLSource samples every GPU NVML lists.
type NVMLSource struct {
	lib  NVML
	gpus []*nvmlGPU
}

// OpenNVML initialises the library and lists its GPUs: each GPU's energy counter and memory are
// tried once, and the status says which it lacks (memory "Not Supported": host memory, from the
// host source, stands in for it).
func OpenNVML(lib NVML) (*NVMLSource, Status) {
	st := Status{Source: "nvml"}
	if err := lib.Init(); err != nil {
		st.Reason = "nvml: " + err.Error()
		return nil, st
	}
	n, err := lib.DeviceCount()
	if err != nil || n == 0 {
		_ = lib.Shutdown()
		st.Reason = "nvml: no GPU listed"
		if err != nil {
			st.Reason = "nvml: device count: " + err.Error()
		}
		return nil, st
	}
	s := &NVMLSource{lib: lib}
	var notes []string
	st.Energy = "counter"
	for i := 0; i < n; i++ {
		d, err := lib.Device(i)
		if err != nil {
			notes = append(notes, fmt.Sprintf("GPU%d: %v", i, err))
			continue
		}
		g := &nvmlGPU{dev: d, name: "GPU" + strconv.Itoa(i)}
		if _, err := d.TotalEnergyConsumption(); err == nil {
			g.counter = &Counter{Scale: 1e-3}
		} else {
			st.Energy = "power"
			notes = append(notes, g.name+": no energy counter ("+err.Error()+"): energy is integrated from power")
		}
		if _, _, err := d.MemoryInfo(); errors.Is(err, ErrNotSupported) {
			notes = append(notes, g.name+": memory Not Supported (unified memory): host memory is recorded instead")
		}
		name, _ := d.Name()
		st.Devices = append(st.Devices, strings.TrimSpace(g.name+" "+name))
		s.gpus = append(s.gpus, g)
	}
	st.Reason = strings.Join(notes, "; ")
	if len(s.gpus) == 0 {
		_ = lib.Shutdown()
		return nil, st
	}
	st.Available = true
	return s, st
}

func (s *NVMLSource) Name() string { return "nvml" }
func (s *NVMLSource) Close() error { return s.lib.Shutdown() }

// Read returns every live GPU's readings. A GPU that is lost is dropped (said once in the
// error); when none is left the source is gone.
func (s *NVMLSource) Read(context.Context) ([]Point, error) {
	var pts []Point
	var errs []string
	live := 0
	for _, g := range s.gpus {
		if g.lost {
			continue
		}
		p, err := g.read()
		if errors.Is(err, ErrGone) {
			g.lost = true
			errs = append(errs, g.name+" lost: "+err.Error())
			continue
		}
		live++
		pts = append(pts, p...)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	switch {
	case live == 0:
		return pts, fmt.Errorf("nvml: %s: %w", strings.Join(errs, "; "), ErrGone)
	case len(errs) > 0:
		return pts, fmt.Errorf("nvml: %s", strings.Join(errs, "; "))
	}
	return pts, nil
}

func (g *nvmlGPU) read() ([]Point, error) {
	var pts []Point
	add := func(m string, v float64) { pts = append(pts, Point{Device: g.name, Metric: m, Value: v}) }
	var lost error
	keep := func(err error) bool {
		if errors.Is(err, ErrGone) && lost == nil {
			lost = err
		}
		return err == nil
	}
	if mw, err := g.dev.PowerUsage(); keep(err) {
		add(PowerW, float64(mw)/1000)
	}
	if g.counter != nil {
		if mj, err := g.dev.TotalEnergyConsumption(); keep(err) {
			j, _ := g.counter.Add(mj)
			add(EnergyJ, j)
		}
	}
	if v, err := g.dev.ClockSM(); keep(err) {
		add(ClockSMMHz, float64(v))
	}
	if v, err := g.dev.ClockMem(); keep(err) {
		add(ClockMemMHz, float64(v))
	}
	if v, err := g.dev.MaxClockSM(); keep(err) {
		add(ClockMaxMHz, float64(v))
	}
	if v, err := g.dev.Temperature(); keep(err) {
		add(TempC, float64(v))
	}
	if used, total, err := g.dev.MemoryInfo(); keep(err) {
		add(MemUsedBytes, float64(used))
		add(MemTotalBytes, float64(total))
	}
	if m, err := g.dev.ClockEventReasons(); keep(err) {
		add(Throttle, float64(m))
		pts = append(pts, thermalPoint(g.name, m))
	}
	if v, err := g.dev.Utilization(); keep(err) {
		add(UtilPct, float64(v))
	}
	if lost != nil {
		return nil, lost
	}
	return pts, nil
}
