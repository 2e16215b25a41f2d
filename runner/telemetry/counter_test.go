package telemetry

import (
	"math"
	"testing"
)

func TestCounterWrapsAtRAPLRange(t *testing.T) {
	// max_energy_range_uj of a desktop package zone; the counter runs to it, then from 0.
	const rng = 262143328850
	c := Counter{Scale: 1e-6, Range: rng}
	steps := []struct {
		raw  uint64
		want float64
	}{
		{rng - 3_000_000, 0},
		{rng - 1_000_000, 2},
		{4_000_000, 7}, // 1 J to the top, then 4 J from zero
		{9_000_000, 12},
	}
	for i, s := range steps {
		got, err := c.Add(s.raw)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-s.want) > 1e-9 {
			t.Fatalf("read %d: %v J, want %v J", i, got, s.want)
		}
	}
	if c.Wraps != 1 || c.Resets != 0 {
		t.Fatalf("wraps %d resets %d, want 1 and 0", c.Wraps, c.Resets)
	}
}

func TestCounterWithoutRangeRestarts(t *testing.T) {
	c := Counter{Scale: 1e-3} // NVML: mJ since the driver loaded
	for _, raw := range []uint64{5000, 8000} {
		if _, err := c.Add(raw); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := c.Add(1500) // the driver reloaded: 1.5 J since
	if math.Abs(got-4.5) > 1e-9 || c.Resets != 1 {
		t.Fatalf("after a restart: %v J (resets %d), want 4.5 J and 1", got, c.Resets)
	}
	if _, err := (&Counter{}).Add(1); err == nil {
		t.Fatal("a counter without a scale was accepted")
	}
}

func TestRebaseCountsFromTheFirstReading(t *testing.T) {
	var r Rebase
	var got []float64
	for _, v := range []float64{1000, 1010.5, 3, 7} { // the third: the counter restarted
		pts := []Point{{Device: "GPU0", Metric: EnergyJ, Value: v}, {Device: "GPU0", Metric: PowerW, Value: 99}}
		r.Apply(pts)
		got = append(got, pts[0].Value)
		if pts[1].Value != 99 {
			t.Fatal("Rebase changed a power reading")
		}
	}
	want := []float64{0, 10.5, 13.5, 17.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("rebased %v, want %v", got, want)
		}
	}
}
