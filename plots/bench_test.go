package plots

import (
	"math"
	"testing"
	"time"
)

// longStrip is a repeatability strip of n runs, one a second: a live series such as the
// per-request generation rate during a long sweep.
func longStrip(n int) RepeatChart {
	pts := make([]RepeatPoint, n)
	t0 := time.Date(2026, 7, 4, 2, 0, 0, 0, time.UTC)
	for i := range pts {
		v := 92 + 1.2*math.Sin(float64(i)/37) + 0.6*math.Sin(float64(i)*1.7)
		if i%997 == 500 {
			v -= 6 // a stall: LTTB must keep it
		}
		pts[i] = RepeatPoint{At: t0.Add(time.Duration(i) * time.Second), Value: v}
	}
	return RepeatChart{
		Meta:   Meta{Model: "Qwen3-30B-A3B Q4_K_M", Build: "llama.cpp 067de937 Vulkan", Machine: "Radeon 8060S"},
		Metric: "per-request generation rate",
		Series: []RepeatSeries{{Label: "P4/C4 forward pass", Points: pts}},
	}
}

// BenchmarkLiveFrame measures one live frame (build the chart, draw it) at the window size,
// 800×500 px, with 1k and 10k points: "onepath" strokes the line as one path (gonum's
// default), "raw" in pieces of strokeChunk segments; "-lttb"/"lttb" first downsample to the
// pixel width (what LiveRenderer does):
//
//	go test ./plots -run '^$' -bench LiveFrame -benchtime 20x
func BenchmarkLiveFrame(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []struct {
			name  string
			max   int
			chunk int
		}{{"onepath", 0, 1 << 30}, {"onepath-lttb", 800, 1 << 30}, {"raw", 0, 0}, {"lttb", 800, 0}} {
			c := longStrip(n).LimitPoints(mode.max)
			b.Run(itoa(n)+"/"+mode.name, func(b *testing.B) {
				if mode.chunk > 0 {
					defer func(old int) { strokeChunk = old }(strokeChunk)
					strokeChunk = mode.chunk
				}
				for b.Loop() {
					p, err := c.Plot()
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Render(p, 800, 500, 96); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func itoa(n int) string { return formatInt(float64(n)) }
