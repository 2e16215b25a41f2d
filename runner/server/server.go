// Package server runs llama-server for one server lifetime of a capacity study: on a free
// port of 127.0.0.1 only, through the runner's pty driver (its own process group, Pdeathsig,
// SIGTERM → grace → SIGKILL), with its log captured at a level that shows the backend's
// buffers, /health polled under a start timeout, backend evidence parsed from the last model
// load, and the peak RSS read from /proc/PID/status just before the stop.
//
//	srv, err := server.Start(ctx, server.Spec{Binary: loc.Server, Args: lifetime.Args, Log: logFile})
//	// *StartError: never healthy (timeout, load failure, …); the log holds what it said
//	… load srv.URL() …
//	st := srv.Stop(ctx)   // st.RSS (VmHWM), st.Exit, st.Evidence
//
// Every wait is bounded. Nothing here binds anything but 127.0.0.1.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sparkbench/runner"
)

// Host is the only address the server is ever told to bind.
const Host = "127.0.0.1"

// Defaults for Spec fields left zero.
const (
	DefaultStartTimeout   = 5 * time.Minute // until /health answers 200
	DefaultGrace          = 5 * time.Second // SIGTERM, then SIGKILL
	DefaultIdle           = 12 * time.Hour  // no log line for this long: the server is stopped
	DefaultTotal          = 48 * time.Hour  // one lifetime, at most
	DefaultPortAttempts   = 3               // ports tried when the bind fails
	DefaultHealthInterval = 25 * time.Millisecond
	healthTimeout         = 2 * time.Second // one /health request
	maxHealthInterval     = 250 * time.Millisecond
)

// DefaultLogLevel is added when the flags set no log level: info level, where llama.cpp logs
// the model, KV and compute buffer sizes per device (the default level shows none of them;
// -v adds each layer's device, at about 25 log lines per generated token).
var DefaultLogLevel = []string{"-lv", "4"}

// BindFailure is llama-server's message when its port is taken.
const BindFailure = "couldn't bind HTTP server socket"

// Spec says how to run one llama-server lifetime.
type Spec struct {
	Binary string   // path of llama-server
	Args   []string // -m MODEL --parallel P --ctx-size N and the candidate's flags; never --host/--port
	Env    []string // KEY=VALUE overrides (after NO_COLOR=1, TERM=dumb)
	Dir    string   // working directory; empty: ours
	// Port to try first; 0 picks a free one. When the bind fails anyway (another program took
	// the port in between) the next attempt takes another free port.
	Port         int
	PortAttempts int           // default 3
	StartTimeout time.Duration // process start to /health 200, per attempt; default 5 min
	Grace        time.Duration // SIGTERM → SIGKILL; default 5 s
	Idle         time.Duration // no log output for this long stops it; default 12 h
	Total        time.Duration // the whole lifetime; default 48 h
	// HealthInterval is the first /health poll interval (it grows to 250 ms); default 25 ms.
	HealthInterval time.Duration
	// Wrapper is a launch wrapper's argv (e.g. taskset -c 0): each attempt starts Wrapper then
	// Argv(port), argv only, in the same pty and process group (runner.LegSpec.Wrapper); the
	// attempt records its launch and llama-server's affinity (Attempt.Launch). Empty: none.
	Wrapper []string
	// Markers are checked against the last load block (Evidence.Markers).
	Markers Markers
	// Remote, when set, runs llama-server on a bench host (remote.go): Binary is its path there,
	// the clients use a forwarded local port. Wrapper must be empty then.
	Remote Remote
	// Log receives every log line (CR and ANSI removed) with "\n", of every attempt, as it
	// arrives; it is written from one goroutine. Nil: lines are only scanned.
	Log io.Writer
}

func (s Spec) withDefaults() Spec {
	if s.PortAttempts <= 0 {
		s.PortAttempts = DefaultPortAttempts
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	if s.Grace <= 0 {
		s.Grace = DefaultGrace
	}
	if s.Idle <= 0 {
		s.Idle = DefaultIdle
	}
	if s.Total <= 0 {
		s.Total = DefaultTotal
	}
	if s.HealthInterval <= 0 {
		s.HealthInterval = DefaultHealthInterval
	}
	return s
}

// controlled are the flags the server package sets itself.
var controlled = map[string]bool{"--host": true, "--port": true}

// logLevelFlags set llama.cpp's log verbosity.
var logLevelFlags = map[string]bool{"-v": true, "--verbose": true, "--log-verbose": true,
	"-lv": true, "--verbosity": true, "--log-verbosity": true}

func flagName(a string) string {
	name, _, _ := strings.Cut(a, "=")
	return name
}

// Argv is the command line of one attempt: the binary, the spec's arguments, -lv 4 when they
// set no log level, then --host 127.0.0.1 --port PORT.
func (s Spec) Argv(port int) []string {
	argv := append([]string{s.Binary}, s.Args...)
	level := false
	for _, a := range s.Args {
		if logLevelFlags[flagName(a)] {
			level = true
		}
	}
	if !level {
		argv = append(argv, DefaultLogLevel...)
	}
	return append(argv, "--host", Host, "--port", strconv.Itoa(port))
}

// StartError says why no healthy server came up. The log (Spec.Log) holds what llama-server
// said; Exit is the last attempt's exit (PeakRSS from wait4).
type StartError struct {
	Class    runner.Class // timeout (never healthy), load_failed, bad_args, oom, failed …
	Reason   string
	Attempts []Attempt
	Exit     runner.Exit
	Evidence Evidence
}

func (e *StartError) Error() string {
	return fmt.Sprintf("llama-server did not become healthy (%s): %s", e.Class, e.Reason)
}

// Server is a healthy llama-server.
type Server struct {
	spec     Spec
	attempt  *attempt
	attempts []Attempt
	lines    *lineSink
	readyIn  time.Duration

	mu         sync.Mutex
	transports []*http.Transport
	stopOnce   sync.Once
	stopped    Stopped
}

// URL is the server's base URL, http://127.0.0.1:PORT (for a server on a host, the local
// port forwarded to it).
func (s *Server) URL() string { return fmt.Sprintf("http://%s:%d", Host, s.attempt.clientPort()) }

// Port is the port it listens on (on the host, for a server on a host).
func (s *Server) Port() int { return s.attempt.port }

// Pid is llama-server's process ID (and process group; on a host, its PID there).
func (s *Server) Pid() int { return s.attempt.serverPid() }

// Argv is the command line that became the server.
func (s *Server) Argv() []string { return s.attempt.argv }

// Attempts lists every try, the last one being the server.
func (s *Server) Attempts() []Attempt { return append([]Attempt(nil), s.attempts...) }

// ReadyIn is the time from the last attempt's start to /health 200.
func (s *Server) ReadyIn() time.Duration { return s.readyIn }

// Done is closed once the process has ended, for whatever reason (Stop, a crash, a kill).
func (s *Server) Done() <-chan struct{} { return s.attempt.done }

// Alive says whether the process still runs (from /proc: a killed process is gone here at
// once, while Done waits for its output to drain).
func (s *Server) Alive() bool {
	select {
	case <-s.attempt.done:
		return false
	default:
	}
	return runner.ProcessAlive(s.attempt.proc.Pid())
}

// Exited reports how the process ended; ok is false while it runs.
func (s *Server) Exited() (runner.Exit, bool) {
	select {
	case <-s.attempt.done:
		return s.attempt.exit, true
	default:
		return runner.Exit{}, false
	}
}

// Evidence is the backend evidence of the log so far (the load is complete once healthy).
func (s *Server) Evidence() Evidence { return s.lines.evidence() }

// LogError is the first error writing to Spec.Log (later lines were not written).
func (s *Server) LogError() error { return s.lines.err() }

// Track registers a client transport: Stop closes its idle connections before it signals the
// server (llama-server waits for open streams before it exits).
func (s *Server) Track(t *http.Transport) {
	s.mu.Lock()
	s.transports = append(s.transports, t)
	s.mu.Unlock()
}

// Stopped is how a lifetime ended.
type Stopped struct {
	RSS      RSS         `json:"rss"` // KiB 0: unknown
	Exit     runner.Exit `json:"exit"`
	Evidence Evidence    `json:"evidence"`
	// Unexpected is true when the process had ended before Stop was called (a crash, a kill).
	Unexpected bool `json:"unexpected,omitempty"`
	// Remote: how a server on a host was stopped and what was left there (nil for a local one).
	Remote *RemoteStop `json:"remote,omitempty"`
}

// idleSettle is how long Stop lets the tracked clients' last connections go idle before it
// closes them again.
const idleSettle = 20 * time.Millisecond

func (s *Server) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.transports {
		t.CloseIdleConnections()
	}
}

// Stop reads the peak RSS (VmHWM) while the process lives, closes the tracked client
// connections, then sends SIGTERM to its group and SIGKILL after the grace period. It is
// idempotent and returns once the group is gone, or when ctx ends (the kill still follows the
// grace period in the background).
func (s *Server) Stop(ctx context.Context) Stopped {
	s.stopOnce.Do(func() {
		if s.spec.Remote != nil {
			s.stopped = s.stopRemote(ctx)
			return
		}
		a := s.attempt
		_, already := s.Exited()
		var rss RSS
		if s.Alive() {
			if pid := a.toolPid(); pid > 0 {
				if kib, err := ReadVmHWM(pid); err == nil && kib > 0 {
					rss = RSS{KiB: kib, Source: fmt.Sprintf("/proc/%d/status", pid)}
				}
			}
		}
		// Close the tracked clients' idle connections (llama-server waits on SIGTERM for a
		// kept-alive client until its keep-alive timeout), twice: a connection whose last
		// response was just read goes back to the idle pool a moment after the request ended.
		s.closeIdle()
		time.Sleep(idleSettle)
		s.closeIdle()
		_ = a.proc.Stop(ctx)
		select {
		case <-a.done:
		case <-ctx.Done():
		}
		x, _ := s.Exited()
		if rss.KiB == 0 && x.PeakRSS > 0 {
			rss = RSS{KiB: x.PeakRSS / 1024, Source: "wait4 rusage"}
		}
		s.stopped = Stopped{RSS: rss, Exit: x, Evidence: s.Evidence(), Unexpected: already || x.StoppedBy == runner.StopNone}
	})
	return s.stopped
}

// attempt is one llama-server process.
type attempt struct {
	port   int
	argv   []string
	launch *runner.Launch // with Spec.Wrapper: argv as launched (the affinity is read later)
	proc   *runner.Proc
	start  time.Time
	bind   chan struct{} // closed when the log reports the bind failure
	done   chan struct{} // closed after the Exit event
	exit   runner.Exit
	// on a host (Spec.Remote): the local command, the forwarded local port, llama-server's PID
	// there (0 until its shell printed it)
	onHost  bool
	via     []string
	lport   int
	hostPid atomic.Int64
}

func (a *attempt) clientPort() int {
	if a.lport != 0 {
		return a.lport
	}
	return a.port
}

func (a *attempt) serverPid() int {
	if a.onHost {
		return a.rpid()
	}
	return a.proc.Pid()
}

// lineSink numbers the lines of every attempt as one log, writes them to Spec.Log and scans
// them for evidence.
type lineSink struct {
	mu   sync.Mutex
	w    io.Writer
	werr error
	n    int
	scan *evidenceScanner
}

func (l *lineSink) line(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	l.scan.observe(l.n, text)
	if l.w != nil && l.werr == nil {
		_, l.werr = io.WriteString(l.w, text+"\n")
	}
}

func (l *lineSink) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.werr
}

func (l *lineSink) evidence() Evidence {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.scan.evidence()
}

// Start runs llama-server and returns once /health answers 200 from the process it started
// (the listening socket is checked to be that process's). A port taken under it moves the
// next attempt to another free port; any other failure ends the start. The error is a
// *StartError unless the spec itself is refused.
func Start(ctx context.Context, spec Spec) (*Server, error) {
	spec = spec.withDefaults()
	if spec.Binary == "" {
		return nil, errors.New("no llama-server binary")
	}
	for _, a := range spec.Args {
		if controlled[flagName(a)] {
			return nil, fmt.Errorf("argument %s: the server package sets --host %s and --port itself", a, Host)
		}
	}
	if spec.Remote != nil && len(spec.Wrapper) > 0 {
		return nil, errors.New("a launch wrapper is not supported for llama-server on a host")
	}
	if len(spec.Wrapper) > 0 {
		if _, err := runner.WrapLaunch(spec.Wrapper, nil, true); err != nil {
			return nil, &StartError{Class: runner.ClassFailed, Reason: "could not start: " + err.Error()}
		}
	}
	scan, err := newEvidenceScanner(spec.Markers)
	if err != nil {
		return nil, err
	}
	sink := &lineSink{w: spec.Log, scan: scan}
	var attempts []Attempt
	port := spec.Port
	for i := 0; i < spec.PortAttempts; i++ {
		if (port == 0 || i > 0) && spec.Remote != nil {
			if port, err = spec.Remote.PickPort(ctx); err != nil {
				return nil, fmt.Errorf("host %s: pick a free port on its %s: %w", spec.Remote.Name(), Host, err)
			}
		} else if port == 0 || i > 0 {
			if port, err = FreePort(); err != nil {
				return nil, fmt.Errorf("pick a free port on %s: %w", Host, err)
			}
		}
		var a *attempt
		if spec.Remote != nil {
			if a, err = remoteLaunch(ctx, spec, port, sink); err != nil {
				return nil, &StartError{Class: runner.ClassFailed, Attempts: attempts, Evidence: sink.evidence(),
					Reason: fmt.Sprintf("could not start on host %s: %v", spec.Remote.Name(), err)}
			}
		} else {
			a = launch(ctx, spec, port, sink)
		}
		class, reason := a.awaitHealthy(ctx, spec)
		if class != "" && spec.Remote != nil {
			_ = spec.Remote.Unforward(a.lport, a.port)
		}
		at := Attempt{Port: port, Argv: a.argv, Pid: a.serverPid(), Took: time.Since(a.start), Launch: a.launched(), Via: a.via}
		if class == "" {
			attempts = append(attempts, at)
			return &Server{spec: spec, attempt: a, attempts: attempts, lines: sink, readyIn: at.Took}, nil
		}
		at.Class, at.Reason = class, reason
		attempts = append(attempts, at)
		if class != classPortInUse {
			return nil, &StartError{Class: class, Reason: reason, Attempts: attempts, Exit: a.exit, Evidence: sink.evidence()}
		}
	}
	last := attempts[len(attempts)-1]
	return nil, &StartError{Class: runner.ClassFailed, Attempts: attempts, Evidence: sink.evidence(),
		Reason: fmt.Sprintf("port in use on %d attempts (last %d): %s", len(attempts), last.Port, last.Reason)}
}

// classPortInUse marks an attempt that failed to bind; Start retries it on another port.
const classPortInUse runner.Class = "port_in_use"

// FreePort asks the kernel for a free port on 127.0.0.1 (bind :0, read it, close). Another
// program may take it before llama-server binds it; Start retries then.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", Host+":0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func launch(ctx context.Context, spec Spec, port int, sink *lineSink) *attempt {
	a := &attempt{port: port, argv: spec.Argv(port), bind: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	ps := runner.ProcSpec{Argv: a.argv, Env: spec.Env, Dir: spec.Dir,
		Limits: runner.Limits{Start: spec.StartTimeout, Idle: spec.Idle, Total: spec.Total, Grace: spec.Grace}}
	if len(spec.Wrapper) > 0 { // resolved by Start before the first attempt
		a.launch, _ = runner.WrapLaunch(spec.Wrapper, a.argv, true)
		ps.Argv, ps.Target = a.launch.LaunchedAs, spec.Binary
	}
	a.proc = runner.StartProc(ctx, ps)
	go a.pump(sink, nil, nil)
	return a
}

// pump reads the attempt's process events until it ends: each log line to sink (unless take,
// when set, takes it: the host's PID line), the bind failure, and the exit (as exit maps it,
// when set). It closes a.done at the end.
func (a *attempt) pump(sink *lineSink, take func(string) bool, exit func(runner.Exit) runner.Exit) {
	defer close(a.done)
	bound := false
	for ev := range a.proc.Events() {
		switch {
		case ev.Line != nil:
			if take != nil && take(ev.Line.Text) {
				continue
			}
			sink.line(ev.Line.Text)
			if !bound && strings.Contains(ev.Line.Text, BindFailure) {
				bound = true
				close(a.bind)
			}
		case ev.Exit != nil:
			a.exit = *ev.Exit
			if exit != nil {
				a.exit = exit(a.exit)
			}
		}
	}
}

// awaitHealthy polls /health until 200 from this process, the process ends, or the start
// timeout. It returns "" when healthy, else the class and reason (and the process is gone).
func (a *attempt) awaitHealthy(ctx context.Context, spec Spec) (runner.Class, string) {
	client := &http.Client{Timeout: healthTimeout, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("http://%s:%d/health", Host, a.clientPort())
	deadline := time.NewTimer(spec.StartTimeout)
	defer deadline.Stop()
	interval := spec.HealthInterval
	last := "no answer yet"
	for {
		select {
		case <-a.done:
			return a.ended()
		case <-a.bind:
			a.stop()
			return classPortInUse, fmt.Sprintf("port %d: %s", a.port, BindFailure)
		case <-ctx.Done():
			a.stop()
			return runner.ClassStoppedByUser, "start cancelled: " + context.Cause(ctx).Error()
		case <-deadline.C:
			a.stop()
			return runner.ClassTimeout, fmt.Sprintf("/health did not answer 200 within %s (last: %s)", spec.StartTimeout, last)
		case <-time.After(interval):
		}
		interval = min(interval*3/2, maxHealthInterval)
		code, body, err := get(ctx, client, url)
		switch {
		case err != nil:
			last = err.Error()
		case code == http.StatusOK && a.onHost:
			// on a host: the answer came through the forward to the port this server was told
			// to bind, after its shell printed the PID, and the host's /proc says the listening
			// socket is the server's own
			if a.rpid() == 0 {
				last = "200 before the host's shell printed the server's PID"
				break
			}
			owns, known := spec.Remote.Listens(ctx, a.rpid(), a.port)
			if !known || owns {
				return "", ""
			}
			last = fmt.Sprintf("200 from another process on host %s's port %d", spec.Remote.Name(), a.port)
		case code == http.StatusOK:
			owns, known := listenerOwner(a.toolPid(), a.port)
			if !known || owns {
				return "", ""
			}
			last = fmt.Sprintf("200 from another process on port %d", a.port)
		default:
			last = fmt.Sprintf("%d %s", code, body)
		}
	}
}

// ended classifies an attempt whose process exited during the start.
func (a *attempt) ended() (runner.Class, string) {
	select {
	case <-a.bind:
		return classPortInUse, fmt.Sprintf("port %d: %s", a.port, BindFailure)
	default:
	}
	x := a.exit
	class := x.Class
	if class == runner.ClassOK || class == "" {
		class = runner.ClassFailed
	}
	reason := x.Reason
	if reason == "" {
		reason = fmt.Sprintf("exited with status %d before it was healthy", x.Code)
	}
	return class, "llama-server exited during start-up: " + reason
}

// stop ends an attempt that will not become the server, bounded by its grace period.
func (a *attempt) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = a.proc.Stop(ctx)
	select {
	case <-a.done:
	case <-ctx.Done():
	}
}

func get(ctx context.Context, c *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
