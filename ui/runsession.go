package ui

import (
	"context"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// runSession is a run view's one run at a time, shared by the throughput and the capacity run
// views: which study runs (running, 0: none), how to stop it (cancel), and the start and end
// both views show alike. mu also guards the view's live state.
type runSession struct {
	mu       sync.Mutex
	running  int64
	cancel   context.CancelFunc
	notified *fyne.Notification // the last run's end notification
	// ended, when set, runs on the UI goroutine after each run has ended and its view shows it
	// (the Studies section reads its list again: a study's state there is never stale).
	ended func(id int64)
}

// Notified is the notification the last run's end sent (nil before one ended).
func (s *runSession) Notified() *fyne.Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notified
}

// claim makes id the view's running study unless one runs already (then it does nothing and
// ok is false); reset clears the view's live state under the same lock. Cancelling the
// returned context is Abort.
func (s *runSession) claim(id int64, reset func()) (ctx context.Context, cancel context.CancelFunc, ok bool) {
	ctx, cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != 0 {
		cancel()
		return nil, nil, false
	}
	s.running, s.cancel = id, cancel
	reset()
	return ctx, cancel, true
}

// Running says whether the view's study is running.
func (s *runSession) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running != 0
}

// Abort stops the running study (no confirmation).
func (s *runSession) Abort() {
	s.mu.Lock()
	c := s.cancel
	s.mu.Unlock()
	if c != nil {
		c()
	}
}

// runDisplay is what a run view shows of its run: the progress bar and its message, the tabs
// (the live one second), and the app that notifies the end.
type runDisplay struct {
	app      fyne.App
	progress *widget.ProgressBar
	msg      *widget.Label
	tabs     *container.AppTabs
}

// launch shows the claimed run starting (the progress at 0 with starting, the live tab), runs
// work in the background and then, on the UI goroutine, releases the session (cancel is the
// claim's), hides the progress, shows and notifies under the study's name the message that
// work's finish gives (called on the UI goroutine), the notification led by work's headline
// (the study's figure after the run; "" for none), and calls after.
func (s *runSession) launch(d runDisplay, cancel context.CancelFunc, name, starting string, work func() (finish func() string, headline string), after func()) {
	s.mu.Lock()
	id := s.running
	s.mu.Unlock()
	d.progress.SetValue(0)
	d.progress.Show()
	d.msg.SetText(starting)
	d.tabs.SelectIndex(1) // the live view fills in while it runs
	go func() {
		finish, headline := work()
		cancel()
		onUI(func() {
			s.mu.Lock()
			s.running, s.cancel = 0, nil
			s.mu.Unlock()
			d.progress.Hide()
			msg := finish()
			d.msg.SetText(msg)
			note := msg
			if headline != "" { // the study's figure, when the run left one
				note = headline + "\n" + msg
			}
			n := fyne.NewNotification("sparkbench: "+name, note)
			s.mu.Lock()
			s.notified = n
			s.mu.Unlock()
			d.app.SendNotification(n)
			after()
			if s.ended != nil {
				s.ended(id)
			}
		})
	}()
}
