package caprun

import (
	"io"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/evq"
)

// maxQueuedLineBytes bounds the server_line events waiting for a slow consumer (about a
// thousand log lines); lines beyond it are counted, not queued (the server log file has them
// all), and the next line sent says how many.
const maxQueuedLineBytes = 256 << 10

// newRunQueue is the run's event queue (runner/evq): server log lines may be dropped under a
// slow consumer, no other event is.
func newRunQueue() *evq.Queue[capacity.RunEvent] {
	return evq.New(maxQueuedLineBytes, 0, func(ev *capacity.RunEvent) (evq.Class, int) {
		if ev.Type == capacity.ServerLine {
			return evq.Line, len(ev.Line) + 64
		}
		return evq.Keep, 0
	}, func(ev *capacity.RunEvent, n int) { ev.Dropped = n })
}

// emitLine sends one server log line as a server_line event.
func (r *Run) emitLine(lifetime, text string) {
	r.emit(capacity.RunEvent{Type: capacity.ServerLine, Lifetime: lifetime, Line: text})
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
	r.q.Push(ev)
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
