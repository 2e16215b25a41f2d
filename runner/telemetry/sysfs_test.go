package telemetry_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

func tree(t *testing.T, files map[string]string) telemetrytest.Tree {
	t.Helper()
	tr := telemetrytest.Tree{Root: t.TempDir()}
	if err := tr.WriteAll(files); err != nil {
		t.Fatal(err)
	}
	return tr
}

func value(t *testing.T, pts []telemetry.Point, dev, metric string) float64 {
	t.Helper()
	for _, p := range pts {
		if p.Device == dev && p.Metric == metric {
			return p.Value
		}
	}
	t.Fatalf("no %s %s in %v", dev, metric, pts)
	return 0
}

func read(t *testing.T, s telemetry.Source) []telemetry.Point {
	t.Helper()
	pts, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

const pkg = "sys/class/powercap/intel-rapl:0/"
const core = "sys/class/powercap/intel-rapl:0:0/"

// A package zone and its core sub-zone advance; the package counter wraps at
// max_energy_range_uj between the second and third reads.
func TestRAPLCountersAdvanceAndWrap(t *testing.T) {
	const rng = "65532610987"
	tr := tree(t, map[string]string{
		pkg + "name": "package-0\n", pkg + "max_energy_range_uj": rng + "\n", pkg + "energy_uj": "65530610987\n",
		core + "name": "core\n", core + "max_energy_range_uj": rng + "\n", core + "energy_uj": "1000000\n",
	})
	r, st := telemetry.OpenRAPL(tr.Root)
	if !st.Available || st.Energy != "counter" || strings.Join(st.Devices, ",") != "package-0,package-0/core" {
		t.Fatalf("status %+v", st)
	}
	read(t, r) // the first reading is the zero
	steps := []struct{ pkgRaw, coreRaw string }{{"65532110987", "2500000"}, {"3000000", "4000000"}}
	wantPkg, wantCore := []float64{1.5, 1.5 + 0.5 + 3}, []float64{1.5, 3}
	for i, s := range steps {
		if err := tr.WriteAll(map[string]string{pkg + "energy_uj": s.pkgRaw, core + "energy_uj": s.coreRaw}); err != nil {
			t.Fatal(err)
		}
		pts := read(t, r)
		if got := value(t, pts, "package-0", telemetry.EnergyJ); math.Abs(got-wantPkg[i]) > 1e-9 {
			t.Fatalf("read %d: package %v J, want %v", i, got, wantPkg[i])
		}
		if got := value(t, pts, "package-0/core", telemetry.EnergyJ); math.Abs(got-wantCore[i]) > 1e-9 {
			t.Fatalf("read %d: core %v J, want %v", i, got, wantCore[i])
		}
	}
}

func TestRAPLNotAvailableSaysWhy(t *testing.T) {
	empty := t.TempDir()
	if _, st := telemetry.OpenRAPL(empty); st.Available || !strings.Contains(st.Reason, "is absent") {
		t.Fatalf("no powercap: %+v", st)
	}
	tr := tree(t, map[string]string{pkg + "name": "package-0", pkg + "energy_uj": "garbage\x00"})
	_, st := telemetry.OpenRAPL(tr.Root)
	if st.Available || !strings.Contains(st.Reason, "not a counter") {
		t.Fatalf("garbage counter: %+v", st)
	}
}

// The counter turning to garbage mid-run is an unreadable sample, not a crash; a zone that
// vanishes is an error naming it.
func TestRAPLGarbageAndVanishingZone(t *testing.T) {
	tr := tree(t, map[string]string{pkg + "name": "package-0", pkg + "energy_uj": "100"})
	r, _ := telemetry.OpenRAPL(tr.Root)
	read(t, r)
	if err := tr.Write(pkg+"energy_uj", "ERR"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "not a counter") {
		t.Fatalf("garbage read: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(tr.Root, pkg)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "package-0") {
		t.Fatalf("vanished zone: %v", err)
	}
}

const amd = "sys/class/hwmon/hwmon3/"

func amdgpuTree(t *testing.T) telemetrytest.Tree {
	return tree(t, map[string]string{
		"sys/class/hwmon/hwmon0/name": "k10temp", "sys/class/hwmon/hwmon0/temp1_input": "61250",
		"sys/class/hwmon/hwmon0/temp1_label": "Tctl",
		amd + "name":                         "amdgpu", amd + "power1_average": "212000000", amd + "energy1_input": "5000000",
		amd + "temp1_input": "58000", amd + "temp1_label": "edge", amd + "freq2_input": "1000000000",
		amd + "device/pp_dpm_sclk": "0: 500Mhz\n1: 1800Mhz\n2: 2304Mhz *\n", amd + "device/gpu_busy_percent": "99",
		amd + "device/mem_info_vram_used": "9126805504", amd + "device/mem_info_vram_total": "17163091968",
	})
}

func TestAMDGPUHwmonReadsAndDisappears(t *testing.T) {
	tr := amdgpuTree(t)
	a, st := telemetry.OpenAMDGPU(tr.Root)
	if !st.Available || st.Energy != "counter" || strings.Join(st.Devices, ",") != "amdgpu0" {
		t.Fatalf("status %+v", st)
	}
	pts := read(t, a)
	for _, c := range []struct {
		metric string
		want   float64
	}{{telemetry.PowerW, 212}, {telemetry.EnergyJ, 0}, {telemetry.ClockSMMHz, 2304}, {telemetry.ClockMaxMHz, 2304},
		{telemetry.ClockMemMHz, 1000}, {telemetry.UtilPct, 99}, {telemetry.MemUsedBytes, 9126805504}} {
		if got := value(t, pts, "amdgpu0", c.metric); got != c.want {
			t.Errorf("%s = %v, want %v", c.metric, got, c.want)
		}
	}
	if err := tr.Write(amd+"energy1_input", "7500000"); err != nil {
		t.Fatal(err)
	}
	if got := value(t, read(t, a), "amdgpu0", telemetry.EnergyJ); got != 2.5 {
		t.Fatalf("energy %v J, want 2.5", got)
	}
	if err := os.RemoveAll(filepath.Join(tr.Root, amd)); err != nil { // the card falls off the bus
		t.Fatal(err)
	}
	if pts, err := a.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "amdgpu0: gone") || len(pts) != 0 {
		t.Fatalf("after the card went: %v %v", pts, err)
	}
	h, st := telemetry.OpenHwmon(tr.Root) // the CPU's sensor is still there
	if !st.Available || value(t, read(t, h), "k10temp/Tctl", telemetry.TempC) != 61.25 {
		t.Fatalf("hwmon after the card went: %+v", st)
	}
}

func TestParseDPM(t *testing.T) {
	cur, mx, ok := telemetry.ParseDPM("0: 500Mhz *\n1: 2100Mhz\n")
	if !ok || cur != 500 || mx != 2100 {
		t.Fatalf("%v %v %v", cur, mx, ok)
	}
	if _, _, ok := telemetry.ParseDPM("garbage\n"); ok {
		t.Fatal("garbage read as DPM levels")
	}
}

func TestCPUFreqAndHost(t *testing.T) {
	tr := tree(t, map[string]string{
		"sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": "3601000",
		"sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": "5200000",
		"sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq": "2200000",
		"proc/pressure/cpu":    "some avg10=12.50 avg60=3.00 avg300=1.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/pressure/memory": "some avg10=0.25 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.10 avg60=0.00 avg300=0.00 total=1\n",
		"proc/loadavg":         "1.60 4.01 4.34 2/115 22087\n",
		"proc/meminfo":         "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   20000000 kB\n",
	})
	f, st := telemetry.OpenCPUFreq(tr.Root)
	if !st.Available || len(st.Devices) != 2 {
		t.Fatalf("cpufreq %+v", st)
	}
	pts := read(t, f)
	if value(t, pts, "cpu0", telemetry.FreqMHz) != 3601 || value(t, pts, "cpu0", telemetry.FreqMaxMHz) != 5200 ||
		value(t, pts, "cpu1", telemetry.FreqMHz) != 2200 {
		t.Fatalf("cpufreq points %v", pts)
	}
	h, st := telemetry.OpenHost(tr.Root)
	if !st.Available || st.Reason != "" {
		t.Fatalf("host %+v", st)
	}
	pts = read(t, h)
	if value(t, pts, "psi/cpu", telemetry.PressureAvg10) != 12.5 || value(t, pts, "psi/memory", telemetry.FullAvg10) != 0.1 ||
		value(t, pts, "host", telemetry.Load1) != 1.6 || value(t, pts, "host", telemetry.MemUsedBytes) != 4000000*1024 {
		t.Fatalf("host points %v", pts)
	}
	if err := tr.WriteAll(map[string]string{"proc/loadavg": "x y z", "proc/pressure/io": "weird line\n"}); err != nil {
		t.Fatal(err)
	}
	pts, err := h.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "loadavg") || !strings.Contains(err.Error(), "pressure/io") {
		t.Fatalf("garbage host files: %v", err)
	}
	if value(t, pts, "host", telemetry.MemTotalBytes) != 24000000*1024 {
		t.Fatal("a garbage file lost the readable ones")
	}
}

func TestEmptyRootHasNothingAndSaysWhy(t *testing.T) {
	root := t.TempDir()
	_, a := telemetry.OpenAMDGPU(root)
	_, h := telemetry.OpenHwmon(root)
	_, c := telemetry.OpenCPUFreq(root)
	_, o := telemetry.OpenHost(root)
	for _, st := range []telemetry.Status{a, h, c, o} {
		if st.Available || st.Reason == "" {
			t.Errorf("%s on an empty root: %+v", st.Source, st)
		}
	}
}
