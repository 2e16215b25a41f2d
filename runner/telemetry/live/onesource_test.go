package live_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
)

// fakeTool writes a tool that prints out for a first argument in outs (by that argument),
// else outs[""].
func fakeTool(t *testing.T, outs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$1\" in\n"
	// The arms in a fixed order, the catch-all ("") last: a shell case takes the first arm that
	// matches, and a map's order is random.
	args := slices.Sorted(maps.Keys(outs))
	if len(args) > 0 && args[0] == "" {
		args = append(args[1:], "")
	}
	for _, arg := range args {
		out := outs[arg]
		f := filepath.Join(dir, "out-"+strings.TrimLeft(arg, "-")+".json")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		pat := arg
		if pat == "" {
			pat = "*"
		}
		script += "'" + pat + "') cat '" + f + "' ;;\n"
		if arg == "" {
			script = strings.Replace(script, "'*')", "*)", 1)
		}
	}
	script += "esac\n"
	p := filepath.Join(dir, "tool")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	amdMetricCounter = `[{"gpu": 0, "power": {"socket_power": {"value": 289, "unit": "W"}, "throttle_status": "UNTHROTTLED"},
		"energy": {"total_energy_consumption": {"value": 1000.5, "unit": "J"}}}]`
	amdMetricPowerOnly = `[{"gpu": 0, "power": {"socket_power": {"value": 289, "unit": "W"}, "throttle_status": "UNTHROTTLED"}}]`
	amdList            = `[{"gpu": 0, "bdf": "0000:03:00.0", "uuid": "N/A"}]`
	card               = "sys/class/hwmon/hwmon2/"
)

// amdCardTree is one amdgpu card drawing 289 W (power1_average in µW), at PCI address addr
// ("" : sysfs does not say), with an energy counter when counter.
func amdCardTree(t *testing.T, addr string, counter bool) string {
	t.Helper()
	files := map[string]string{card + "name": "amdgpu", card + "power1_average": "289000000"}
	if addr != "" {
		files[card+"device/uevent"] = "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_SLOT_NAME=" + addr + "\n"
	}
	if counter {
		files[card+"energy1_input"] = "5000000"
	}
	tr := telemetrytest.Tree{Root: t.TempDir()}
	if err := tr.WriteAll(files); err != nil {
		t.Fatal(err)
	}
	return tr.Root
}

// watts adds every power reading of one read of every source discovery kept: one AMD GPU at
// 289 W must read 289 W, not 578.
func watts(t *testing.T, set *live.Set) (float64, []string) {
	t.Helper()
	sum, names := 0.0, []string(nil)
	for _, src := range set.Sources {
		names = append(names, src.Name())
		pts, err := src.Read(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", src.Name(), err)
		}
		for _, p := range pts {
			if p.Metric == telemetry.PowerW {
				sum += p.Value
			}
		}
	}
	return sum, names
}

// One physical AMD GPU seen by amd-smi and by the amdgpu hwmon files is one source: matched by
// PCI address, the source with the energy counter is kept (the tool on a tie), and both
// statuses say which (doctor --telemetry prints them).
func TestDiscoverOneSourcePerAMDGPU(t *testing.T) {
	for _, c := range []struct {
		name          string
		metric        string
		addr          string
		hwmonCounter  bool
		keep          string // the source that reads the GPU
		toolReason    string
		amdgpuReason  string
		amdgpuAvail   bool
		amdSMIDevices string
	}{
		{name: "amd-smi counter, hwmon power", metric: amdMetricCounter, addr: "0000:03:00.0", keep: "amd-smi",
			toolReason: "GPU0 (0000:03:00.0) is also amdgpu's amdgpu0: read here only", amdgpuReason: "not used: amdgpu0 (0000:03:00.0) is amd-smi's GPU0, read there (energy counter; throttle status)",
			amdSMIDevices: "GPU0"},
		{name: "both power only", metric: amdMetricPowerOnly, addr: "0000:03:00.0", keep: "amd-smi",
			amdgpuReason: "read there (power readings, as here; throttle status)", amdSMIDevices: "GPU0"},
		{name: "hwmon counter, amd-smi power", metric: amdMetricPowerOnly, addr: "0000:03:00.0", hwmonCounter: true, keep: "amdgpu",
			toolReason: "not used: GPU0 (0000:03:00.0) is read by amdgpu as amdgpu0", amdgpuReason: "amdgpu0 (0000:03:00.0) is amd-smi's GPU0, read here (energy counter)",
			amdgpuAvail: true},
		{name: "no PCI address in sysfs", metric: amdMetricCounter, addr: "", keep: "amd-smi",
			amdgpuReason: "amdgpu0 not read here: amd-smi reads the AMD GPUs and sysfs gives no PCI address for it", amdSMIDevices: "GPU0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool := fakeTool(t, map[string]string{"metric": c.metric, "list": amdList})
			set := live.Discover(context.Background(), live.Config{Root: amdCardTree(t, c.addr, c.hwmonCounter), NVML: noNVML(),
				NvidiaSMI: "-", AMDSMI: tool, ROCmSMI: "-"})
			defer set.Close()
			w, names := watts(t, set)
			if w != 289 {
				t.Fatalf("one GPU at 289 W reads %v W from %v", w, names)
			}
			if !contains(names, c.keep) {
				t.Fatalf("sources %v, want %s", names, c.keep)
			}
			am, ag := status(t, set, "amd-smi"), status(t, set, "amdgpu")
			if !strings.Contains(am.Reason, c.toolReason) || strings.Join(am.Devices, ",") != c.amdSMIDevices {
				t.Errorf("amd-smi %+v", am)
			}
			if ag.Available != c.amdgpuAvail || !strings.Contains(ag.Reason, c.amdgpuReason) {
				t.Errorf("amdgpu %+v", ag)
			}
		})
	}
}

// rocm-smi (when amd-smi does not answer) is matched the same way, by its --showbus address.
func TestDiscoverOneSourcePerAMDGPUWithROCmSMI(t *testing.T) {
	rocm := fakeTool(t, map[string]string{
		"--showbus": `{"card0": {"PCI Bus": "0000:03:00.0"}}`,
		"":          `{"card0": {"Average Graphics Package Power (W)": "289.0", "Accumulated Energy (uJ)": "998877665544.0"}}`,
	})
	set := live.Discover(context.Background(), live.Config{Root: amdCardTree(t, "0000:03:00.0", false), NVML: noNVML(),
		NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: rocm})
	defer set.Close()
	if w, names := watts(t, set); w != 289 || !contains(names, "rocm-smi") {
		t.Fatalf("%v W from %v", w, names)
	}
	if st := status(t, set, "amdgpu"); st.Available || !strings.Contains(st.Reason, "is rocm-smi's GPU0, read there") {
		t.Fatalf("amdgpu %+v", st)
	}
}

// A card the tool does not list (another PCI address) is still read by the hwmon files.
func TestDiscoverKeepsAnAMDGPUTheToolDoesNotList(t *testing.T) {
	tool := fakeTool(t, map[string]string{"metric": amdMetricCounter, "list": amdList})
	set := live.Discover(context.Background(), live.Config{Root: amdCardTree(t, "0000:0b:00.0", false), NVML: noNVML(),
		NvidiaSMI: "-", AMDSMI: tool, ROCmSMI: "-"})
	defer set.Close()
	if w, names := watts(t, set); w != 578 || !contains(names, "amdgpu") || !contains(names, "amd-smi") {
		t.Fatalf("two GPUs at 289 W: %v W from %v", w, names)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
