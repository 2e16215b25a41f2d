package runner

import "sync"

// evQueue sits between the goroutine that produces events and the consumer's channel, so the
// pty reader never blocks on a slow consumer (a blocked reader would stall the child's writes
// and skew its timings). Memory is bounded: Line events beyond maxLineBytes of pending text
// are dropped and counted (the next delivered Line says how many), consecutive Progress events
// collapse into the latest, and the other events are bounded by the producer (rows and
// malformed reports are capped).
type evQueue struct {
	mu       sync.Mutex
	items    []Event
	head     int
	lineB    int
	maxLineB int
	dropped  int // lines dropped since the last queued line
	total    int // lines dropped in all
	closed   bool
	wake     chan struct{}
	out      chan Event
}

func newEvQueue(maxLineBytes int) *evQueue {
	q := &evQueue{maxLineB: maxLineBytes, wake: make(chan struct{}, 1), out: make(chan Event, 64)}
	go q.pump()
	return q
}

func (q *evQueue) push(ev Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	switch ev.Type {
	case EventLine:
		n := len(ev.Line.Text) + 64
		if q.lineB+n > q.maxLineB {
			q.dropped++
			q.total++
			q.mu.Unlock()
			return
		}
		q.lineB += n
		if q.dropped > 0 {
			ev.Line.Dropped = q.dropped
			q.dropped = 0
		}
	case EventProgress:
		if last := len(q.items) - 1; last >= q.head && q.items[last].Type == EventProgress {
			q.items[last] = ev
			q.mu.Unlock()
			return
		}
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close delivers what is pending, then closes the consumer's channel.
func (q *evQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *evQueue) droppedLines() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

func (q *evQueue) pump() {
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
		q.items[q.head] = Event{}
		q.head++
		if q.head > 1024 && q.head*2 > len(q.items) { // keep the dead prefix from growing
			n := copy(q.items, q.items[q.head:])
			clear(q.items[n:])
			q.items, q.head = q.items[:n], 0
		}
		if ev.Type == EventLine {
			q.lineB -= len(ev.Line.Text) + 64
		}
		q.mu.Unlock()
		q.out <- ev
	}
}
