package loadgen

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// checkFollows checks Config.Follows: one entry per measured request, each an earlier request
// or -1, no request followed twice, and one schedule offset per first turn.
func (c Config) checkFollows() error {
	if c.Schedule == nil {
		return errors.New("follows is for an open-loop schedule; there is none")
	}
	if len(c.Follows) != c.Measured {
		return fmt.Errorf("follows has %d entries for %d measured requests: want one each", len(c.Follows), c.Measured)
	}
	firsts := 0
	taken := map[int]bool{}
	for k, f := range c.Follows {
		switch {
		case f == -1:
			firsts++
		case f < 0 || f >= k:
			return fmt.Errorf("follows[%d] = %d: want an earlier request, or -1 for a first turn", k, f)
		case taken[f]:
			return fmt.Errorf("follows[%d] = %d: request %d is already followed by another", k, f, f)
		default:
			taken[f] = true
		}
	}
	if len(c.Schedule) != firsts {
		return fmt.Errorf("schedule has %d send times for %d first turns: want one each", len(c.Schedule), firsts)
	}
	return nil
}

// openConversations runs measured requests [from, to) as conversations: first turns on the
// schedule (as open does), each conversation's later turns from its own goroutine, each sent
// as soon as the turn before it ended, within the in-flight bound.
func (a *Attack) openConversations(from, to int) {
	t0 := a.since()
	next := make([]int, to-from)
	for k := range next {
		next[k] = -1
	}
	for k, f := range a.cfg.Follows {
		if f >= 0 {
			next[f] = k
		}
	}
	slots := make(chan struct{}, a.maxInFlight())
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	j := 0
	for k := range to - from {
		if a.cfg.Follows[k] >= 0 {
			continue
		}
		due := t0 + a.cfg.Schedule[j]
		j++
		if !a.sleepUntil(timer, due) {
			a.unsentChain(from, next, k, due, "not sent: "+causeText(a.ctx))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.conversation(from, next, k, due, slots)
		}()
	}
	wg.Wait()
}

// conversation sends turn k (due at due) and the turns after it, one at a time.
func (a *Attack) conversation(from int, next []int, k int, due time.Duration, slots chan struct{}) {
	for {
		select {
		case slots <- struct{}{}:
		case <-a.ctx.Done():
			a.unsentChain(from, next, k, due, "not sent: "+causeText(a.ctx))
			return
		}
		r := a.do(from + k)
		<-slots
		r.Scheduled = due
		if r.Send < due {
			r.Send = due
		}
		a.results <- r
		if k = next[k]; k < 0 {
			return
		}
		if !r.OK() {
			why := r.Error
			if why == "" {
				why = fmt.Sprintf("HTTP %d", r.HTTPStatus)
			}
			a.unsentChain(from, next, k, r.End, fmt.Sprintf("not sent: the turn before it (request %d) got no reply (%s)", r.Index, why))
			return
		}
		due = r.End
	}
}

// unsentChain reports turn k and every turn after it as not sent.
func (a *Attack) unsentChain(from int, next []int, k int, due time.Duration, why string) {
	for ; k >= 0; k = next[k] {
		r := a.shell(from + k)
		r.Scheduled = due
		r.Send = max(a.since(), due)
		r.End, r.NotSent, r.Error = r.Send, true, why
		a.results <- r
	}
}
