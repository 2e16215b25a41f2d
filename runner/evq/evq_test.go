package evq

import (
	"fmt"
	"testing"
	"time"
)

type ev struct {
	kind    string // "line", "progress", "state"
	text    string
	dropped int
}

func newTestQueue(budget, buffer int) *Queue[ev] {
	return New(budget, buffer, func(e *ev) (Class, int) {
		switch e.kind {
		case "line":
			return Line, len(e.text)
		case "progress":
			return Progress, 0
		}
		return Keep, 0
	}, func(e *ev, n int) { e.dropped = n })
}

func drain(t *testing.T, q *Queue[ev]) []ev {
	t.Helper()
	var out []ev
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-q.Out():
			if !ok {
				return out
			}
			out = append(out, e)
		case <-timeout:
			t.Fatal("the queue never closed")
		}
	}
}

// A consumer that is not reading: lines past the budget are dropped and the next delivered
// line says how many; progress collapses into the latest; no state change is lost, and the
// order is kept. Close delivers what is pending, then closes the channel.
func TestQueueBoundsLinesKeepsStates(t *testing.T) {
	q := newTestQueue(10, 0) // room for two 5-byte lines while nobody reads
	q.Push(ev{kind: "state", text: "started"})
	for i := 0; i < 5; i++ {
		q.Push(ev{kind: "line", text: fmt.Sprintf("line%d", i)})
	}
	q.Push(ev{kind: "progress", text: "1/3"})
	q.Push(ev{kind: "progress", text: "2/3"})
	q.Push(ev{kind: "state", text: "halted"})
	q.Push(ev{kind: "progress", text: "3/3"})
	var first []ev
	for len(first) < 3 { // started, line0, line1: the budget is free again
		first = append(first, <-q.Out())
	}
	q.Push(ev{kind: "line", text: "late"})
	q.Close()
	q.Push(ev{kind: "state", text: "after close"}) // ignored
	got := append(first, drain(t, q)...)
	var words []string
	for _, e := range got {
		words = append(words, fmt.Sprintf("%s:%s/%d", e.kind, e.text, e.dropped))
	}
	want := "[state:started/0 line:line0/0 line:line1/0 progress:2/3/0 state:halted/0 progress:3/3/0 line:late/3]"
	if fmt.Sprint(words) != want {
		t.Fatalf("delivered %v\nwant      %s", words, want)
	}
	if n := q.DroppedLines(); n != 3 {
		t.Fatalf("%d lines dropped in all, want 3", n)
	}
}

// Many events through a buffered queue with a reading consumer: all of them, in order.
func TestQueueDeliversEverythingToAReader(t *testing.T) {
	q := newTestQueue(1<<20, 8)
	go func() {
		for i := 0; i < 5000; i++ {
			q.Push(ev{kind: "state", text: fmt.Sprint(i)})
		}
		q.Close()
	}()
	got := drain(t, q)
	if len(got) != 5000 {
		t.Fatalf("%d events, want 5000", len(got))
	}
	for i, e := range got {
		if e.text != fmt.Sprint(i) {
			t.Fatalf("event %d is %q: out of order", i, e.text)
		}
	}
}
