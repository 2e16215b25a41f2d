package ui

import (
	"testing"
	"time"

	"sparkbench/plots"
)

func TestChartViewShowsLatestFrame(t *testing.T) {
	newTestApp(t)
	c := build(func() *ChartView { return NewChartView(640, 400) })
	defer c.Close()
	mk := func(tg float64) plots.Chart {
		return &plots.DepthChart{Metric: "tg32", RefLine: 5000, Series: []plots.DepthSeries{{Label: "tiny",
			Points: []plots.DepthPoint{{Depth: 0, Mean: tg, SD: 10, N: 3}, {Depth: 128, Mean: tg * 0.8, SD: 10, N: 3}, {Depth: 256, Mean: tg * 0.5, SD: 10, N: 3}}}}}
	}
	var last uint64
	for i := 0; i < 20; i++ {
		last = c.Show(mk(9000 + float64(i)))
	}
	deadline := time.After(20 * time.Second)
	shown := 0
	for {
		select {
		case seq := <-c.Frames:
			shown++
			if seq == last {
				b := c.Image.Image.Bounds()
				if b.Dx() != 640 || b.Dy() != 400 {
					t.Fatalf("frame is %v, want 640x400", b)
				}
				if shown > 3 {
					t.Fatalf("%d frames for 20 rapid snapshots: latest-wins is not working", shown)
				}
				return
			}
		case <-deadline:
			t.Fatalf("the latest snapshot (%d) was never shown (%d frames)", last, shown)
		}
	}
}
