package runner

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scripted answers each Read with the next step: data, an error, or both.
type scripted struct {
	steps []step
	reads int
}

type step struct {
	data string
	err  error
}

func (s *scripted) Read(p []byte) (int, error) {
	s.reads++
	if len(s.steps) == 0 {
		return 0, syscall.EIO
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return copy(p, st.data), st.err
}

// TestReadToEndDrainsPastEIO: data a pty still holds after the first EIO (a child's last line,
// written just before it exited) is read, not dropped; the stream ends after eioRetries empty
// EIO answers in a row; other errors end it at once.
func TestReadToEndDrainsPastEIO(t *testing.T) {
	run := func(steps ...step) (string, int, int) {
		r := &scripted{steps: steps}
		var got strings.Builder
		sleeps := 0
		readToEnd(r, make([]byte, 64), func(time.Duration) { sleeps++ }, func(b []byte) { got.Write(b) })
		return got.String(), r.reads, sleeps
	}
	got, reads, sleeps := run(step{"first\n", nil}, step{"", syscall.EIO}, step{"", syscall.EIO},
		step{"main: error: failed to load model\n", nil}, step{"", syscall.EIO})
	if got != "first\nmain: error: failed to load model\n" {
		t.Fatalf("read %q: the line after EIO was lost", got)
	}
	// 2 EIO before the late line, then the count starts again: eioRetries sleeps, one final read.
	if want := 4 + eioRetries + 1; reads != want || sleeps != 2+eioRetries {
		t.Fatalf("%d reads, %d sleeps; want %d reads, %d sleeps", reads, sleeps, want, 2+eioRetries)
	}
	// Data and EIO in one answer: the data counts, the count starts again.
	if got, _, _ := run(step{"tail", syscall.EIO}); got != "tail" {
		t.Fatalf("read %q", got)
	}
	for _, end := range []error{io.EOF, os.ErrDeadlineExceeded, os.ErrClosed, errors.New("other")} {
		got, reads, sleeps := run(step{"x", nil}, step{"", end}, step{"never", nil})
		if got != "x" || reads != 2 || sleeps != 0 {
			t.Errorf("%v: read %q in %d reads, %d sleeps; want it to end at once", end, got, reads, sleeps)
		}
	}
}

// TestProcKeepsTheLastLineOfAFastExit: a child that prints and exits at once, many times over;
// every run's last line arrives (the CI failure this guards lost llama-bench's last lines).
func TestProcKeepsTheLastLineOfAFastExit(t *testing.T) {
	for i := 0; i < 40; i++ {
		p := StartProc(context.Background(), ProcSpec{Argv: []string{"/bin/sh", "-c",
			"i=0; while [ $i -lt 30 ]; do echo line $i >&2; i=$((i+1)); done; echo 'main: error: the very last line' >&2; exit 1"}})
		evs := collect(t, p.Events(), 10*time.Second)
		x := p.ExitStatus()
		if x.Code != 1 || !strings.Contains(lineTexts(evs), "the very last line") {
			t.Fatalf("run %d: exit %+v, lines:\n%s", i, x, lineTexts(evs))
		}
	}
}
