package plots

import (
	"errors"
	"image"
	"sync"
	"time"
)

// LiveOptions configures a LiveRenderer.
type LiveOptions struct {
	// WidthPx and HeightPx are the displayed size in device pixels: render at the size
	// shown, so the UI never scales the image on the CPU.
	WidthPx, HeightPx int
	// DPI is 96 × the window's scale factor; 0 means 96.
	DPI int
	// MinInterval is the least time between the starts of two renders; 0 means 250 ms
	// (at most 4 renders per second, the house rate for plots).
	MinInterval time.Duration
	// Theme maps the chart's colours to the window's (nil: the house style of receipts).
	Theme *Theme
}

// DefaultMinInterval keeps live charts at 4 renders per second at most.
const DefaultMinInterval = 250 * time.Millisecond

// Frame is one rendered chart.
type Frame struct {
	Image *image.RGBA // nil when Err is set
	Seq   uint64      // the Submit this frame shows (Submit's return value)
	Notes []string    // what the chart says is missing (Notes)
	Err   error
	Took  time.Duration // building and drawing the chart
}

// LiveRenderer draws charts on its own goroutine while a study runs: Submit hands it the
// latest snapshot and returns at once; the worker renders the newest snapshot it has, at
// most once per MinInterval, and older snapshots that were never drawn are dropped (latest
// wins). Series longer than the image is wide are downsampled (LTTB) first.
//
// deliver runs on the worker goroutine. It must return quickly and must not touch widgets:
// the UI bridge hops onto the UI goroutine (fyne.Do) and shows the image there. Never render
// inside a canvas.Raster generator: it runs on the paint thread.
type LiveRenderer struct {
	deliver func(Frame)
	wake    chan struct{} // capacity 1: "there is something pending"
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	opts    LiveOptions
	pending Chart // nil when nothing is waiting
	pendSeq uint64
	last    Chart // the newest chart submitted, redrawn on Resize
	lastSeq uint64
	seq     uint64
	closed  bool
}

// NewLiveRenderer starts the worker. Close stops it.
func NewLiveRenderer(opts LiveOptions, deliver func(Frame)) *LiveRenderer {
	if opts.DPI <= 0 {
		opts.DPI = ScreenDPI
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if deliver == nil {
		deliver = func(Frame) {}
	}
	r := &LiveRenderer{
		deliver: deliver,
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		opts:    opts,
	}
	go r.run()
	return r
}

// Submit queues c for drawing, replacing any snapshot not drawn yet, and returns its
// sequence number (Frame.Seq). c must not be changed afterwards. After Close it returns 0
// and does nothing.
func (r *LiveRenderer) Submit(c Chart) uint64 {
	if c == nil {
		return 0
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0
	}
	r.seq++
	r.pending, r.pendSeq = c, r.seq
	r.last, r.lastSeq = c, r.seq
	seq := r.seq
	r.mu.Unlock()
	r.poke()
	return seq
}

// Resize changes the image size (and DPI, when dpi > 0) and redraws the newest chart.
func (r *LiveRenderer) Resize(wPx, hPx, dpi int) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	changed := wPx != r.opts.WidthPx || hPx != r.opts.HeightPx || (dpi > 0 && dpi != r.opts.DPI)
	r.opts.WidthPx, r.opts.HeightPx = wPx, hPx
	if dpi > 0 {
		r.opts.DPI = dpi
	}
	if changed && r.pending == nil && r.last != nil {
		r.pending, r.pendSeq = r.last, r.lastSeq
	}
	r.mu.Unlock()
	if changed {
		r.poke()
	}
}

// SetTheme changes the colours (nil: the house style) and redraws the newest chart.
func (r *LiveRenderer) SetTheme(t *Theme) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.opts.Theme = t
	if r.pending == nil && r.last != nil {
		r.pending, r.pendSeq = r.last, r.lastSeq
	}
	r.mu.Unlock()
	r.poke()
}

// Close stops the worker and waits for a render in progress to finish. It is idempotent;
// no frame is delivered after it returns.
func (r *LiveRenderer) Close() {
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.pending = nil
		r.mu.Unlock()
		close(r.quit)
	})
	<-r.done
}

func (r *LiveRenderer) poke() {
	select {
	case r.wake <- struct{}{}:
	default: // already poked; the worker will pick up the newest pending chart
	}
}

func (r *LiveRenderer) run() {
	defer close(r.done)
	var lastStart time.Time
	for {
		select {
		case <-r.wake:
		case <-r.quit:
			return
		}
		r.mu.Lock()
		interval := r.opts.MinInterval
		r.mu.Unlock()
		if wait := time.Until(lastStart.Add(interval)); !lastStart.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.quit:
				t.Stop()
				return
			}
		}
		r.mu.Lock()
		c, seq, opts := r.pending, r.pendSeq, r.opts
		r.pending = nil
		r.mu.Unlock()
		if c == nil {
			continue
		}
		lastStart = time.Now()
		f := renderFrame(c, opts)
		f.Seq = seq
		f.Took = time.Since(lastStart)
		select {
		case <-r.quit: // closed while drawing: deliver nothing
			return
		default:
		}
		r.deliver(f)
	}
}

// renderFrame builds and draws one chart; a panic in a chart builder becomes an error.
func renderFrame(c Chart, o LiveOptions) (f Frame) {
	defer func() {
		if v := recover(); v != nil {
			f = Frame{Err: errors.New("build chart: panic: " + fmtPanic(v))}
		}
	}()
	p, err := c.LimitPoints(o.WidthPx).Plot()
	if err != nil {
		return Frame{Err: err}
	}
	img, err := RenderThemed(p, o.WidthPx, o.HeightPx, o.DPI, o.Theme)
	if err != nil {
		return Frame{Err: err, Notes: Notes(p)}
	}
	return Frame{Image: img, Notes: Notes(p)}
}

func fmtPanic(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "unexpected value"
}
