// Package membw measures memory bandwidth the STREAM way: copy (c = a) and triad
// (a = b + s*c) over float64 arrays much larger than the caches, split across all cores,
// best of N trials, reported in GB/s (1e9 bytes/s, counting bytes read plus bytes written as
// STREAM does). The figure feeds the bandwidth ceiling of throughput studies.
package membw

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Options configure a measurement. Zero values take the defaults.
type Options struct {
	ArrayBytes int64 // bytes per array (three arrays); default 256 MiB
	Threads    int   // default runtime.NumCPU()
	Trials     int   // default 10; the best trial counts
	// Progress, if set, is called after each trial with trials done and total.
	Progress func(done, total int)
}

// Result is a bandwidth measurement.
type Result struct {
	CopyGBs    float64 `json:"copy_gbs"`
	TriadGBs   float64 `json:"triad_gbs"`
	ArrayBytes int64   `json:"array_bytes"`
	Threads    int     `json:"threads"`
	Trials     int     `json:"trials"`
	Elapsed    float64 `json:"elapsed_s"`
}

func (o *Options) defaults() {
	if o.ArrayBytes == 0 {
		o.ArrayBytes = 256 << 20
	}
	if o.Threads == 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Trials == 0 {
		o.Trials = 10
	}
}

// Measure runs the probe. It allocates 3 x ArrayBytes and touches them all before timing.
func Measure(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	if o.ArrayBytes < 1<<20 || o.Threads < 1 || o.Trials < 1 {
		return Result{}, fmt.Errorf("membw: array of %d bytes, %d threads, %d trials: want >= 1 MiB, >= 1, >= 1", o.ArrayBytes, o.Threads, o.Trials)
	}
	n := int(o.ArrayBytes / 8)
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	parallel(o.Threads, n, func(lo, hi int) { // first touch, on the threads that will use the pages
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 1, 2, 0
		}
	})
	start := time.Now()
	res := Result{ArrayBytes: o.ArrayBytes, Threads: o.Threads, Trials: o.Trials}
	const scalar = 3.0
	for t := 0; t < o.Trials; t++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		t0 := time.Now()
		parallel(o.Threads, n, func(lo, hi int) { copy(c[lo:hi], a[lo:hi]) })
		if gbs := float64(2*8*n) / time.Since(t0).Seconds() / 1e9; gbs > res.CopyGBs {
			res.CopyGBs = gbs
		}
		t0 = time.Now()
		parallel(o.Threads, n, func(lo, hi int) {
			aa, bb, cc := a[lo:hi], b[lo:hi], c[lo:hi]
			for i := range aa {
				aa[i] = bb[i] + scalar*cc[i]
			}
		})
		if gbs := float64(3*8*n) / time.Since(t0).Seconds() / 1e9; gbs > res.TriadGBs {
			res.TriadGBs = gbs
		}
		if o.Progress != nil {
			o.Progress(t+1, o.Trials)
		}
	}
	res.Elapsed = time.Since(start).Seconds()
	runtime.KeepAlive(a)
	return res, nil
}

// parallel splits [0, n) into one contiguous chunk per thread.
func parallel(threads, n int, f func(lo, hi int)) {
	if threads == 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + threads - 1) / threads
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}
