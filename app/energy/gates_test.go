package energy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

// Eight one-second legs 100 ms apart (leg k from 1.1k s), sampled every 100 ms from the leg's
// start to its end. A thermal slowdown from 2.45 s to 3.45 s flags exactly legs 2 and 3; the
// shader clock falling 20% from 6.85 s flags exactly leg 6 with a 10% limit; full load (70 °C
// in the fake) from 4.35 s to 6.45 s flags exactly legs 4 and 5 with a 69 °C limit.
func TestGatesFlagExactlyTheOverlappedLegs(t *testing.T) {
	clk := telemetrytest.NewClock()
	lib := &telemetrytest.NVML{Clock: clk, GPUs: []*telemetrytest.GPU{{
		Load: func(s float64) float64 {
			if s >= 4.35 && s < 6.45 {
				return 300 // 70 °C in the fake
			}
			return 100
		},
		Reasons: func(s float64) uint64 {
			if s >= 2.45 && s < 3.45 {
				return telemetry.ReasonHwThermalSlowdown | telemetry.ReasonSwPowerCap
			}
			return telemetry.ReasonSwPowerCap // capped all along: reported, never gated
		},
		SMClock: func(s float64) uint32 {
			if s >= 6.85 && s < 7.65 {
				return 2016
			}
			return 2520
		},
	}}}
	src, _ := telemetry.OpenNVML(lib)
	on := true
	gates := energy.Gates{Throttle: &on, ClockDropMax: 0.10, TempMaxC: 69}
	flagged := map[string][]int{}
	for leg := 0; leg < 8; leg++ {
		start := clk.Now()
		samples := sampleNVML(t, src, clk, start, 100*time.Millisecond, 11) // 0 to 1.0 s, then 100 ms to the next leg
		for _, b := range gates.Check(samples, energy.Window{From: 0, To: time.Second}) {
			flagged[b.Code] = append(flagged[b.Code], leg)
			if b.Code == energy.CodeClockDrop && (b.Observed != 0.2 || !strings.Contains(b.Reason, "2016 MHz, 20.0% below")) {
				t.Errorf("clock breach %+v", b)
			}
		}
	}
	want := map[string][]int{energy.CodeThrottled: {2, 3}, energy.CodeClockDrop: {6}, energy.CodeTempMax: {4, 5}}
	for code, legs := range want {
		if fmt.Sprint(flagged[code]) != fmt.Sprint(legs) {
			t.Errorf("%s flagged legs %v, want %v", code, flagged[code], legs)
		}
	}
	off := false
	if b := (energy.Gates{Throttle: &off}).Check([]telemetry.Sample{{Source: "nvml", Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.ThrottleHot, Value: 1}}}},
		energy.Window{To: time.Second}); len(b) != 0 {
		t.Fatalf("the throttle gate turned off still fired: %v", b)
	}
}

func TestPlanValidate(t *testing.T) {
	var none *energy.Plan
	if none.Validate("telemetry") != nil || none.Interval() != telemetry.DefaultInterval {
		t.Fatal("an absent block")
	}
	p := &energy.Plan{IntervalMS: 5, Gates: energy.Gates{ClockDropMax: 10, TempMaxC: -1}}
	var lines []string
	for _, pr := range p.Validate("telemetry") {
		lines = append(lines, pr.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"telemetry.interval_ms: 5: want 10 to 60000 ms (leave it out for 250)",
		"telemetry.gates.clock_drop_max: 10 is not a fraction", "telemetry.gates.temp_max_c: -1 °C"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	ok := &energy.Plan{IntervalMS: 100, Gates: energy.Gates{ClockDropMax: 0.1, TempMaxC: 90}}
	if len(ok.Validate("telemetry")) != 0 || ok.Interval() != 100*time.Millisecond {
		t.Fatal(ok.Validate("telemetry"))
	}
}
