package main

import (
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// clopperPearson is the exact 95% interval of a binomial proportion k of n.
func clopperPearson(k, n int) (lo, hi float64) {
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(0.025)
	}
	hi = 1
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(0.975)
	}
	return lo, hi
}

// The interval of 0 of 40 is [0, 8.8%], of 2 of 40 [0.6%, 16.9%] (exact binomial).
func TestClopperPearson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{0, 40, 0, 0.0881}, {2, 40, 0.0061, 0.1692}, {40, 40, 0.9119, 1}} {
		lo, hi := clopperPearson(c.k, c.n)
		if abs(lo-c.lo) > 5e-4 || abs(hi-c.hi) > 5e-4 {
			t.Errorf("%d of %d: [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
