package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"

	"sparkbench/runner/llamacpp"
)

// Defaults for ProcSpec and Limits fields left zero.
const (
	DefaultStartTimeout  = 2 * time.Minute  // until the first byte of output
	DefaultIdleTimeout   = 10 * time.Minute // with no byte of output
	DefaultTotalTimeout  = 12 * time.Hour   // the whole process
	DefaultGrace         = 5 * time.Second  // SIGTERM, then SIGKILL
	DefaultCols          = 160
	DefaultRows          = 50
	DefaultTranscriptCap = 8 << 20   // bytes of verbatim output kept in memory
	DefaultMaxLine       = 256 << 10 // bytes of one line kept for parsing
	DefaultEventLineCap  = 4 << 20   // bytes of Line events waiting for a slow consumer
)

// drainTimeout bounds the wait for the last bytes after the process group is gone.
const drainTimeout = 2 * time.Second

// Limits bounds every wait. Zero fields take the defaults; there is no "no limit".
type Limits struct {
	Start time.Duration `json:"start,omitempty"` // no byte of output since the start
	Idle  time.Duration `json:"idle,omitempty"`  // no byte of output for this long
	Total time.Duration `json:"total,omitempty"` // the whole run
	Grace time.Duration `json:"grace,omitempty"` // between SIGTERM and SIGKILL
}

func (l Limits) withDefaults() Limits {
	if l.Start <= 0 {
		l.Start = DefaultStartTimeout
	}
	if l.Idle <= 0 {
		l.Idle = DefaultIdleTimeout
	}
	if l.Total <= 0 {
		l.Total = DefaultTotalTimeout
	}
	if l.Grace <= 0 {
		l.Grace = DefaultGrace
	}
	return l
}

// ProcSpec says what to run and how.
type ProcSpec struct {
	Argv []string `json:"argv"` // argv[0] is the program; never a shell string
	// Env holds KEY=VALUE overrides on top of the environment, after NO_COLOR=1 and TERM=dumb.
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	Cols uint16   `json:"cols,omitempty"` // window size; default 160x50
	Rows uint16   `json:"rows,omitempty"`
	// TranscriptCap bounds the verbatim output kept in memory (default 8 MiB).
	TranscriptCap int    `json:"transcript_cap,omitempty"`
	MaxLine       int    `json:"max_line,omitempty"` // bytes of one line kept for parsing (default 256 KiB)
	Limits        Limits `json:"limits"`
	// Target, when set, is the binary whose process the driver looks for in the group while it
	// runs (Argv[0] itself, or a program a launch wrapper runs), to read its CPU affinity
	// (Proc.Affinity).
	Target string `json:"target,omitempty"`
}

// Environ is the child's environment: ours, then NO_COLOR=1 and TERM=dumb, then extra; a later
// KEY= replaces an earlier one.
func Environ(extra []string) []string {
	all := append(os.Environ(), llamacpp.QuietEnv...)
	all = append(all, extra...)
	idx := map[string]int{}
	var out []string
	for _, kv := range all {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// handler turns a process's lines into events and decides its class. Both methods run on
// the driver's goroutines, never concurrently with each other.
type handler interface {
	// onLine gets each line (reader goroutine); it emits the Line event and any others.
	onLine(p *Proc, ln Line, t time.Duration)
	// classifyInput adds what the handler knows (rows, expected rows) before classification.
	classifyInput(p *Proc, in *ClassifyInput)
	// finish completes the Exit payload after classification, before it is queued.
	finish(p *Proc, x *Exit)
}

// Proc is one process running in a pty: in its own session and process group, with
// Pdeathsig, read by one goroutine. Its events arrive on Events, which is closed after the
// Exit event. The consumer must drain Events.
type Proc struct {
	spec   ProcSpec
	limits Limits
	h      handler
	q      *evQueue
	start  time.Time
	cmd    *exec.Cmd
	master *os.File
	pid    int

	rec      *recorder
	split    *lineSplitter
	lines    int
	lastByte atomic.Int64 // ns since start of the last byte read; -1 before the first
	log      LogScanner
	watch    *affinityWatch // nil without ProcSpec.Target

	stopOnce sync.Once
	stopCh   chan struct{}
	haltCh   chan halt
	waitDone chan struct{}
	readDone chan struct{}
	done     chan struct{}

	// set by the supervisor before done is closed
	exit       Exit
	transcript *Transcript
	endTime    time.Time
}

type halt struct {
	class  Class
	reason string
}

// StartProc starts argv in a pty and returns at once; a start failure arrives as the Exit
// event (class failed). Cancelling ctx is the same as Stop.
func StartProc(ctx context.Context, spec ProcSpec) *Proc {
	return startProc(ctx, spec, &logHandler{}, nil)
}

// logHandler is the generic handler: lines out, classified by exit status and log patterns.
type logHandler struct{}

func (logHandler) onLine(p *Proc, ln Line, t time.Duration) {
	p.emit(Event{Type: EventLine, T: t, Line: &ln})
}

func (logHandler) classifyInput(*Proc, *ClassifyInput) {}
func (logHandler) finish(*Proc, *Exit)                 {}

// startProc runs spec; a non-nil refuse ends it before anything starts (class from Classify).
func startProc(ctx context.Context, spec ProcSpec, h handler, refuse error) *Proc {
	p := &Proc{
		spec:     spec,
		limits:   spec.Limits.withDefaults(),
		h:        h,
		q:        newEvQueue(DefaultEventLineCap),
		start:    time.Now(),
		stopCh:   make(chan struct{}),
		haltCh:   make(chan halt, 1),
		waitDone: make(chan struct{}),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.lastByte.Store(-1)
	p.rec = newRecorder(p.start, spec.TranscriptCap)
	p.split = newLineSplitter(spec.MaxLine)
	if refuse != nil {
		p.finishUnstarted(refuse)
		return p
	}
	if err := p.launch(); err != nil {
		p.finishUnstarted(err)
		return p
	}
	p.watch = startAffinityWatch(p.pid, spec.Target)
	go p.read()
	go func() {
		_ = p.cmd.Wait() // the status is read from ProcessState
		close(p.waitDone)
	}()
	go p.supervise(ctx)
	return p
}

func (p *Proc) launch() error {
	if len(p.spec.Argv) == 0 || p.spec.Argv[0] == "" {
		return errors.New("empty command")
	}
	cmd := exec.Command(p.spec.Argv[0], p.spec.Argv[1:]...)
	cmd.Env = Environ(p.spec.Env)
	cmd.Dir = p.spec.Dir
	cols, rows := p.spec.Cols, p.spec.Rows
	if cols == 0 {
		cols = DefaultCols
	}
	if rows == 0 {
		rows = DefaultRows
	}
	master, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: cols, Rows: rows}, sysProcAttr())
	if err != nil {
		return fmt.Errorf("%s: %w", p.spec.Argv[0], err)
	}
	p.cmd, p.master, p.pid = cmd, pollable(master), cmd.Process.Pid
	return nil
}

// pollable returns the pty master as a non-blocking, poller-backed file, so a read deadline
// (or Close) ends a Read that a leaked holder of the pty's other end would otherwise block for
// ever. On failure it returns f unchanged.
func pollable(f *os.File) *os.File {
	nfd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return f
	}
	syscall.CloseOnExec(nfd)
	if err := syscall.SetNonblock(nfd, true); err != nil {
		_ = syscall.Close(nfd)
		return f
	}
	nf := os.NewFile(uintptr(nfd), f.Name())
	if err := nf.SetReadDeadline(time.Time{}); err != nil { // not pollable after all
		_ = nf.Close()
		return f
	}
	_ = f.Close()
	return nf
}

func (p *Proc) finishUnstarted(err error) {
	p.endTime = time.Now()
	p.transcript = p.rec.transcript()
	in := ClassifyInput{StartErr: err, Log: &p.log}
	x := Exit{Code: -1}
	p.h.classifyInput(p, &in)
	x.Class, x.Reason = Classify(in)
	x.Duration = p.endTime.Sub(p.start)
	p.h.finish(p, &x)
	p.exit = x
	p.q.push(Event{Type: EventExit, T: x.Duration, Exit: &x})
	p.q.close()
	close(p.done)
}

// Events is the producer's channel: lines, samples, progress … then Exit, then closed.
func (p *Proc) Events() <-chan Event { return p.q.out }

// Pid is the process (and process group) ID; 0 if it never started.
func (p *Proc) Pid() int { return p.pid }

// Affinity is the CPU affinity read from ProcSpec.Target's process while it ran, or why none
// was read; (nil, "") without a target. Valid once the group is gone (in a handler's finish,
// or after Done).
func (p *Proc) Affinity() (*Affinity, string) {
	if p.watch == nil {
		return nil, ""
	}
	return p.watch.aff, p.watch.err
}

// WaitAffinity is Affinity while the process may still run: it waits at most d for the
// watcher to find ProcSpec.Target's process (or give up once the group is gone); done is
// false when it has not yet. Without a target: (nil, "", true).
func (p *Proc) WaitAffinity(d time.Duration) (aff *Affinity, why string, done bool) {
	if p.watch == nil {
		return nil, "", true
	}
	select {
	case <-p.watch.done:
		return p.watch.aff, p.watch.err, true
	case <-time.After(d):
		return nil, "", false
	}
}

// Argv is the command line that was run.
func (p *Proc) Argv() []string { return p.spec.Argv }

// Done is closed once the process group is gone and the Exit event is queued.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop ends the process: SIGTERM to its group, SIGKILL after the grace period. It is
// idempotent and safe from any goroutine; it returns once the group is gone (the Exit event
// is queued) or ctx ends. A process that already ended is left as it was.
func (p *Proc) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stopCh) })
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// halt asks the supervisor to end the process with the given class (a gate). Only the first
// request counts.
func (p *Proc) halt(c Class, reason string) {
	select {
	case p.haltCh <- halt{c, reason}:
	default:
	}
}

// ExitStatus is the Exit event's payload, valid after Done.
func (p *Proc) ExitStatus() Exit {
	<-p.done
	return p.exit
}

// Transcript is the verbatim output, valid after Done.
func (p *Proc) Transcript() *Transcript {
	<-p.done
	return p.transcript
}

// DroppedLines counts Line events a slow consumer missed.
func (p *Proc) DroppedLines() int { return p.q.droppedLines() }

func (p *Proc) emit(ev Event) { p.q.push(ev) }

func (p *Proc) since() time.Duration { return time.Since(p.start) }

// read is the one reader goroutine: it records verbatim bytes, splits lines and hands them to
// the handler. EIO is the pty's normal end of stream.
func (p *Proc) read() {
	defer close(p.readDone)
	buf := make([]byte, 32<<10)
	emit := func(line []byte, cut int64) {
		p.lines++
		text := string(line)
		p.log.Observe(text)
		p.h.onLine(p, Line{N: p.lines, Text: text, Cut: cut}, p.since())
	}
	readToEnd(p.master, buf, time.Sleep, func(b []byte) {
		t := p.since()
		p.lastByte.Store(int64(t))
		p.watch.output()
		p.rec.add(t, b)
		p.split.feed(b, emit)
	})
	p.split.flush(emit)
}

// eioRetries is how many more reads follow a pty's EIO, eioPause apart, before the stream
// counts as ended. A child that writes its last lines and exits at once can leave them still
// queued in the pty when the first read after its exit already answers EIO (CI lost
// llama-bench's closing "failed to load model" that way once); the reads that follow drain them.
const (
	eioRetries = 4
	eioPause   = 5 * time.Millisecond
)

// readToEnd reads r until it ends, giving each chunk to got. On a pty, EIO means "no one
// holds the other end": it is read again eioRetries times, and any data read starts the count
// again. Any other error (EOF, a deadline, a closed file) ends the stream at once.
func readToEnd(r io.Reader, buf []byte, sleep func(time.Duration), got func([]byte)) {
	left := eioRetries
	for {
		n, err := r.Read(buf)
		if n > 0 {
			got(buf[:n])
			left = eioRetries
		}
		switch {
		case err == nil:
		case errors.Is(err, syscall.EIO) && left > 0:
			if n == 0 {
				left--
				sleep(eioPause)
			}
		default:
			return
		}
	}
}

// supervise enforces the limits, handles Stop and halts, reaps the process and its group,
// classifies the end and closes the events.
func (p *Proc) supervise(ctx context.Context) {
	lim := p.limits
	var (
		cause     StopCause
		note      string
		gate      halt
		termAt    time.Time
		graceC    <-chan time.Time
		escalated bool
	)
	terminate := func(c StopCause, why string) {
		if cause != StopNone {
			return
		}
		cause, note, termAt = c, why, time.Now()
		p.signalGroup(syscall.SIGTERM)
		graceC = time.After(lim.Grace)
	}
	tickEvery := min(max(min(lim.Idle, lim.Start)/20, 10*time.Millisecond), time.Second)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	total := time.NewTimer(lim.Total)
	defer total.Stop()
	ctxDone := ctx.Done()
	stopCh := p.stopCh
loop:
	for {
		select {
		case <-p.waitDone:
			break loop
		case <-ctxDone:
			ctxDone = nil
			terminate(StopUser, "")
		case <-stopCh:
			stopCh = nil
			terminate(StopUser, "")
		case h := <-p.haltCh:
			gate = h
			terminate(StopGate, h.reason)
		case <-total.C:
			terminate(StopTimeout, fmt.Sprintf("ran longer than the overall limit of %s", lim.Total))
		case <-tick.C:
			lb := p.lastByte.Load()
			now := p.since()
			switch {
			case lb < 0 && now > lim.Start:
				terminate(StopStartTimeout, fmt.Sprintf("no output within %s of the start", lim.Start))
			case lb >= 0 && now-time.Duration(lb) > lim.Idle:
				terminate(StopIdleTimeout, fmt.Sprintf("no output for %s (idle limit)", lim.Idle))
			}
		case <-graceC:
			graceC = nil
			escalated = true
			p.signalGroup(syscall.SIGKILL)
		}
	}
	// The leader is reaped. Whatever else is left in its group (children it forked) goes too:
	// SIGTERM, the rest of the grace period, SIGKILL.
	if groupAlive(p.pid) {
		if termAt.IsZero() {
			termAt = time.Now()
			p.signalGroup(syscall.SIGTERM)
		}
		deadline := termAt.Add(lim.Grace)
		for groupAlive(p.pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if groupAlive(p.pid) {
			escalated = true
			p.signalGroup(syscall.SIGKILL)
			for end := time.Now().Add(drainTimeout); groupAlive(p.pid) && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	p.watch.end()
	// Read what is still buffered; EIO ends the reader once no one holds the pty's other end.
	// A process that escaped the group could hold it open: close our end after a bound.
	select {
	case <-p.readDone:
	case <-time.After(drainTimeout):
		_ = p.master.SetReadDeadline(time.Now())
		_ = p.master.Close()
		select {
		case <-p.readDone:
		case <-time.After(drainTimeout):
		}
	}
	_ = p.master.Close()
	p.endTime = time.Now()

	x := Exit{Code: -1, StoppedBy: cause, Escalated: escalated, Duration: p.endTime.Sub(p.start)}
	in := ClassifyInput{Cause: cause, CauseNote: note, GateClass: gate.class, GateReason: gate.reason,
		Escalated: escalated, Log: &p.log}
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				in.Signal = ws.Signal()
				x.Signal = SignalName(ws.Signal())
			case ws.Exited():
				x.Code = ws.ExitStatus()
				in.Code = x.Code
			}
		}
		x.PeakRSS = peakRSS(st)
	}
	p.transcript = p.snapshotAfterRead()
	p.h.classifyInput(p, &in)
	x.Class, x.Reason = Classify(in)
	p.h.finish(p, &x)
	p.exit = x
	p.q.push(Event{Type: EventExit, T: x.Duration, Exit: &x})
	p.q.close()
	close(p.done)
}

// snapshotAfterRead returns the transcript once the reader has finished (it owns the
// recorder); if the reader is stuck, an empty transcript with a note.
func (p *Proc) snapshotAfterRead() *Transcript {
	select {
	case <-p.readDone:
		return p.rec.transcript()
	default:
		return &Transcript{Start: p.start, Cap: p.rec.capB, Records: []Record{{T: p.since(),
			Data: []byte("[sparkbench: the pty reader did not finish; transcript unavailable]")}}}
	}
}

func (p *Proc) signalGroup(sig syscall.Signal) {
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, sig)
	}
}
