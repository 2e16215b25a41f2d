package analysis

import (
	"math"
	"strings"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %g", name, got, want, tol)
	}
}

func TestCrossingDepthSeed(t *testing.T) {
	// The log seed: tg 75.34 @4096 and 67.98 @8192 cross 70 t/s near 7.07K.
	c, err := CrossingDepth([]Point{{8192, 67.98}, {4096, 75.34}}, 70)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != Crossed {
		t.Fatalf("kind = %s", c.Kind)
	}
	near(t, "crossing", c.Depth, 4096+5.34/7.36*4096, 1e-9)
	near(t, "crossing (K)", c.Depth/1000, 7.07, 0.005)

	// Step 8 block 3d leg 2, six depths: the first fall below 70 is between 4096 and 8192.
	leg2 := []Point{{0, 88.66}, {2048, 79.64}, {4096, 75.34}, {8192, 67.98}, {16384, 57.61}, {32768, 43.75}}
	c, _ = CrossingDepth(leg2, 70)
	if c.From.X != 4096 || c.To.X != 8192 {
		t.Errorf("bracket = %v..%v", c.From, c.To)
	}
	if !strings.Contains(c.String(), "about 7068") {
		t.Errorf("String() = %q", c.String())
	}
}

func TestCrossingEdgeCases(t *testing.T) {
	cases := []struct {
		name   string
		points []Point
		line   float64
		kind   CrossingKind
		depth  float64
		errHas string
	}{
		{"below at d0", []Point{{0, 60}, {4096, 50}}, 70, BelowAtStart, 0, ""},
		{"never below", []Point{{0, 92.83}, {8192, 70.65}}, 70, NotReached, 0, ""},
		{"equal is not below", []Point{{0, 80}, {4096, 70}, {8192, 60}}, 70, Crossed, 4096, ""},
		{"rises again after crossing", []Point{{0, 80}, {1000, 60}, {2000, 90}}, 70, Crossed, 500, ""},
		{"single point above", []Point{{0, 90}}, 70, NotReached, 0, ""},
		{"empty", nil, 70, "", 0, "no measured points"},
		{"duplicate depth", []Point{{0, 90}, {0, 80}}, 70, "", 0, "two points at depth 0"},
		{"NaN", []Point{{0, math.NaN()}}, 70, "", 0, "not a finite number"},
	}
	for _, c := range cases {
		got, err := CrossingDepth(c.points, c.line)
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.errHas)
			}
			continue
		}
		if err != nil || got.Kind != c.kind {
			t.Errorf("%s: got %+v, %v; want kind %s", c.name, got, err, c.kind)
			continue
		}
		if c.kind == Crossed {
			near(t, c.name, got.Depth, c.depth, 1e-9)
		}
	}
}

func TestDepthSlopes(t *testing.T) {
	// Qwen3-30B: 92.83 -> 66.97 at 8K is -28%; GLM-4.7-Flash: 71.93 -> 50.74 is -29.5%.
	s, err := DepthSlopes([]Point{{0, 92.83}, {8192, 66.97}})
	if err != nil || len(s) != 1 {
		t.Fatal(s, err)
	}
	near(t, "qwen slope", s[0].Slope, -0.2786, 0.0001)
	s, _ = DepthSlopes([]Point{{8192, 50.74}, {0, 71.93}})
	near(t, "glm slope", s[0].Slope, -0.2946, 0.0001)
	if _, err := DepthSlopes([]Point{{0, 0}, {10, 1}}); err == nil {
		t.Error("zero reference must fail")
	}
}

func TestCeilingAndEfficiency(t *testing.T) {
	// 220 GB/s over 9.0 GB per token is about 24.4 t/s.
	c, err := CeilingTPS(220, 9.0e9)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "ceiling", c, 24.44, 0.005)
	// Qwen3-30B-A3B Q4_K_M: 18,556,686,752 bytes / 30.53B params x 3.3B active ≈ 2.0 GB/token
	// -> ~110 t/s; observed 92.83 is 84% of it.
	ab, err := HouseActiveBytes(18556686752, 30.53e9, 3.3e9)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "active bytes", ab/1e9, 2.006, 0.001)
	c, _ = CeilingTPS(220, ab)
	near(t, "qwen ceiling", c, 109.7, 0.1)
	e, _ := Efficiency(92.83, c)
	near(t, "efficiency", e, 0.846, 0.001)
	for _, bad := range [][2]float64{{0, 1}, {-1, 1}, {220, 0}, {math.Inf(1), 1}, {math.NaN(), 1}} {
		if _, err := CeilingTPS(bad[0], bad[1]); err == nil {
			t.Errorf("CeilingTPS(%v) must fail", bad)
		}
	}
	if _, err := HouseActiveBytes(1, 0, 1); err == nil {
		t.Error("zero params must fail")
	}
}

func TestContaminationServingTaxScaling(t *testing.T) {
	d, _ := ContaminationDelta(93.41, 92.0, 93.0)
	near(t, "contamination", d, 92.0/93.205-1, 1e-12)
	tax, _ := ServingTax(87.81, 92.24)
	near(t, "serving tax", tax, 0.048, 0.0005)

	// Gains per doubling +43/+31/+17/+21% (step 9): speedup 2.66x, knee at 8 slots (< 20%).
	rates := []float64{72.7}
	for _, g := range []float64{0.43, 0.31, 0.17, 0.21} {
		rates = append(rates, rates[len(rates)-1]*(1+g))
	}
	var pts []Point
	for i, r := range rates {
		pts = append(pts, Point{float64(int(1) << i), r})
	}
	s, err := ScalingOf(pts, DefaultKneeGain)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "speedup", s.Speedup, 2.65, 0.01)
	if s.Knee == nil || *s.Knee != 8 {
		t.Fatalf("knee = %v, want 8", s.Knee)
	}
	near(t, "gain 4->8", s.Doubling[2].Gain, 0.17, 1e-9)
	s, _ = ScalingOf([]Point{{1, 10}, {2, 15}, {4, 22}}, 0.2)
	if s.Knee != nil {
		t.Errorf("no knee expected, got %v", *s.Knee)
	}
	if _, err := ScalingOf([]Point{{1, 10}}, 0.2); err == nil {
		t.Error("one point must fail")
	}
}

func TestPercentileNumpyDefault(t *testing.T) {
	xs := []float64{8, 1, 7, 2, 6, 3, 5, 4}
	for _, c := range []struct{ p, want float64 }{{95, 7.65}, {50, 4.5}, {0, 1}, {100, 8}, {25, 2.75}} {
		got, err := Percentile(xs, c.p)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "p", got, c.want, 1e-12)
	}
	if _, err := Percentile(nil, 50); err == nil {
		t.Error("empty must fail")
	}
	if _, err := Percentile(xs, 101); err == nil {
		t.Error("p > 100 must fail")
	}
}

func TestSummarizeTInterval(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5})
	near(t, "mean", s.Mean, 3, 0)
	near(t, "sd", s.SD, math.Sqrt(2.5), 1e-12)
	near(t, "t(0.975,4)", TCritical(0.95, 4), 2.776445, 1e-5)
	near(t, "ci half", s.Hi-s.Mean, 2.776445*math.Sqrt(2.5)/math.Sqrt(5), 1e-5)
	near(t, "cv", s.CV, math.Sqrt(2.5)/3, 1e-12)
	one := Summarize([]float64{7})
	if one.SD != 0 || one.Lo != 7 || one.Hi != 7 {
		t.Errorf("n=1: %+v", one)
	}
}

func TestCompareWelchAgainstR(t *testing.T) {
	// R: t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776, p-value = 0.07939,
	// 95 percent CI of the difference -3.3654832 0.2054832 (group1 - group2).
	g1 := []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	g2 := []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
	c := Compare(g1, g2, 0.05)
	near(t, "p", c.P, 0.07939, 0.00001)
	near(t, "delta lo", c.DeltaLo*c.Base.Mean, -0.2054832, 1e-6)
	near(t, "delta hi", c.DeltaHi*c.Base.Mean, 3.3654832, 1e-6)
	if c.Significant || !strings.HasPrefix(c.String(), "~ (p=0.079 n=10+10)") {
		t.Errorf("not significant at 0.05: %s", c)
	}

	c = Compare([]float64{100, 101, 99, 100, 100}, []float64{103, 104, 102, 103, 103}, 0.05)
	if !c.Significant || !strings.HasPrefix(c.String(), "+3.00% (p=0.000") {
		t.Errorf("got %s", c)
	}
	c = Compare([]float64{100, 101}, []float64{100, 102}, 0.05)
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], "need >= 3 reps") {
		t.Errorf("warnings = %q", c.Warnings)
	}
	c = Compare([]float64{100}, []float64{101}, 0.05)
	if !math.IsNaN(c.P) || c.Significant {
		t.Errorf("n=1 must not claim significance: %+v", c)
	}
}

// Server tax, worked by hand: a server cell at 4 slots and 4 clients generating 84.94 tok/s
// against llama-batched-bench at B=4 generating 4×128 tokens in T = 5.0 s (102.4 tok/s):
// 84.94 / 102.4 = 0.8294921875, the server delivers about 83% (a 17% tax).
func TestServerTax(t *testing.T) {
	tax, err := ServerTax(84.94, 4*128/5.0)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "server tax", tax, 0.8294921875, 1e-12)
	for _, c := range [][2]float64{{1, 0}, {1, -3}, {1, math.NaN()}, {math.NaN(), 1}, {-1, 1}, {1, math.Inf(1)}} {
		if _, err := ServerTax(c[0], c[1]); err == nil {
			t.Errorf("ServerTax(%g, %g) accepted", c[0], c[1])
		}
	}
	// Series: B=1 35.10 vs 40.00 = 0.8775; B=2 60 vs 75 = 0.8; B=4 84.94 vs 102.4 as above;
	// the server's B=8 and batched-bench's B=16 have no partner and are left out.
	got, err := ServerTaxSeries([]Point{{4, 84.94}, {1, 35.10}, {2, 60}, {8, 90}}, []Point{{1, 40}, {2, 75}, {4, 102.4}, {16, 200}})
	if err != nil || len(got) != 3 {
		t.Fatalf("series %v %v", got, err)
	}
	for i, want := range []Point{{1, 0.8775}, {2, 0.8}, {4, 0.8294921875}} {
		if got[i].X != want.X {
			t.Errorf("point %d at B=%g, want %g", i, got[i].X, want.X)
		}
		near(t, "series", got[i].Y, want.Y, 1e-12)
	}
	if _, err := ServerTaxSeries([]Point{{3, 1}}, []Point{{1, 1}}); err == nil || !strings.Contains(err.Error(), "share no B") {
		t.Errorf("no common B: %v", err)
	}
	if _, err := ServerTaxSeries([]Point{{1, 1}}, []Point{{1, 0}}); err == nil || !strings.Contains(err.Error(), "B=1") {
		t.Errorf("a zero batched rate: %v", err)
	}
}
