package telemetry

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// The recorded powermetrics output (two samples, 100 ms and 250 ms; testdata/PROVENANCE.md):
// each device's power is its energy over the sample's length, its energy a counter summed over
// samples, the GPU clock and busy share and each cluster's frequency read, and thermal
// pressure above Nominal read as a thermal slowdown.
func TestPowermetricsRecorded(t *testing.T) {
	data, err := os.ReadFile("testdata/powermetrics.plist")
	if err != nil {
		t.Fatal(err)
	}
	docs := SplitPowermetrics(data)
	if len(docs) != 2 {
		t.Fatalf("%d samples, want 2", len(docs))
	}
	var pm Powermetrics
	want := []struct {
		elapsed time.Duration
		pts     map[string]float64
	}{
		{100 * time.Millisecond, map[string]float64{"cpu/power_w": 5.12, "cpu/energy_j": 0.512, "gpu/power_w": 20, "gpu/energy_j": 2,
			"ane/power_w": 0, "gpu/clock_sm_mhz": 1398, "gpu/util_pct": 95, "E-Cluster/freq_mhz": 1020, "P0-Cluster/freq_mhz": 3204, "gpu/throttle_thermal": 0}},
		{250 * time.Millisecond, map[string]float64{"cpu/power_w": 5.2, "cpu/energy_j": 1.812, "gpu/power_w": 21, "gpu/energy_j": 7.25,
			"ane/power_w": 0.1, "ane/energy_j": 0.025, "gpu/clock_sm_mhz": 1296, "gpu/util_pct": 98, "P0-Cluster/freq_mhz": 3504, "gpu/throttle_thermal": 1}},
	}
	for i, doc := range docs {
		pts, elapsed, err := pm.Read(doc)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if elapsed != want[i].elapsed {
			t.Errorf("sample %d: elapsed %v, want %v", i, elapsed, want[i].elapsed)
		}
		got := map[string]float64{}
		for _, p := range pts {
			got[p.Device+"/"+p.Metric] = p.Value
		}
		for k, v := range want[i].pts {
			if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
				t.Errorf("sample %d: %s = %v (present %v), want %v", i, k, g, ok, v)
			}
		}
	}
}

// Output that is not a powermetrics sample is refused with what is wrong.
func TestPowermetricsBadInput(t *testing.T) {
	head := `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">`
	for _, c := range []struct{ in, want string }{
		{"garbage", "no <plist> element"},
		{head + `<array><integer>1</integer></array></plist>`, "not a dictionary"},
		{head + `<dict><key>elapsed_ns</key><integer>x</integer></dict></plist>`, "not an integer"},
		{head + `<dict><key>processor</key><dict/></dict></plist>`, "no elapsed_ns"},
		{head + `<dict><key>elapsed_ns</key><integer>5</integer></dict></plist>`, "no processor dictionary"},
		{head + `<dict><key>elapsed_ns</key><integer>5</integer><key>processor</key><dict><key>clusters</key><array/></dict></dict></plist>`, "no cpu_energy"},
		{head + `<dict><key>elapsed_ns</key></dict></plist>`, "without a value"},
		{head + `<dict><key>a</key><blob/></dict></plist>`, "not a property list element"},
		{head + `<dict><key>a</key><integer>1</integer>`, "EOF"},
	} {
		var pm Powermetrics
		if _, _, err := pm.Read([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60q: %v, want %q", c.in, err, c.want)
		}
	}
	if got := PowermetricsArgs(250 * time.Millisecond); strings.Join(got, " ") != "--samplers cpu_power,gpu_power,thermal -i 250 --format plist" {
		t.Errorf("args %v", got)
	}
}
