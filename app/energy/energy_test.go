package energy_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"sparkbench/app/energy"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

// sampleNVML reads src every step for n steps on the fake clock, stamping each sample with
// the time since start.
func sampleNVML(t *testing.T, src telemetry.Source, clk *telemetrytest.Clock, start time.Time, step time.Duration, n int) []telemetry.Sample {
	t.Helper()
	var out []telemetry.Sample
	for i := 0; i < n; i++ {
		pts, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, telemetry.Sample{Source: src.Name(), T: clk.Now().Sub(start), Points: pts})
		clk.Advance(step)
	}
	return out
}

func without(samples []telemetry.Sample, metric string) []telemetry.Sample {
	var out []telemetry.Sample
	for _, s := range samples {
		c := s
		c.Points = nil
		for _, p := range s.Points {
			if p.Metric != metric {
				c.Points = append(c.Points, p)
			}
		}
		out = append(out, c)
	}
	return out
}

// The synthetic load (idle, ramp, a 5 Hz ripple at 300 W, idle) sampled every 100 ms for 10 s:
// the energy counter and the integrated power agree within 2%, and each is within 2% of the
// load's exact integral.
func TestCounterAndIntegratedPowerAgree(t *testing.T) {
	clk := telemetrytest.NewClock()
	lib := &telemetrytest.NVML{Clock: clk, GPUs: []*telemetrytest.GPU{{Load: telemetrytest.SyntheticLoad, EnergyOffsetMJ: 5e9}}}
	src, st := telemetry.OpenNVML(lib)
	if !st.Available {
		t.Fatal(st.Reason)
	}
	start := clk.Now()
	samples := sampleNVML(t, src, clk, start, 100*time.Millisecond, 101)
	w := energy.Window{From: 0, To: 10 * time.Second}
	byCounter, ok := energy.Leg(samples, w, nil)
	if !ok || byCounter.Method != energy.MethodCounter {
		t.Fatalf("counter: %+v", byCounter)
	}
	byPower, ok := energy.Leg(without(samples, telemetry.EnergyJ), w, nil)
	if !ok || byPower.Method != energy.MethodIntegrated {
		t.Fatalf("integrated: %+v", byPower)
	}
	exact := telemetrytest.Integral(telemetrytest.SyntheticLoad, 0, 10)
	agree := math.Abs(byPower.EnergyJ/byCounter.EnergyJ - 1)
	t.Logf("exact %.3f J, counter %.3f J, integrated %.3f J: counter vs integrated %.4f%%", exact, byCounter.EnergyJ, byPower.EnergyJ, agree*100)
	if agree > 0.02 || math.Abs(byCounter.EnergyJ/exact-1) > 0.02 || math.Abs(byPower.EnergyJ/exact-1) > 0.02 {
		t.Fatalf("exact %.3f J, counter %.3f J, integrated %.3f J", exact, byCounter.EnergyJ, byPower.EnergyJ)
	}
	d := byCounter.Devices[0]
	if d.Device != "GPU0" || d.PeakW < 300 || d.PeakW > 320 || math.Abs(d.AvgW-byCounter.EnergyJ/10) > 1e-3 {
		t.Fatalf("device figures %+v", d)
	}
}

// A RAPL package counter wraps in the middle of a leg: the leg's energy is still the energy
// drawn (the sampler unwraps; the figures difference the unwrapped counter).
func TestLegEnergyAcrossACounterWrap(t *testing.T) {
	tr := telemetrytest.Tree{Root: t.TempDir()}
	const z = "sys/class/powercap/intel-rapl:0/"
	if err := tr.WriteAll(map[string]string{z + "name": "package-0", z + "max_energy_range_uj": "10000000", z + "energy_uj": "4000000"}); err != nil {
		t.Fatal(err)
	}
	r, st := telemetry.OpenRAPL(tr.Root)
	if !st.Available {
		t.Fatal(st.Reason)
	}
	var samples []telemetry.Sample
	raw := 4000000
	for i := 0; i <= 10; i++ { // 45 W for 10 s: 4.5 J a read, wrapping at 10 J
		if err := tr.Write(z+"energy_uj", strconv.Itoa(raw)); err != nil {
			t.Fatal(err)
		}
		pts, err := r.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, telemetry.Sample{Source: "rapl", T: time.Duration(i) * 100 * time.Millisecond, Points: pts})
		raw = (raw + 4500000) % 10000000
	}
	f, ok := energy.Leg(samples, energy.Window{From: 0, To: time.Second}, nil)
	if !ok || math.Abs(f.EnergyJ-45) > 1e-6 || f.Method != energy.MethodCounter {
		t.Fatalf("%+v", f)
	}
	if f.Devices[0].PeakW != 45 || f.Devices[0].AvgW != 45 {
		t.Fatalf("power from the counter: %+v", f.Devices[0])
	}
}

// A constant 100 W: rows split the leg at their arrival; each row's energy per token is the
// window's mean power times llama-bench's test time over the tokens measured.
func TestRowsGiveJoulesPerToken(t *testing.T) {
	var samples []telemetry.Sample
	for i := 0; i <= 40; i++ {
		samples = append(samples, telemetry.Sample{Source: "nvml", T: time.Duration(i) * 100 * time.Millisecond,
			Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 100}}})
	}
	rows := []energy.Row{
		{Seq: 0, Test: "pp512", Kind: "pp", Tokens: 512, Reps: 5, TestNs: 500_000_000, At: 1500 * time.Millisecond},
		{Seq: 1, Test: "tg128", Kind: "tg", Tokens: 128, Reps: 5, TestNs: 2_000_000_000, At: 4 * time.Second},
		{Seq: 2, Test: "tg128 @ d512", Kind: "tg", Tokens: 128, Reps: 5, TestNs: 0, At: 4 * time.Second},
	}
	f, ok := energy.Leg(samples, energy.Window{From: 0, To: 4 * time.Second}, rows)
	if !ok || len(f.Rows) != 2 {
		t.Fatalf("%+v", f)
	}
	pp, tg := f.Rows[0], f.Rows[1]
	if pp.WindowJ != 150 || pp.MeanW != 100 || math.Abs(pp.JPerToken-50.0/2560) > 1e-9 || math.Abs(pp.TokensPerJ-51.2) > 1e-6 {
		t.Fatalf("pp %+v", pp)
	}
	if tg.WindowJ != 250 || math.Abs(tg.JPerToken-200.0/640) > 1e-9 {
		t.Fatalf("tg %+v", tg)
	}
	if _, ok := energy.Leg([]telemetry.Sample{{Source: "host", Points: []telemetry.Point{{Device: "host", Metric: telemetry.Load1, Value: 1}}}},
		energy.Window{To: time.Second}, rows); ok {
		t.Fatal("energy without any power or counter")
	}
}
