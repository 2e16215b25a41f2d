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

// While held (a run in the Studies section), a finished frame waits for ShowHeld, so the
// chart changes in the same repaint as the run's text; Hold(false) shows what was held.
func TestChartViewHoldsFramesForTheTextUpdate(t *testing.T) {
	newTestApp(t)
	c := build(func() *ChartView { return NewChartView(640, 400) })
	defer c.Close()
	mk := func(tg float64) plots.Chart {
		return &plots.DepthChart{Metric: "tg32", Series: []plots.DepthSeries{{Label: "tiny",
			Points: []plots.DepthPoint{{Depth: 0, Mean: tg, N: 1}, {Depth: 256, Mean: tg / 2, N: 1}}}}}
	}
	Locked(func() { c.Hold(true) })
	c.Show(mk(9000))
	held := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.held != nil
	}
	deadline := time.Now().Add(20 * time.Second)
	for !held() {
		if time.Now().After(deadline) {
			t.Fatal("the frame was never rendered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case seq := <-c.Frames:
		t.Fatalf("frame %d was shown while held", seq)
	default:
	}
	Locked(func() { c.ShowHeld() })
	select {
	case <-c.Frames:
	default:
		t.Fatal("ShowHeld showed nothing")
	}
	if held() {
		t.Fatal("the frame is still held after ShowHeld")
	}
	seq := c.Show(mk(8000))
	for !held() {
		if time.Now().After(deadline) {
			t.Fatal("the second frame was never rendered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	Locked(func() { c.Hold(false) })
	select {
	case got := <-c.Frames:
		if got != seq {
			t.Fatalf("Hold(false) showed frame %d, want %d", got, seq)
		}
	default:
		t.Fatal("Hold(false) did not show the held frame")
	}
}
