package runner

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The generic driver: argv (no shell of ours), lines normalised, exit status classified.
func TestProcLinesAndExitStatus(t *testing.T) {
	p := StartProc(context.Background(), ProcSpec{
		Argv: []string{"/bin/sh", "-c", `printf '\033[1;32mgreen\033[0m\r\n'; printf 'a\nb'; echo "$NO_COLOR $TERM $EXTRA"; exit 3`},
		Env:  []string{"EXTRA=yes", "TERM=overridden-by-user"},
	})
	evs := collect(t, p.Events(), 10*time.Second)
	x := p.ExitStatus()
	assertGone(t, p.Pid())
	if got := lineTexts(evs); got != "green\na\nb1 overridden-by-user yes\n" {
		t.Errorf("lines %q", got)
	}
	if x.Class != ClassFailed || x.Code != 3 || !strings.Contains(x.Reason, "status 3") {
		t.Errorf("exit %+v", x)
	}
	if b := string(p.Transcript().Bytes()); !strings.Contains(b, "\x1b[1;32mgreen\x1b[0m\r\r\na\r\nb1") {
		t.Errorf("transcript not verbatim: %q", b)
	}
}

func TestProcWindowSize(t *testing.T) {
	p := StartProc(context.Background(), ProcSpec{Argv: []string{"stty", "size"}, Cols: 123, Rows: 45})
	evs := collect(t, p.Events(), 10*time.Second)
	if got := strings.TrimSpace(lineTexts(evs)); got != "45 123" {
		t.Fatalf("stty size %q", got)
	}
}

func TestProcStartTimeout(t *testing.T) {
	p := StartProc(context.Background(), ProcSpec{Argv: []string{"sleep", "30"},
		Limits: Limits{Start: 300 * time.Millisecond, Grace: time.Second}})
	collect(t, p.Events(), 10*time.Second)
	x := p.ExitStatus()
	assertGone(t, p.Pid())
	if x.Class != ClassTimeout || x.StoppedBy != StopStartTimeout || x.Duration > 3*time.Second {
		t.Fatalf("exit %+v", x)
	}
}

func TestProcTotalTimeout(t *testing.T) {
	p := StartProc(context.Background(), ProcSpec{Argv: []string{"/bin/sh", "-c", "while true; do echo tick; sleep 0.05; done"},
		Limits: Limits{Total: 400 * time.Millisecond, Grace: time.Second}})
	collect(t, p.Events(), 10*time.Second)
	x := p.ExitStatus()
	assertGone(t, p.Pid())
	if x.Class != ClassTimeout || x.StoppedBy != StopTimeout {
		t.Fatalf("exit %+v", x)
	}
}

// A child that leaves the process group (setsid) but keeps the pty open cannot hold the leg
// open: after the group is gone the driver waits a bounded time for the last bytes, then closes
// its end.
func TestProcEscapedHolderDoesNotHang(t *testing.T) {
	start := time.Now()
	p := StartProc(context.Background(), ProcSpec{Argv: []string{"/bin/sh", "-c", `setsid /bin/sh -c 'echo escaped $$; exec sleep 20' & sleep 0.2; echo leader done`}})
	evs := collect(t, p.Events(), 15*time.Second)
	took := time.Since(start)
	x := p.ExitStatus()
	var escaped int
	for _, e := range ofType(evs, EventLine) {
		if f := strings.Fields(e.Line.Text); len(f) == 2 && f[0] == "escaped" {
			escaped, _ = strconv.Atoi(f[1])
		}
	}
	if escaped > 0 {
		_ = syscall.Kill(escaped, syscall.SIGKILL)
	}
	if x.Class != ClassOK || took > drainTimeout+2*time.Second || escaped == 0 || !strings.Contains(lineTexts(evs), "leader done") {
		t.Fatalf("exit %+v after %s (escaped pid %d)\n%s", x, took, escaped, lineTexts(evs))
	}
	t.Logf("leg ended %s after start although pid %d still held the pty", took.Round(time.Millisecond), escaped)
}
