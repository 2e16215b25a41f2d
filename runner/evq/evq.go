// Package evq is the one event queue between a producer that must never block (a pty reader,
// a server's log writer, a run's goroutines) and a consumer's channel. Memory is bounded and
// no state change is lost: output lines beyond a byte budget are dropped and counted (the
// next delivered line says how many), consecutive progress events collapse into the latest,
// and every other event is delivered, in order. It starts no process.
package evq

import "sync"

// Class says how the queue treats an event.
type Class int

const (
	Keep     Class = iota // a state change: always delivered, in order
	Line                  // an output line: dropped (and counted) past the line budget
	Progress              // replaces a progress event queued right before it
)

// Queue is one producer-to-consumer queue of events of type E.
type Queue[E any] struct {
	mu       sync.Mutex
	items    []E
	head     int
	lineB    int
	maxLineB int
	dropped  int // lines dropped since the last queued line
	total    int // lines dropped in all
	closed   bool
	wake     chan struct{}
	out      chan E
	classify func(*E) (Class, int)
	dropMark func(*E, int)
}

// New starts a queue. classify gives an event's class and, for a line, the bytes it holds
// against maxLineBytes; dropMark records on a delivered line how many lines before it were
// dropped. buffer is the consumer channel's capacity.
func New[E any](maxLineBytes, buffer int, classify func(*E) (Class, int), dropMark func(*E, int)) *Queue[E] {
	q := &Queue[E]{maxLineB: maxLineBytes, wake: make(chan struct{}, 1), out: make(chan E, buffer),
		classify: classify, dropMark: dropMark}
	go q.pump()
	return q
}

// Out is the consumer's channel: every event pushed (less dropped lines), then closed.
func (q *Queue[E]) Out() <-chan E { return q.out }

// Push queues ev without blocking; after Close it is ignored.
func (q *Queue[E]) Push(ev E) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	class, n := q.classify(&ev)
	switch class {
	case Line:
		if q.lineB+n > q.maxLineB {
			q.dropped++
			q.total++
			q.mu.Unlock()
			return
		}
		q.lineB += n
		if q.dropped > 0 {
			q.dropMark(&ev, q.dropped)
			q.dropped = 0
		}
	case Progress:
		if last := len(q.items) - 1; last >= q.head {
			if c, _ := q.classify(&q.items[last]); c == Progress {
				q.items[last] = ev
				q.mu.Unlock()
				return
			}
		}
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Close delivers what is pending, then closes the consumer's channel.
func (q *Queue[E]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// DroppedLines counts the lines dropped in all.
func (q *Queue[E]) DroppedLines() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

func (q *Queue[E]) pump() {
	var zero E
	for {
		q.mu.Lock()
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
			if q.closed {
				q.mu.Unlock()
				close(q.out)
				return
			}
			q.mu.Unlock()
			<-q.wake
			continue
		}
		ev := q.items[q.head]
		q.items[q.head] = zero
		q.head++
		if q.head > 1024 && q.head*2 > len(q.items) { // keep the dead prefix from growing
			n := copy(q.items, q.items[q.head:])
			clear(q.items[n:])
			q.items, q.head = q.items[:n], 0
		}
		if c, n := q.classify(&ev); c == Line {
			q.lineB -= n
		}
		q.mu.Unlock()
		q.out <- ev
	}
}
