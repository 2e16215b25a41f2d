package ui

import (
	"sync"
	"time"

	"fyne.io/fyne/v2/widget"
)

// Throttle coalesces UI updates from background goroutines: at most one update per interval
// reaches the UI goroutine, always the latest one submitted ("latest wins"), and the last one
// is never lost. A run view's text (progress, rows, gates, console) uses textInterval (every
// 3 s) and its chart chartInterval (a new frame at most every 3 s, shown with the next text
// update: ChartView.Hold): within the 10 Hz and 4 Hz ceilings. Each update repaints the whole
// window, and a chart frame is a new texture: under a software renderer that is most of what
// the window adds to a run (scripts/gui-cost.sh, docs/window.md has the figures).
type Throttle struct {
	interval time.Duration
	run      func(func()) // hops onto the UI goroutine (onUI in the app, inline in tests)

	mu      sync.Mutex
	pending func()
	timer   *time.Timer
	last    time.Time
	stopped bool
}

// The run views' update intervals (measured: scripts/gui-cost.sh).
const (
	textInterval  = 3 * time.Second
	chartInterval = 3 * time.Second
	// capTextInterval is the capacity panel's: its events are few (a cell lasts seconds) and
	// each one fills in the envelope.
	capTextInterval = 500 * time.Millisecond
)

// etaText is an ETA as precise as it is useful: to the second under a minute, to 5 s under 10
// minutes, to the minute beyond (a label that changes less repaints the window less).
func etaText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 10*time.Minute:
		return d.Round(5 * time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// NewThrottle returns a throttle delivering through onUI.
func NewThrottle(interval time.Duration) *Throttle {
	return &Throttle{interval: interval, run: onUI}
}

// Submit replaces the pending update with f and schedules delivery.
func (t *Throttle) Submit(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.pending = f
	if t.timer != nil {
		return // a delivery is already scheduled; it will take the latest f
	}
	wait := t.interval - time.Since(t.last)
	if wait < 0 {
		wait = 0
	}
	t.timer = time.AfterFunc(wait, t.fire)
}

func (t *Throttle) fire() {
	t.mu.Lock()
	f := t.pending
	t.pending, t.timer = nil, nil
	t.last = time.Now()
	stopped := t.stopped
	t.mu.Unlock()
	if f != nil && !stopped {
		t.run(f)
	}
}

// Stop drops any pending update and refuses new ones (the view is gone).
func (t *Throttle) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.pending = nil
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// setText and setProgress change a widget only when its value changes: every change repaints
// the window, and a run's events often leave the text as it was.
func setText(l *widget.Label, text string) {
	if l.Text != text {
		l.SetText(text)
	}
}

func setProgress(b *widget.ProgressBar, value float64) {
	if b.Value != value {
		b.SetValue(value)
	}
}
