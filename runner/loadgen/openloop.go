package loadgen

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// DefaultMaxInFlight bounds the open-loop requests in flight when Config.MaxInFlight is zero.
const DefaultMaxInFlight = 1024

// conns is the number of connections the run may hold: Clients in a closed loop, the
// in-flight bound in an open one.
func (a *Attack) conns() int {
	if a.cfg.Schedule == nil {
		return a.cfg.Clients
	}
	return max(a.cfg.Clients, a.maxInFlight())
}

func (a *Attack) maxInFlight() int {
	if a.cfg.MaxInFlight > 0 {
		return a.cfg.MaxInFlight
	}
	return DefaultMaxInFlight
}

func (c Config) checkSchedule() error {
	if c.Schedule == nil {
		if c.MaxInFlight != 0 {
			return errors.New("max in-flight is for an open-loop schedule; there is none")
		}
		return nil
	}
	if c.Follows != nil {
		if err := c.checkFollows(); err != nil {
			return err
		}
	} else if len(c.Schedule) != c.Measured {
		return fmt.Errorf("schedule has %d send times for %d measured requests: want one each", len(c.Schedule), c.Measured)
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("max in-flight %d: want at least 1 (0: %d)", c.MaxInFlight, DefaultMaxInFlight)
	}
	prev := time.Duration(0)
	for k, d := range c.Schedule {
		if d < prev {
			return fmt.Errorf("schedule: send %d at %v is before send %d at %v; want non-decreasing offsets", k, d, k-1, prev)
		}
		prev = d
	}
	return nil
}

// open runs requests [from, to) on the schedule: request from+k is due at the phase's start
// plus Schedule[k], sent from its own goroutine whether or not earlier ones ended, once a slot
// of the in-flight bound is free. The dispatcher sleeps to each due time (and spins its last
// stretch), so a late send is the client's or the bound's, and is recorded as such.
func (a *Attack) open(from, to int) {
	if a.cfg.Follows != nil {
		a.openConversations(from, to)
		return
	}
	t0 := a.since()
	slots := make(chan struct{}, a.maxInFlight())
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := from; i < to; i++ {
		due := t0 + a.cfg.Schedule[i-from]
		if !a.sleepUntil(timer, due) {
			a.unsent(i, due)
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-a.ctx.Done():
			a.unsent(i, due)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.do(i)
			<-slots
			r.Scheduled = due
			if r.Send < due { // a clock read before the due time cannot happen; keep the order sane
				r.Send = due
			}
			a.results <- r
		}()
	}
	wg.Wait()
}

// spinWindow is how long before a due time the dispatcher stops sleeping and polls the clock:
// Go's timers may fire tens of microseconds late, which at thousands of requests per second
// is a visible part of the gap.
const spinWindow = 50 * time.Microsecond

// sleepUntil waits until due on the run's clock; false when the run was stopped first.
func (a *Attack) sleepUntil(t *time.Timer, due time.Duration) bool {
	if d := due - a.since() - spinWindow; d > 0 {
		t.Reset(d)
		select {
		case <-t.C:
		case <-a.ctx.Done():
			return false
		}
	}
	for a.since() < due {
		if a.ctx.Err() != nil {
			return false
		}
		runtime.Gosched()
	}
	return a.ctx.Err() == nil
}

// unsent reports an open-loop request the run's end kept from being sent.
func (a *Attack) unsent(i int, due time.Duration) {
	r := a.shell(i)
	r.Scheduled = due
	r.Send = max(a.since(), due)
	r.End, r.NotSent = r.Send, true
	r.Error = "not sent: " + causeText(a.ctx)
	a.results <- r
}
