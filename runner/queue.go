package runner

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// QueueSpec is an ordered list of legs and the canary to run after a crash-class leg.
type QueueSpec struct {
	Legs   []LegSpec   `json:"legs"`
	Canary *CanarySpec `json:"canary,omitempty"`
}

// Queue runs legs one after another, never two llama.cpp processes at once (the next leg, the
// canary and their fingerprints start only after the previous process group is gone). Its
// events are its legs' events (Event.Leg set to the leg's ID) plus leg_started, leg_finished,
// canary, queue_progress, queue_halted and, last, queue_done. A flagged leg halts itself and
// the queue continues; after device_lost, crashed or oom the canary runs, and a failing canary
// halts the queue. Stop (or cancelling ctx) stops the running leg (stopped_by_user) and runs
// nothing more.
type Queue struct {
	spec  QueueSpec
	opts  []LegOption
	out   chan Event
	start time.Time

	mu      sync.Mutex
	cur     *Leg
	stopped bool
	done    chan struct{}

	results []*LegResult
	final   QueueStatus
}

// StartQueue starts running spec in the background.
func StartQueue(ctx context.Context, spec QueueSpec, opts ...LegOption) *Queue {
	q := &Queue{spec: spec, opts: opts, out: make(chan Event, 64), start: time.Now(), done: make(chan struct{})}
	if len(opts) == 0 {
		q.opts = []LegOption{WithFingerprinter(&Fingerprinter{})}
	}
	go q.run(ctx)
	return q
}

// Events is the queue's channel; closed after queue_done. The consumer must drain it.
func (q *Queue) Events() <-chan Event { return q.out }

// Done is closed when the queue has finished and every process is gone.
func (q *Queue) Done() <-chan struct{} { return q.done }

// Stop stops the running leg and the queue. Idempotent; returns when the queue has finished or
// ctx ends (keep draining Events meanwhile).
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	q.stopped = true
	cur := q.cur
	q.mu.Unlock()
	if cur != nil {
		go func() { _ = cur.Stop(context.Background()) }()
	}
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Results are the records of every leg and canary run, in order; valid after Done.
func (q *Queue) Results() []*LegResult {
	<-q.done
	return q.results
}

// Status is the queue's final word; valid after Done.
func (q *Queue) Status() QueueStatus {
	<-q.done
	return q.final
}

func (q *Queue) since() time.Duration { return time.Since(q.start) }

func (q *Queue) send(ev Event) {
	if ev.T == 0 {
		ev.T = q.since()
	}
	q.out <- ev
}

func (q *Queue) isStopped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stopped
}

func (q *Queue) run(ctx context.Context) {
	defer close(q.out)
	defer close(q.done)
	total := len(q.spec.Legs)
	st := QueueStatus{LegsTotal: total, ETA: -1}
	halt := func(c Class, reason string) {
		st.Halted, st.Class, st.Reason = true, c, reason
		st.Elapsed = q.since()
		s := st
		q.send(Event{Type: EventQueueHalted, Queue: &s})
	}
	for i, spec := range q.spec.Legs {
		if q.isStopped() || ctx.Err() != nil {
			halt(ClassStoppedByUser, fmt.Sprintf("stopped by the user before leg %d of %d", i+1, total))
			break
		}
		if spec.ID == "" {
			spec.ID = fmt.Sprintf("leg-%02d", i+1)
		}
		res := q.runLeg(ctx, spec, i, "leg")
		st.LegsDone = i + 1
		st.Elapsed = q.since()
		st.ETA = st.Elapsed / time.Duration(st.LegsDone) * time.Duration(total-st.LegsDone)
		s := st
		q.send(Event{Type: EventQueueProgress, Queue: &s})
		if res.Exit.Class == ClassStoppedByUser {
			halt(ClassStoppedByUser, fmt.Sprintf("stopped by the user during %s", spec.ID))
			break
		}
		if !res.Exit.Class.NeedsCanary() || q.spec.Canary == nil {
			continue
		}
		c := *q.spec.Canary
		c.Leg.ID = "canary-after-" + spec.ID
		cres := q.runLeg(ctx, c.Leg, -1, "canary")
		pass, reason, observed := EvaluateCanary(c, cres)
		q.send(Event{Type: EventCanary, Leg: c.Leg.ID, Canary: &Canary{ID: c.Leg.ID, After: spec.ID, Pass: pass,
			Reason: reason, Observed: observed, Baseline: c.Baseline}})
		if cres.Exit.Class == ClassStoppedByUser {
			halt(ClassStoppedByUser, fmt.Sprintf("stopped by the user during %s", c.Leg.ID))
			break
		}
		if !pass {
			halt(res.Exit.Class, fmt.Sprintf("%s ended %s (%s); %s", spec.ID, res.Exit.Class, res.Exit.Reason, reason))
			break
		}
	}
	st.Elapsed = q.since()
	if !st.Halted {
		st.ETA = 0
	}
	q.final = st
	s := st
	q.send(Event{Type: EventQueueDone, Queue: &s})
}

// runLeg runs one leg to its end, forwarding its events.
func (q *Queue) runLeg(ctx context.Context, spec LegSpec, index int, role string) *LegResult {
	q.send(Event{Type: EventLegStarted, Leg: spec.ID, LegStatus: &LegStatus{ID: spec.ID, Index: index,
		Role: role, Argv: spec.Argv()}})
	leg := StartLeg(ctx, spec, q.opts...)
	q.mu.Lock()
	q.cur = leg
	stopped := q.stopped
	q.mu.Unlock()
	if stopped {
		go func() { _ = leg.Stop(context.Background()) }()
	}
	for ev := range leg.Events() {
		ev.Leg = spec.ID
		q.out <- ev
	}
	res := leg.Result()
	q.mu.Lock()
	q.cur = nil
	q.results = append(q.results, res)
	q.mu.Unlock()
	q.send(Event{Type: EventLegFinished, Leg: spec.ID, LegStatus: &LegStatus{ID: spec.ID, Index: index,
		Role: role, Argv: res.Argv, Class: res.Exit.Class, Reason: res.Exit.Reason, Rows: len(res.Rows),
		Results: len(res.Results()), Duration: res.Exit.Duration}})
	return res
}
