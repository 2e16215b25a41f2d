package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultInterval is the sampling interval when a plan sets none.
const DefaultInterval = 250 * time.Millisecond

// MinInterval is the shortest interval a plan may set.
const MinInterval = 10 * time.Millisecond

// maxSamples bounds what one Sampler keeps (about 14 hours of 4 sources at 100 ms); later
// samples are counted in Dropped, never kept.
const maxSamples = 2 << 20

// stopWait bounds how long Stop waits for a source still inside a read (a command's own bound
// ends it; this keeps Stop bounded whatever a source does).
const stopWait = 3 * time.Second

// Sampler reads each source in a goroutine of its own, once at the start, then every interval,
// then once more when stopped, and keeps the samples with their time since the start. The leg
// never waits on it: nothing it does is on the leg's path.
type Sampler struct {
	start    time.Time
	interval time.Duration
	now      func() time.Time
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopped  chan struct{}

	notify func(Sample) // nil: nobody watches the samples as they come

	mu      sync.Mutex
	samples []Sample
	dropped int
	gone    map[string]string
	active  map[string]bool
	closed  bool
}

// Start starts sampling sources every interval (DefaultInterval when zero).
func Start(sources []Source, interval time.Duration) *Sampler {
	return StartAt(sources, interval, time.Now)
}

// StartNotify is Start that also hands each sample kept to notify as soon as it is read, on
// the source's own goroutine (the window's live readings); notify must return quickly.
func StartNotify(sources []Source, interval time.Duration, notify func(Sample)) *Sampler {
	return startAt(sources, interval, time.Now, notify)
}

// StartAt is Start with a clock (tests).
func StartAt(sources []Source, interval time.Duration, now func() time.Time) *Sampler {
	return startAt(sources, interval, now, nil)
}

func startAt(sources []Source, interval time.Duration, now func() time.Time, notify func(Sample)) *Sampler {
	if interval <= 0 {
		interval = DefaultInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{start: now(), interval: interval, now: now, cancel: cancel, stopped: make(chan struct{}),
		gone: map[string]string{}, active: map[string]bool{}, notify: notify}
	for _, src := range sources {
		s.active[src.Name()] = true
		s.wg.Add(1)
		go s.loop(ctx, src)
	}
	return s
}

func (s *Sampler) loop(ctx context.Context, src Source) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.active, src.Name())
		s.mu.Unlock()
	}()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		if !s.read(ctx, src) {
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			s.read(context.Background(), src) // the closing reading brackets the window
			return
		}
	}
}

// read takes one sample; false when the source is gone.
func (s *Sampler) read(ctx context.Context, src Source) bool {
	pts, err := src.Read(ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	// The time is taken under the lock, so samples from several sources are kept in the
	// order of their times (two sources finishing a read together could otherwise append
	// the later time first).
	at := s.now()
	smp := Sample{Source: src.Name(), T: at.Sub(s.start), At: at, Points: pts}
	if err != nil {
		smp.Err = err.Error()
	}
	kept := len(s.samples) < maxSamples
	if kept {
		s.samples = append(s.samples, smp)
	} else {
		s.dropped++
	}
	gone := errors.Is(err, ErrGone)
	if gone {
		s.gone[src.Name()] = err.Error()
	}
	s.mu.Unlock()
	if kept && s.notify != nil {
		s.notify(smp)
	}
	return !gone
}

// Stop ends sampling (each source reads once more) and returns the samples in the order they
// were taken. It waits at most a few seconds for a source still inside a read; what such a
// source reads later is not kept.
func (s *Sampler) Stop() []Sample {
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopWait):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for name := range s.active { // still inside a read: never asked again
		s.gone[name] = name + ": still inside a read " + stopWait.String() + " after the leg ended"
	}
	return append([]Sample(nil), s.samples...)
}

// Gone lists the sources that stopped during the run, with why.
func (s *Sampler) Gone() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.gone))
	for k, v := range s.gone {
		out[k] = v
	}
	return out
}

// Dropped counts samples not kept beyond the cap.
func (s *Sampler) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Started returns when sampling started (the zero of every sample's T).
func (s *Sampler) Started() time.Time { return s.start }
