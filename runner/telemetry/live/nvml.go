package live

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"sparkbench/runner/telemetry"
)

// goNVML is telemetry.NVML over go-nvml, which opens libnvidia-ml.so.1 with dlopen at Init:
// a machine without the driver gets ERROR_LIBRARY_NOT_FOUND, never a link error.
type goNVML struct{ lib nvml.Interface }

// NVML returns libnvidia-ml through go-nvml (path "" takes the library's default name).
func NVML(path string) telemetry.NVML {
	var opts []nvml.LibraryOption
	if path != "" {
		opts = append(opts, nvml.WithLibraryPath(path))
	}
	return &goNVML{lib: nvml.New(opts...)}
}

// nvmlErr maps a return code onto the words the sampler knows.
func nvmlErr(r nvml.Return) error {
	switch r {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%s: %w", r.Error(), telemetry.ErrNotSupported)
	case nvml.ERROR_GPU_IS_LOST:
		return fmt.Errorf("%s: %w", r.Error(), telemetry.ErrGone)
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)")
	}
	return fmt.Errorf("%s", r.Error())
}

func (g *goNVML) Init() error     { return nvmlErr(g.lib.Init()) }
func (g *goNVML) Shutdown() error { return nvmlErr(g.lib.Shutdown()) }

func (g *goNVML) DeviceCount() (int, error) {
	n, r := g.lib.DeviceGetCount()
	return n, nvmlErr(r)
}

func (g *goNVML) Device(i int) (telemetry.NVMLDevice, error) {
	d, r := g.lib.DeviceGetHandleByIndex(i)
	if err := nvmlErr(r); err != nil {
		return nil, err
	}
	return nvmlDevice{d}, nil
}

type nvmlDevice struct{ d nvml.Device }

func (d nvmlDevice) Name() (string, error) {
	s, r := d.d.GetName()
	return s, nvmlErr(r)
}

func (d nvmlDevice) PowerUsage() (uint32, error) {
	v, r := d.d.GetPowerUsage()
	return v, nvmlErr(r)
}

func (d nvmlDevice) TotalEnergyConsumption() (uint64, error) {
	v, r := d.d.GetTotalEnergyConsumption()
	return v, nvmlErr(r)
}

func (d nvmlDevice) ClockSM() (uint32, error) {
	v, r := d.d.GetClockInfo(nvml.CLOCK_SM)
	return v, nvmlErr(r)
}

func (d nvmlDevice) ClockMem() (uint32, error) {
	v, r := d.d.GetClockInfo(nvml.CLOCK_MEM)
	return v, nvmlErr(r)
}

func (d nvmlDevice) MaxClockSM() (uint32, error) {
	v, r := d.d.GetMaxClockInfo(nvml.CLOCK_SM)
	return v, nvmlErr(r)
}

func (d nvmlDevice) Temperature() (uint32, error) {
	v, r := d.d.GetTemperature(nvml.TEMPERATURE_GPU)
	return v, nvmlErr(r)
}

func (d nvmlDevice) MemoryInfo() (uint64, uint64, error) {
	m, r := d.d.GetMemoryInfo()
	return m.Used, m.Total, nvmlErr(r)
}

func (d nvmlDevice) ClockEventReasons() (uint64, error) {
	v, r := d.d.GetCurrentClocksEventReasons()
	return v, nvmlErr(r)
}

func (d nvmlDevice) Utilization() (uint32, error) {
	u, r := d.d.GetUtilizationRates()
	return u.Gpu, nvmlErr(r)
}
