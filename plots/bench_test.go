package plots

import (
	"bytes"
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

// Issue 7's acceptance benchmarks (run by `make bench`):
//
//	go test -tags migrated_fynedo ./plots -run '^$' -bench 'SeriesFrame|EnvelopeGrid' -benchtime 20x
//
// Timings are reported, never asserted: a loaded 2-core machine must not fail a test.

// seriesFrameTargetMs is issue 7's target for one 5 × 1,000-point frame at 1000×600.
const seriesFrameTargetMs = 25

// fiveStrips is a repeatability chart of 5 series of n runs each, one a second: five live
// series such as the per-request generation rate of five arms.
func fiveStrips(n int) RepeatChart {
	c := longStrip(n)
	base := c.Series[0].Points
	c.Series = nil
	for s := range 5 {
		pts := make([]RepeatPoint, n)
		for i, q := range base {
			q.Value += float64(s)*4 + 0.8*math.Sin(float64(i*(s+1))/53)
			pts[i] = q
		}
		c.Series = append(c.Series, RepeatSeries{Label: "P4/C4 arm " + itoa(s+1), Points: pts})
	}
	return c
}

// fiveDepths is a depth chart of 5 series of n depths each (mean ± sd of 5 repetitions),
// crossing a 70 t/s reference line.
func fiveDepths(n int) DepthChart {
	c := DepthChart{
		Meta:    Meta{Model: "Qwen3-30B-A3B Q4_K_M", Build: "llama.cpp 067de937 Vulkan", Machine: "Radeon 8060S"},
		Metric:  "tg128",
		RefLine: 70,
	}
	for s := range 5 {
		pts := make([]DepthPoint, n)
		for i := range pts {
			d := i * 64
			mean := 95 - float64(s)*3 - 30*float64(d)/float64(n*64) + 0.7*math.Sin(float64(i)/11)
			pts[i] = DepthPoint{Depth: d, Mean: mean, SD: 0.4 + 0.1*float64(s), N: 5}
		}
		c.Series = append(c.Series, DepthSeries{Label: "config " + itoa(s+1), Points: pts})
	}
	return c
}

// BenchmarkSeriesFrame is issue 7's first acceptance benchmark: one frame of a chart of 5
// series × 1,000 points at 1000×600 px (96 dpi), built and drawn the way LiveRenderer does
// (renderFrame): LimitPoints(width) downsamples any series longer than the pixel width
// (LTTB), then Plot and Render to RGBA. Target ≤ 25 ms a frame, reported as ms/frame next to
// target-ms. At 1000 px a 1,000-point series is not longer than the width, so LTTB keeps
// every point; the 5x10000 cases have LTTB cut each series from 10,000 to 1,000 points.
func BenchmarkSeriesFrame(b *testing.B) {
	const wPx, hPx = 1000, 600
	for _, tc := range []struct {
		name  string
		chart Chart
	}{
		{"repeat/5x1000", fiveStrips(1000)},
		{"repeat/5x10000", fiveStrips(10000)},
		{"depth/5x1000", fiveDepths(1000)},
		{"depth/5x10000", fiveDepths(10000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := tc.chart.LimitPoints(wPx).Plot()
				if err != nil {
					b.Fatal(err)
				}
				img, err := Render(p, wPx, hPx, ScreenDPI)
				if err != nil {
					b.Fatal(err)
				}
				if img.Bounds().Dx() != wPx || img.Bounds().Dy() != hPx {
					b.Fatalf("frame is %v, want %d×%d", img.Bounds(), wPx, hPx)
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N), "ms/frame")
			b.ReportMetric(seriesFrameTargetMs, "target-ms")
		})
	}
}

// envelopeCandidates is a capacity study's envelope charts: 2 candidates, each a grid of
// 4 slot counts × 4 client levels, passing at low load and failing (with gate codes) at high
// load, with a selected point.
func envelopeCandidates() []EnvelopeChart {
	slots, clients := []int{1, 2, 4, 8}, []int{1, 2, 4, 8}
	var out []EnvelopeChart
	for k, name := range []string{"Q4_K_M Vulkan", "Q8_0 Vulkan"} {
		g := EnvelopeGrid{Candidate: name, Slots: slots, Clients: clients, Selected: &[2]int{4, 4}}
		for i, p := range slots {
			row := make([]EnvelopeCell, len(clients))
			for j, c := range clients {
				load := float64(c) / float64(p)
				cell := EnvelopeCell{
					Rate:    40*float64(min(p, c)) - 6*float64(k) - 1.5*float64(i*j),
					E2EP95:  1800 * load * float64(1+k),
					TTFTP95: 220 * load * load * float64(1+k),
				}
				cell.Pass = cell.E2EP95 <= 4000 && cell.TTFTP95 <= 1000
				if !cell.Pass {
					cell.Failures = []string{"one_or_more_passes_failed_load_slo", "forward:ttft_ms_p95_above_maximum", "reverse:e2e_latency_ms_p95_above_maximum"}
				}
				row[j] = cell
			}
			g.Cells = append(g.Cells, row)
		}
		out = append(out, EnvelopeChart{
			Meta: Meta{Model: name, Build: "llama-server 067de937 Vulkan", Machine: "Radeon 8060S"},
			Grid: g,
		})
	}
	return out
}

// BenchmarkEnvelopeGrid is issue 7's second acceptance benchmark: the capacity envelope grid
// for 4 × 4 cells × 2 candidates, one envelope chart per candidate (as the receipt and the
// capacity panel draw them). "frame" builds and renders both to RGBA at 1000×600 px (the
// window's path); "png" builds and exports both to PNG at 800×500 px (the receipt's size and
// path, plots.Export). ns/op covers both candidates; ms/grid is one candidate's chart and
// png-bytes/grid the size of one exported PNG. The issue sets no target for it.
func BenchmarkEnvelopeGrid(b *testing.B) {
	charts := envelopeCandidates()
	b.Run("4x4x2/frame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range charts {
				p, err := c.LimitPoints(1000).Plot()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Render(p, 1000, 600, ScreenDPI); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N*len(charts)), "ms/grid")
	})
	b.Run("4x4x2/png", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		var size int
		for b.Loop() {
			size = 0
			for _, c := range charts {
				p, err := c.Plot()
				if err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				if err := Export(p, PNG, Pixels(800), Pixels(500), &buf); err != nil {
					b.Fatal(err)
				}
				if !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
					b.Fatal("export wrote no PNG")
				}
				size += buf.Len()
			}
		}
		b.ReportMetric(float64(b.Elapsed())/float64(time.Millisecond)/float64(b.N*len(charts)), "ms/grid")
		b.ReportMetric(float64(size)/float64(len(charts)), "png-bytes/grid")
	})
}
