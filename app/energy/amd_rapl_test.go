package energy_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

// An AMD GPU that amd-smi reports THROTTLED in one sample of a leg fires the thermal gate;
// UNTHROTTLED all along does not; a leg where amd-smi's throttle section says only the power
// limit (PPT) is active counts power-capped samples and fires nothing.
func TestAMDSMIThrottleFiresTheThermalGate(t *testing.T) {
	read := func(name string) []telemetry.Point {
		b, err := os.ReadFile("../../runner/telemetry/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		pts, err := telemetry.ParseAMDSMI(b)
		if err != nil {
			t.Fatal(err)
		}
		return pts
	}
	calm, hot, ppt := read("amd-smi-metric.json"), read("amd-smi-metric-throttled.json"), read("amd-smi-metric-violation.json")
	leg := func(mid []telemetry.Point) []telemetry.Sample {
		var s []telemetry.Sample
		for i, pts := range [][]telemetry.Point{calm, mid, calm} {
			s = append(s, telemetry.Sample{Source: "amd-smi", T: time.Duration(i) * 500 * time.Millisecond, Points: pts})
		}
		return s
	}
	w := energy.Window{To: time.Second}
	b := energy.Gates{}.Check(leg(hot), w)
	if len(b) != 1 || b[0].Code != energy.CodeThrottled || b[0].Device != "amd-smi GPU0" || b[0].Observed != 1 {
		t.Fatalf("THROTTLED in one sample: %+v", b)
	}
	if b := (energy.Gates{}).Check(leg(calm), w); len(b) != 0 {
		t.Fatalf("UNTHROTTLED: %+v", b)
	}
	var gpu0 []telemetry.Point
	for _, p := range ppt {
		if strings.HasPrefix(p.Device, "GPU0") {
			gpu0 = append(gpu0, p)
		}
	}
	if b := (energy.Gates{}).Check(leg(gpu0), w); len(b) != 0 {
		t.Fatalf("the power limit alone is not heat: %+v", b)
	}
	f, _ := energy.Leg(leg(gpu0), w, nil)
	if len(f.Devices) == 0 || f.Devices[0].Device != "GPU0" || f.Devices[0].PowerCapped != 1 || f.Devices[0].Throttled != 0 {
		t.Fatalf("power-capped samples: %+v", f.Devices)
	}
}

// RAPL's DRAM domain is energy the inference used, separate from the package's (its own MSR;
// powercap merely lists it under the package): a leg's total adds package and DRAM, never the
// core sub-zone inside the package or psys, which holds everything. Samples recorded before the
// DRAM zone was named dram-N (package-0/dram) keep the figures they were reported with.
func TestRAPLTotalAddsDRAMBesidePackage(t *testing.T) {
	tr := telemetrytest.Tree{Root: t.TempDir()}
	const base = "sys/class/powercap/"
	zones := map[string]string{"intel-rapl:0": "package-0", "intel-rapl:0:0": "core", "intel-rapl:0:1": "dram", "intel-rapl:1": "psys"}
	watts := map[string]int{"intel-rapl:0": 60, "intel-rapl:0:0": 40, "intel-rapl:0:1": 9, "intel-rapl:1": 90}
	for z, name := range zones {
		if err := tr.WriteAll(map[string]string{base + z + "/name": name, base + z + "/energy_uj": "0", base + z + "/max_energy_range_uj": "262143328850"}); err != nil {
			t.Fatal(err)
		}
	}
	r, st := telemetry.OpenRAPL(tr.Root)
	if !st.Available || strings.Join(st.Devices, ",") != "package-0,package-0/core,dram-0,psys" {
		t.Fatalf("%+v", st)
	}
	var samples []telemetry.Sample
	for i := 0; i <= 10; i++ { // 1 s at 100 ms
		for z, w := range watts {
			if err := tr.Write(base+z+"/energy_uj", itoa(i*w*100000)); err != nil {
				t.Fatal(err)
			}
		}
		pts, err := r.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, telemetry.Sample{Source: "rapl", T: time.Duration(i) * 100 * time.Millisecond, Points: pts})
	}
	f, ok := energy.Leg(samples, energy.Window{To: time.Second}, nil)
	if !ok || math.Abs(f.EnergyJ-69) > 1e-9 {
		t.Fatalf("package 60 W + DRAM 9 W over 1 s: %v J (%+v)", f.EnergyJ, f)
	}
	old := append([]telemetry.Sample(nil), samples...)
	for i := range old {
		old[i].Points = append([]telemetry.Point(nil), old[i].Points...)
		for j := range old[i].Points {
			if old[i].Points[j].Device == "dram-0" {
				old[i].Points[j].Device = "package-0/dram"
			}
		}
	}
	if f, _ := energy.Leg(old, energy.Window{To: time.Second}, nil); math.Abs(f.EnergyJ-60) > 1e-9 {
		t.Fatalf("samples recorded as package-0/dram keep their old total: %v J", f.EnergyJ)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
