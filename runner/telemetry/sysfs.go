package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The sysfs and /proc readers. Each reads under a root path ("/" on a real machine; tests build
// fake trees in a temporary folder), so nothing here needs the hardware.

// maxSysfsFile bounds one sysfs read: the files read here are one line or a short table.
const maxSysfsFile = 64 << 10

func readFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, maxSysfsFile)
	n, err := f.Read(b)
	if n == 0 && err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b[:n])), nil
}

func readUint(p string) (uint64, error) {
	s, err := readFile(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not a counter: %q", p, clip(s))
	}
	return v, nil
}

func readFloat(p string) (float64, error) {
	s, err := readFile(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not a number: %q", p, clip(s))
	}
	return v, nil
}

// clip keeps an unreadable value short enough to quote.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return m
}

// notAvailable words why a tree has nothing: absent, or present but unreadable.
func notAvailable(what, path string, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: %s is absent (no such sensors on this machine)", what, path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s: %s is not readable by this user (root only on this kernel)", what, path)
	case err != nil:
		return fmt.Sprintf("%s: %s: %v", what, path, err)
	}
	return what + ": nothing found under " + path
}

// raplZone is one powercap zone: package-0, package-0/core, dram-0, psys.
type raplZone struct {
	dir     string
	device  string
	counter Counter
}

// RAPL reads the Intel/AMD RAPL energy counters through powercap
// (/sys/class/powercap/intel-rapl:*/energy_uj, µJ), unwrapped with max_energy_range_uj.
type RAPL struct{ zones []*raplZone }

// OpenRAPL finds the powercap zones under root and reads each once; a zone whose counter cannot
// be read makes the source unavailable with the reason (energy_uj is root-only on kernels since
// 2020).
func OpenRAPL(root string) (*RAPL, Status) {
	st := Status{Source: "rapl", Energy: "counter"}
	base := filepath.Join(root, "sys/class/powercap")
	dirs := glob(filepath.Join(base, "intel-rapl:*"))
	if len(dirs) == 0 {
		_, err := os.Stat(base)
		st.Reason = notAvailable("rapl", base, err)
		return nil, st
	}
	r := &RAPL{}
	names := map[string]string{}
	for _, d := range dirs {
		names[filepath.Base(d)], _ = readFile(filepath.Join(d, "name"))
	}
	for _, d := range dirs {
		id := filepath.Base(d)
		dev := names[id]
		if parent, _, ok := cutLast(id, ":"); ok && strings.Count(id, ":") == 2 {
			dev = subZone(names[parent], dev) // intel-rapl:0:0 is a sub-zone of intel-rapl:0
		}
		if dev == "" {
			dev = id
		}
		rng, err := readUint(filepath.Join(d, "max_energy_range_uj"))
		if err != nil {
			rng = 0
		}
		z := &raplZone{dir: d, device: dev, counter: Counter{Scale: 1e-6, Range: rng}}
		if _, err := readUint(filepath.Join(d, "energy_uj")); err != nil {
			st.Reason = notAvailable("rapl", filepath.Join(d, "energy_uj"), err)
			return nil, st
		}
		r.zones = append(r.zones, z)
		st.Devices = append(st.Devices, dev)
	}
	st.Available = true
	return r, st
}

// subZone names a sub-zone under its parent: package-0/core, package-0/uncore (inside the
// package's own counter). A package's dram sub-zone is named dram-N instead: powercap lists it
// under the package, but it is RAPL's separate DRAM domain (MSR_DRAM_ENERGY_STATUS), which the
// package's counter does not include, so a leg's total adds it beside the package. (Samples
// recorded before this rule name it package-N/dram, and their figures leave it out, as the
// reports made from them did.)
func subZone(parent, name string) string {
	if n, ok := strings.CutPrefix(parent, "package-"); ok && name == "dram" {
		return "dram-" + n
	}
	return parent + "/" + name
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func (r *RAPL) Name() string { return "rapl" }
func (r *RAPL) Close() error { return nil }

// Read returns each zone's energy in Joules since the first read.
func (r *RAPL) Read(context.Context) ([]Point, error) {
	var pts []Point
	for _, z := range r.zones {
		raw, err := readUint(filepath.Join(z.dir, "energy_uj"))
		if err != nil {
			return pts, fmt.Errorf("rapl %s: %w", z.device, err)
		}
		j, err := z.counter.Add(raw)
		if err != nil {
			return pts, err
		}
		pts = append(pts, Point{Device: z.device, Metric: EnergyJ, Value: j})
	}
	return pts, nil
}

// Hwmon reads every hwmon temperature (temp*_input, millidegrees) under
// root/sys/class/hwmon, named chip/label (or chip/tempN without a label).
type Hwmon struct{ root string }

// OpenHwmon finds at least one temperature sensor, or says why there is none.
func OpenHwmon(root string) (*Hwmon, Status) {
	st := Status{Source: "hwmon"}
	base := filepath.Join(root, "sys/class/hwmon")
	h := &Hwmon{root: root}
	pts, _ := h.Read(context.Background())
	if len(pts) == 0 {
		_, err := os.Stat(base)
		st.Reason = notAvailable("hwmon", base, err)
		if err == nil {
			st.Reason = "hwmon: no readable temp*_input under " + base
		}
		return nil, st
	}
	for _, p := range pts {
		st.Devices = append(st.Devices, p.Device)
	}
	st.Available = true
	return h, st
}

func (h *Hwmon) Name() string { return "hwmon" }
func (h *Hwmon) Close() error { return nil }

// Read returns one temp_c point per sensor that reads a number; a chip that vanished is
// simply absent from the next sample.
func (h *Hwmon) Read(context.Context) ([]Point, error) {
	var pts []Point
	for _, dir := range glob(filepath.Join(h.root, "sys/class/hwmon/hwmon*")) {
		chip, _ := readFile(filepath.Join(dir, "name"))
		for _, in := range glob(filepath.Join(dir, "temp*_input")) {
			v, err := readFloat(in)
			if err != nil {
				continue
			}
			sensor := strings.TrimSuffix(filepath.Base(in), "_input")
			label, _ := readFile(filepath.Join(dir, sensor+"_label"))
			if label == "" {
				label = sensor
			}
			pts = append(pts, Point{Device: chip + "/" + label, Metric: TempC, Value: v / 1000})
		}
	}
	return pts, nil
}

// CPUFreq reads each core's current and maximum frequency (cpufreq, kHz).
type CPUFreq struct{ cpus []string }

// OpenCPUFreq finds the cores with cpufreq.
func OpenCPUFreq(root string) (*CPUFreq, Status) {
	st := Status{Source: "cpufreq"}
	base := filepath.Join(root, "sys/devices/system/cpu")
	c := &CPUFreq{}
	for _, d := range glob(filepath.Join(base, "cpu[0-9]*")) {
		if _, err := readUint(filepath.Join(d, "cpufreq/scaling_cur_freq")); err == nil {
			c.cpus = append(c.cpus, d)
			st.Devices = append(st.Devices, filepath.Base(d))
		}
	}
	if len(c.cpus) == 0 {
		_, err := os.Stat(filepath.Join(base, "cpu0/cpufreq"))
		st.Reason = notAvailable("cpufreq", filepath.Join(base, "cpu0/cpufreq"), err)
		return nil, st
	}
	st.Available = true
	return c, st
}

func (c *CPUFreq) Name() string { return "cpufreq" }
func (c *CPUFreq) Close() error { return nil }

func (c *CPUFreq) Read(context.Context) ([]Point, error) {
	var pts []Point
	for _, d := range c.cpus {
		cpu := filepath.Base(d)
		cur, err := readUint(filepath.Join(d, "cpufreq/scaling_cur_freq"))
		if err != nil {
			continue // a core taken offline
		}
		pts = append(pts, Point{Device: cpu, Metric: FreqMHz, Value: float64(cur) / 1000})
		if mx, err := readUint(filepath.Join(d, "cpufreq/cpuinfo_max_freq")); err == nil {
			pts = append(pts, Point{Device: cpu, Metric: FreqMaxMHz, Value: float64(mx) / 1000})
		}
	}
	if len(pts) == 0 {
		return nil, errors.New("cpufreq: no core could be read")
	}
	return pts, nil
}
