package server

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner"
)

// Remote runs llama-server on a bench host (Spec.Remote; runner/remote.ServerHost over the
// host's ssh connection): the server binds the host's 127.0.0.1:RPORT, and a free port of this
// machine's 127.0.0.1 is forwarded to it, so /health and every client use the local port.
type Remote interface {
	// Name is the host's name (as the hosts file gives it); Dest its ssh destination.
	Name() string
	Dest() string
	// PickPort is a port nothing on the host listens on.
	PickPort(ctx context.Context) (int, error)
	// Command is the local command line (ssh -tt) that runs argv with env on the host: the host's
	// shell first prints PIDMarker and its PID, then execs argv in its place.
	Command(argv, env []string) ([]string, error)
	// Forward forwards a free port of this machine's 127.0.0.1 to the host's 127.0.0.1:rport.
	Forward(ctx context.Context, rport int) (int, error)
	// Unforward cancels that forward.
	Unforward(lport, rport int) error
	// Status is /proc/PID/status on the host.
	Status(ctx context.Context, pid int) (string, error)
	// Signal sends SIGsig (TERM, KILL) to pid on the host.
	Signal(ctx context.Context, pid int, sig string) error
	// Left lists the llama-server processes still on the host that are pid or serve rport
	// ("PID argv" each).
	Left(ctx context.Context, pid, rport int) ([]string, error)
	// Connected says whether the host's connection still answers.
	Connected(ctx context.Context) bool
	// Listens says whether pid holds the socket listening on the host's 127.0.0.1:rport; known
	// is false when the host could not tell.
	Listens(ctx context.Context, pid, rport int) (owns, known bool)
}

// PIDMarker starts the line the host's shell prints before it execs llama-server.
const PIDMarker = "SPARKBENCH_SERVER_PID="

var pidMarkerRE = regexp.MustCompile(PIDMarker + `(\d+)`)

// RemoteStop says how a server on a host was stopped and what was left there.
type RemoteStop struct {
	Host   string   `json:"host"`
	PID    int      `json:"pid"`              // on the host
	Signal string   `json:"signal,omitempty"` // the last signal sent on the host ("": it had exited)
	Left   []string `json:"left"`             // llama-server processes still on the host
	Error  string   `json:"error,omitempty"`  // the check could not be made, or one is left
}

// Network is the path the clients reach a server on a host by.
type Network struct {
	Host       string `json:"host"`
	SSH        string `json:"ssh"`         // the ssh destination
	LocalPort  int    `json:"local_port"`  // on this machine's 127.0.0.1
	RemotePort int    `json:"remote_port"` // on the host's 127.0.0.1
	PID        int    `json:"pid"`         // llama-server's PID on the host
}

// Path is the path in words.
func (n Network) Path() string {
	return fmt.Sprintf("desktop 127.0.0.1:%d → ssh %s (host %s) → host 127.0.0.1:%d", n.LocalPort, n.SSH, n.Host, n.RemotePort)
}

// Network is the path to a server on a host (nil for a local server).
func (s *Server) Network() *Network {
	a := s.attempt
	if s.spec.Remote == nil {
		return nil
	}
	return &Network{Host: s.spec.Remote.Name(), SSH: s.spec.Remote.Dest(), LocalPort: a.lport, RemotePort: a.port, PID: a.rpid()}
}

// RTT is the network round-trip floor: N sequential GET /health over one kept-alive
// connection (after one that is not counted), their minimum and median.
type RTT struct {
	N        int     `json:"n"`
	MinMs    float64 `json:"min_ms"`
	MedianMs float64 `json:"median_ms"`
}

// RoundTrips measures the round-trip floor to the server as the clients reach it (for a server
// on a host: through the forwarded port and the ssh connection).
func (s *Server) RoundTrips(ctx context.Context, n int) (RTT, error) {
	if n < 1 {
		return RTT{}, fmt.Errorf("round trips: n = %d", n)
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: healthTimeout, Transport: tr}
	url := s.URL() + "/health"
	var ds []float64
	for i := 0; i <= n; i++ {
		t0 := time.Now()
		code, body, err := get(ctx, client, url)
		d := time.Since(t0)
		if err != nil {
			return RTT{}, fmt.Errorf("round trip %d: %w", i, err)
		}
		if code != http.StatusOK {
			return RTT{}, fmt.Errorf("round trip %d: %d %s", i, code, body)
		}
		if i > 0 { // the first opens the connection
			ds = append(ds, float64(d)/1e6)
		}
	}
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return RTT{N: n, MinMs: ds[0], MedianMs: med}, nil
}

// remoteLaunch is launch for a server on a host: the attempt's argv is llama-server's on the
// host; the process started here is the ssh that runs it, with a forward to its port.
func remoteLaunch(ctx context.Context, spec Spec, port int, sink *lineSink) (*attempt, error) {
	a := &attempt{port: port, argv: spec.Argv(port), bind: make(chan struct{}), done: make(chan struct{}), start: time.Now(), onHost: true}
	var err error
	if a.via, err = spec.Remote.Command(a.argv, spec.Env); err != nil {
		return nil, err
	}
	if a.lport, err = spec.Remote.Forward(ctx, port); err != nil {
		return nil, err
	}
	ps := runner.ProcSpec{Argv: a.via, Limits: runner.Limits{Start: spec.StartTimeout, Idle: spec.Idle, Total: spec.Total, Grace: spec.Grace}}
	a.proc = runner.StartProc(ctx, ps)
	takePID := func(text string) bool { // the host's shell's PID line, before llama-server's log
		m := pidMarkerRE.FindStringSubmatch(text)
		if m == nil || a.hostPid.Load() != 0 {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		a.hostPid.Store(int64(n))
		return true
	}
	go a.pump(sink, takePID, func(x runner.Exit) runner.Exit { return remoteExit(ctx, spec.Remote, x) })
	return a, nil
}

// remoteExit reclassifies the end of a server on a host that sparkbench did not stop and whose
// log named no cause: ssh exits 255 both when the connection was lost and when the server was
// killed by a signal on the host (the remote terminal reports no status then). A connection
// that still answers means the latter: a crash, as a local server killed by a signal is.
func remoteExit(ctx context.Context, r Remote, x runner.Exit) runner.Exit {
	if x.StoppedBy != runner.StopNone || x.Class != runner.ClassFailed || x.Code != 255 || !strings.HasPrefix(x.Reason, "exited with status 255") {
		return x
	}
	hint := strings.TrimPrefix(strings.TrimPrefix(x.Reason, "exited with status 255"), ":")
	if strings.TrimSpace(hint) != "" {
		hint = "; last output:" + hint
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if r.Connected(cctx) {
		x.Class = runner.ClassCrashed
		x.Reason = fmt.Sprintf("killed by a signal on host %s (ssh exited 255 with the connection up)%s", r.Name(), hint)
	} else {
		x.Reason = fmt.Sprintf("the connection to host %s was lost (ssh exited 255); llama-server got SIGHUP with its terminal%s", r.Name(), hint)
	}
	return x
}

// rpid is llama-server's PID on the host (0: not known yet).
func (a *attempt) rpid() int { return int(a.hostPid.Load()) }

// stopRemote ends a server on a host: its peak RSS from the host's /proc, SIGTERM there, SIGKILL
// after the grace, then the local ssh's group; the forward is cancelled and the host's
// llama-servers listed (one left is an error in RemoteStop).
func (s *Server) stopRemote(ctx context.Context) Stopped {
	a, r := s.attempt, s.spec.Remote
	_, already := s.Exited()
	rep := &RemoteStop{Host: r.Name(), PID: a.rpid(), Left: []string{}}
	var rss RSS
	if !already && rep.PID > 0 {
		if st, err := r.Status(ctx, rep.PID); err == nil {
			if kib, err := parseVmHWM(strings.NewReader(st)); err == nil && kib > 0 {
				rss = RSS{KiB: kib, Source: fmt.Sprintf("host %s /proc/%d/status", r.Name(), rep.PID)}
			}
		}
	}
	s.closeIdle()
	time.Sleep(idleSettle)
	s.closeIdle()
	gone := func(d time.Duration) bool {
		select {
		case <-a.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	escalated := false
	if !already && rep.PID > 0 {
		for _, sig := range []string{"TERM", "KILL"} {
			rep.Signal, escalated = "SIG"+sig, sig == "KILL"
			_ = r.Signal(ctx, rep.PID, sig)
			if gone(s.spec.Grace) {
				break
			}
		}
	}
	pctx, cancel := context.WithTimeout(ctx, s.spec.Grace+10*time.Second)
	_ = a.proc.Stop(pctx) // the local ssh's group, if it is still there
	cancel()
	gone(3 * time.Second)
	_ = r.Unforward(a.lport, a.port)
	left, err := s.remoteLeft(ctx)
	switch {
	case err != nil:
		rep.Error = "listing the host's processes: " + err.Error()
	case len(left) > 0:
		rep.Left = left
		rep.Error = fmt.Sprintf("host %s: %d llama-server process(es) still there after SIGKILL: %s", r.Name(), len(left), strings.Join(left, "; "))
	}
	x, _ := s.Exited()
	if !already && x.StoppedBy == runner.StopNone {
		// it ended on the signal sent on the host: the lifetime's normal end, as a local stop
		x.StoppedBy, x.Escalated = runner.StopUser, escalated
		x.Class, x.Reason = runner.Classify(runner.ClassifyInput{Cause: runner.StopUser, Escalated: escalated})
		x.Reason += " (" + rep.Signal + " on host " + r.Name() + ")"
	}
	return Stopped{RSS: rss, Exit: x, Evidence: s.Evidence(), Unexpected: already, Remote: rep}
}

// remoteLeft lists the host's llama-servers of this lifetime, waiting (bounded by the grace)
// for a process just signalled to leave the process table.
func (s *Server) remoteLeft(ctx context.Context) ([]string, error) {
	deadline := time.Now().Add(s.spec.Grace)
	for {
		left, err := s.spec.Remote.Left(ctx, s.attempt.rpid(), s.attempt.port)
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return left, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
