package plots

import (
	"sync"
	"testing"
	"time"
)

type frameLog struct {
	mu     sync.Mutex
	frames []Frame
	starts []time.Time // when each render started (delivery time - Took)
	got    chan Frame
}

func newFrameLog() *frameLog { return &frameLog{got: make(chan Frame, 100)} }

func (l *frameLog) deliver(f Frame) {
	l.mu.Lock()
	l.frames = append(l.frames, f)
	l.starts = append(l.starts, time.Now().Add(-f.Took))
	l.mu.Unlock()
	l.got <- f
}

func (l *frameLog) waitSeq(t *testing.T, seq uint64) Frame {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case f := <-l.got:
			if f.Seq == seq {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame with seq %d", seq)
		}
	}
}

// Submitting faster than the renderer draws keeps only the newest snapshot: far fewer
// frames than submissions, in order, the last one showing the last submission, and no two
// renders starting closer than MinInterval.
func TestLiveRendererLatestWinsAndRateLimit(t *testing.T) {
	const interval = 60 * time.Millisecond
	log := newFrameLog()
	r := NewLiveRenderer(LiveOptions{WidthPx: 640, HeightPx: 400, MinInterval: interval}, log.deliver)
	defer r.Close()

	base := loadChart(t, KindDepth).(DepthChart)
	var last uint64
	for i := range 60 {
		c := base
		c.RefLine = 60 + float64(i%10) // a new snapshot each time
		last = r.Submit(c)
		time.Sleep(2 * time.Millisecond)
	}
	f := log.waitSeq(t, last)
	if f.Err != nil || f.Image == nil || f.Image.Bounds().Dx() != 640 || f.Image.Bounds().Dy() != 400 {
		t.Fatalf("last frame: err %v, image %v", f.Err, f.Image)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	n := len(log.frames)
	if n >= 30 {
		t.Errorf("%d frames for 60 snapshots submitted within ~150 ms: older snapshots were not dropped", n)
	}
	for i := 1; i < n; i++ {
		if log.frames[i].Seq <= log.frames[i-1].Seq {
			t.Errorf("frame %d has seq %d after %d", i, log.frames[i].Seq, log.frames[i-1].Seq)
		}
		// Allow a little clock jitter in the measured start times.
		if gap := log.starts[i].Sub(log.starts[i-1]); gap < interval-5*time.Millisecond {
			t.Errorf("renders %d and %d started %v apart, want >= %v", i-1, i, gap, interval)
		}
	}
	t.Logf("%d frames for 60 submissions; last render took %v", n, f.Took)
}

func TestLiveRendererDefaultsAndResize(t *testing.T) {
	log := newFrameLog()
	r := NewLiveRenderer(LiveOptions{WidthPx: 800, HeightPx: 500}, log.deliver)
	defer r.Close()
	if r.opts.MinInterval != DefaultMinInterval || r.opts.DPI != ScreenDPI {
		t.Fatalf("defaults: %+v", r.opts)
	}
	seq := r.Submit(loadChart(t, KindEnvelope))
	f := log.waitSeq(t, seq)
	if f.Image == nil || f.Image.Bounds().Dx() != 800 {
		t.Fatalf("first frame: %+v", f.Err)
	}
	r.Resize(1000, 600, 120) // redraws the newest chart at the new size
	f = log.waitSeq(t, seq)
	if f.Image == nil || f.Image.Bounds().Dx() != 1000 || f.Image.Bounds().Dy() != 600 {
		t.Fatalf("after resize: %v, %v", f.Err, f.Image.Bounds())
	}
}

func TestLiveRendererErrorsAndClose(t *testing.T) {
	log := newFrameLog()
	r := NewLiveRenderer(LiveOptions{WidthPx: 800, HeightPx: 500, MinInterval: time.Millisecond}, log.deliver)
	seq := r.Submit(DepthChart{Interval: "bogus"})
	if f := log.waitSeq(t, seq); f.Err == nil || f.Image != nil {
		t.Fatalf("invalid chart: frame %+v", f)
	}
	seq = r.Submit(DepthChart{}) // no data: an image that says so, and notes
	if f := log.waitSeq(t, seq); f.Err != nil || !hasNote(f.Notes, "no series given") {
		t.Fatalf("empty chart: err %v notes %q", f.Err, f.Notes)
	}
	r.Resize(100, 100, 0) // too small: an error frame, not a hang
	if f := log.waitSeq(t, seq); f.Err == nil {
		t.Fatal("100x100: no error")
	}
	r.Close()
	r.Close() // idempotent
	if got := r.Submit(loadChart(t, KindSlots)); got != 0 {
		t.Errorf("Submit after Close = %d", got)
	}
	r.Resize(800, 500, 0)
	select {
	case f := <-log.got:
		t.Fatalf("frame after Close: %+v", f)
	case <-time.After(100 * time.Millisecond):
	}
}

// The live path downsamples to the image width: a 10k-point repeatability strip renders
// with at most WidthPx points per series.
func TestLiveRendererDownsamples(t *testing.T) {
	log := newFrameLog()
	r := NewLiveRenderer(LiveOptions{WidthPx: 800, HeightPx: 500}, log.deliver)
	defer r.Close()
	f := log.waitSeq(t, r.Submit(longStrip(10000)))
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	p, _ := longStrip(10000).LimitPoints(800).Plot()
	if h := headerOf(p); h == nil || !hasNote(h.captions, "800 of 10000 runs drawn (LTTB") {
		t.Errorf("captions: %q", h.captions)
	}
}
