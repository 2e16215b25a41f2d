package membw

import (
	"context"
	"testing"
	"time"
)

func TestMeasureSmall(t *testing.T) {
	var calls []int
	r, err := Measure(context.Background(), Options{ArrayBytes: 8 << 20, Threads: 2, Trials: 3,
		Progress: func(done, total int) { calls = append(calls, done) }})
	if err != nil {
		t.Fatal(err)
	}
	// A machine that moves less than 0.1 GB/s or more than 10 TB/s is a broken measurement.
	for name, v := range map[string]float64{"copy": r.CopyGBs, "triad": r.TriadGBs} {
		if !(v > 0.1 && v < 10000) {
			t.Errorf("%s = %g GB/s", name, v)
		}
	}
	if len(calls) != 3 || calls[2] != 3 || r.Trials != 3 || r.Threads != 2 {
		t.Errorf("progress %v, result %+v", calls, r)
	}
	if _, err := Measure(context.Background(), Options{ArrayBytes: 1024}); err == nil {
		t.Error("tiny array must be refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{ArrayBytes: 1 << 20, Trials: 2}); err == nil {
		t.Error("cancelled probe must fail")
	}
}

// BenchmarkProbe reports the probe's best-of-N copy and triad GB/s with the default arrays.
func BenchmarkProbe(b *testing.B) {
	var r Result
	for b.Loop() {
		var err error
		if r, err = Measure(context.Background(), Options{Trials: 5}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(r.CopyGBs, "copy-GB/s")
	b.ReportMetric(r.TriadGBs, "triad-GB/s")
}

// BenchmarkPlainCopy is a single-threaded copy() of the same buffer sizes: the reference.
func BenchmarkPlainCopy(b *testing.B) {
	n := (256 << 20) / 8
	a, c := make([]float64, n), make([]float64, n)
	for i := range a {
		a[i], c[i] = 1, 0
	}
	best := 0.0
	for b.Loop() {
		t0 := time.Now()
		copy(c, a)
		if gbs := float64(2*8*n) / time.Since(t0).Seconds() / 1e9; gbs > best {
			best = gbs
		}
	}
	b.ReportMetric(best, "copy-GB/s")
}
