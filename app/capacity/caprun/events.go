package caprun

import (
	"io"
	"strings"
	"sync"
	"time"

	"sparkbench/app/capacity"
)

// maxQueuedLines bounds the server_line events waiting for a slow consumer; lines beyond it
// are counted, not queued (the server log file has them all).
const maxQueuedLines = 1000

// emitLine sends one server log line as a server_line event, unless the queue is backed up.
func (r *Run) emitLine(lifetime, text string) {
	r.q.mu.Lock()
	backed := len(r.q.items) >= maxQueuedLines
	r.q.mu.Unlock()
	r.mu.Lock()
	if backed {
		r.droppedLines++
		r.mu.Unlock()
		return
	}
	dropped := r.droppedLines
	r.droppedLines = 0
	r.mu.Unlock()
	r.emit(capacity.RunEvent{Type: capacity.ServerLine, Lifetime: lifetime, Line: text, Dropped: dropped})
}

// logLines is the server log's writer: every line goes to the file and, as an event, to the
// run's consumer. The server writes one line with its "\n" per call, from one goroutine.
type logLines struct {
	f        io.Writer
	r        *Run
	lifetime string
}

func (l logLines) Write(p []byte) (int, error) {
	n, err := l.f.Write(p)
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.r.emitLine(l.lifetime, line)
	}
	return n, err
}

func (r *Run) emit(ev capacity.RunEvent) {
	r.mu.Lock()
	ev.T = time.Since(r.start)
	r.prog.Elapsed = ev.T
	ev.Progress = r.prog
	r.mu.Unlock()
	r.q.push(ev)
}

// advance updates the counts and the ETA: the mean time per cell this run measured times the
// cells left (server starts included, as they recur with the lifetimes).
func (r *Run) advance(cells, lifetimes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prog.CellsDone += cells
	r.prog.LifetimesDone += lifetimes
	el := time.Since(r.start)
	if n := r.prog.CellsDone - r.prog.CellsKept; n > 0 {
		per := el / time.Duration(n)
		r.prog.ETA = per * time.Duration(r.prog.CellsTotal-r.prog.CellsDone)
	}
}

func clipText(s string) string {
	if len(s) > capacity.MaxEventErrorLen {
		return s[:capacity.MaxEventErrorLen] + "…"
	}
	return s
}

// runQueue is an unbounded FIFO in front of the events channel: the run never waits for its
// consumer, and no event is dropped.
type runQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []capacity.RunEvent
	closed bool
	out    chan capacity.RunEvent
}

func newRunQueue() *runQueue {
	q := &runQueue{out: make(chan capacity.RunEvent)}
	q.cond = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

func (q *runQueue) push(ev capacity.RunEvent) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *runQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *runQueue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.items) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.items[0]
		q.items[0] = capacity.RunEvent{}
		q.items = q.items[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}
