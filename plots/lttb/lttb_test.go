package lttb

import (
	"math"
	"slices"
	"testing"
)

func series(n int, f func(i int) float64) (x, y func(int) float64) {
	ys := make([]float64, n)
	for i := range ys {
		ys[i] = f(i)
	}
	return func(i int) float64 { return float64(i) }, func(i int) float64 { return ys[i] }
}

func TestIndicesShape(t *testing.T) {
	cases := []struct {
		n, threshold, want int
	}{
		{0, 10, 0}, {1, 10, 1}, {5, 0, 5}, {5, -1, 5}, {5, 5, 5}, {5, 9, 5},
		{10, 1, 1}, {10, 2, 2}, {10, 3, 3}, {1000, 100, 100}, {10000, 800, 800}, {801, 800, 800},
	}
	for _, c := range cases {
		x, y := series(c.n, func(i int) float64 { return math.Sin(float64(i) / 7) })
		got := Indices(c.n, c.threshold, x, y)
		if len(got) != c.want {
			t.Errorf("n=%d threshold=%d: %d indices, want %d", c.n, c.threshold, len(got), c.want)
			continue
		}
		if c.n == 0 {
			continue
		}
		if got[0] != 0 {
			t.Errorf("n=%d threshold=%d: first index %d, want 0", c.n, c.threshold, got[0])
		}
		if c.want >= 2 && got[len(got)-1] != c.n-1 {
			t.Errorf("n=%d threshold=%d: last index %d, want %d", c.n, c.threshold, got[len(got)-1], c.n-1)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("n=%d threshold=%d: indices not strictly ascending: %v", c.n, c.threshold, got)
		}
	}
}

// A single spike in a flat series is the point a chart must not lose.
func TestIndicesKeepsSpikeAndCliff(t *testing.T) {
	const n = 10000
	x, y := series(n, func(i int) float64 {
		switch {
		case i == 4321:
			return 500 // spike
		case i > 7000:
			return 20 // cliff
		}
		return 90
	})
	got := Indices(n, 200, x, y)
	if !slices.Contains(got, 4321) {
		t.Fatalf("spike at 4321 dropped")
	}
	var sawHigh, sawLow bool
	for _, i := range got {
		sawHigh = sawHigh || y(i) == 90
		sawLow = sawLow || y(i) == 20
	}
	if !sawHigh || !sawLow {
		t.Fatalf("cliff lost: high %v low %v", sawHigh, sawLow)
	}
}

func TestIndicesDeterministicAndNaNSafe(t *testing.T) {
	x, y := series(3000, func(i int) float64 {
		if i%97 == 0 {
			return math.NaN()
		}
		return float64(i % 13)
	})
	a := Indices(3000, 300, x, y)
	b := Indices(3000, 300, x, y)
	if !slices.Equal(a, b) {
		t.Fatal("two runs differ")
	}
	if len(a) != 300 {
		t.Fatalf("got %d indices with NaN present, want 300", len(a))
	}
}

func TestDownsample(t *testing.T) {
	type pt struct{ t, v float64 }
	data := make([]pt, 1000)
	for i := range data {
		data[i] = pt{float64(i), float64(i * i % 17)}
	}
	if got := Downsample(data, 0, func(p pt) (float64, float64) { return p.t, p.v }); len(got) != 1000 {
		t.Fatalf("threshold 0: %d", len(got))
	}
	got := Downsample(data, 50, func(p pt) (float64, float64) { return p.t, p.v })
	if len(got) != 50 || got[0] != data[0] || got[49] != data[999] {
		t.Fatalf("downsample: len %d first %v last %v", len(got), got[0], got[len(got)-1])
	}
}

func BenchmarkIndices10k(b *testing.B) {
	x, y := series(10000, func(i int) float64 { return math.Sin(float64(i) / 50) })
	for b.Loop() {
		Indices(10000, 800, x, y)
	}
}
