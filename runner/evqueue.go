package runner

import "sparkbench/runner/evq"

// evQueue sits between the goroutine that produces a leg's events and the consumer's
// channel, so the pty reader never blocks on a slow consumer (a blocked reader would stall the
// child's writes and skew its timings): Line events beyond maxLineBytes of pending text are
// dropped and counted (the next delivered Line says how many), consecutive Progress events
// collapse into the latest, the others are bounded by the producer (rows and malformed
// reports are capped). It is runner/evq's queue of Events.
type evQueue struct {
	q   *evq.Queue[Event]
	out <-chan Event
}

func newEvQueue(maxLineBytes int) *evQueue {
	q := evq.New(maxLineBytes, 64, classifyEvent, func(ev *Event, n int) { ev.Line.Dropped = n })
	return &evQueue{q: q, out: q.Out()}
}

// classifyEvent: a line holds its text (and 64 bytes of overhead) against the budget.
func classifyEvent(ev *Event) (evq.Class, int) {
	switch ev.Type {
	case EventLine:
		return evq.Line, len(ev.Line.Text) + 64
	case EventProgress:
		return evq.Progress, 0
	}
	return evq.Keep, 0
}

func (q *evQueue) push(ev Event)     { q.q.Push(ev) }
func (q *evQueue) close()            { q.q.Close() }
func (q *evQueue) droppedLines() int { return q.q.DroppedLines() }
