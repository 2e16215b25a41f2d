package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sparkbench/runner/capout"
)

// RPCServerName is ggml-rpc-server's program name (and its /proc comm: exactly 15 characters).
const RPCServerName = "ggml-rpc-server"

// Defaults for RPCSpec fields left zero.
const (
	DefaultRPCReady = 30 * time.Second // the wait for the port to accept
	DefaultRPCGrace = 5 * time.Second  // SIGTERM's grace before SIGKILL
	rpcLogCap       = 256 << 10
)

// RPCSpec is one ggml-rpc-server to start on a host.
type RPCSpec struct {
	Bind    string   // the address it binds (-H) and llama-bench dials; 127.0.0.1 in tests
	Port    int      // -p
	Threads int      // -t (0: the server's default)
	Devices []string // -d (empty: the server's default)
	Env     []string // device visibility variables (K=V) it runs with
	Ready   time.Duration
	Grace   time.Duration
}

// Endpoint is HOST:PORT as llama-bench --rpc takes it.
func (s RPCSpec) Endpoint() string { return net.JoinHostPort(s.Bind, strconv.Itoa(s.Port)) }

// Argv is the server's command line on the host (binary: its path there).
func (s RPCSpec) Argv(binary string) []string {
	a := []string{binary, "-H", s.Bind, "-p", strconv.Itoa(s.Port)}
	if s.Threads > 0 {
		a = append(a, "-t", strconv.Itoa(s.Threads))
	}
	if len(s.Devices) > 0 {
		a = append(a, "-d", strings.Join(s.Devices, ","))
	}
	return a
}

// RPCError is an RPC server that could not be started or did not stop: Code is one of
// port_taken, start_failed, not_ready, exited, left_running.
type RPCError struct {
	Host     string
	Endpoint string
	Code     string
	Detail   string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("host %s: ggml-rpc-server on %s: rpc:%s: %s", e.Host, e.Endpoint, e.Code, e.Detail)
}

// RPCServer is a ggml-rpc-server running on a host through ssh -tt: the local ssh is in its
// own process group (Pdeathsig), the server leads the remote pty's session, so it gets SIGHUP
// when the connection goes, whatever ends sparkbench.
type RPCServer struct {
	Conn     *Conn
	Spec     RPCSpec
	Argv     []string // on the host
	Via      []string // the local ssh command line
	PID      int      // the server's PID on the host
	Started  time.Time
	log      *capout.Buffer
	cmd      *exec.Cmd
	stdin    *os.File // held open: the remote pty sees no end of input
	exited   chan struct{}
	mu       sync.Mutex
	exitErr  error
	stopped  bool
	stopOnce sync.Once
	stopRep  RPCStop
}

// RPCProcess is a ggml-rpc-server seen on a host.
type RPCProcess struct {
	PID  int    `json:"pid"`
	Argv string `json:"argv"`
}

// RPCStop says how a server was stopped.
type RPCStop struct {
	Host     string       `json:"host"`
	Endpoint string       `json:"endpoint"`
	PID      int          `json:"pid"`
	Signal   string       `json:"signal"`          // SIGTERM, SIGKILL, or "" when it had already exited
	Exited   bool         `json:"exited"`          // it was gone before the stop
	Left     []RPCProcess `json:"left"`            // ggml-rpc-servers still on the host serving its port (none: empty)
	Error    string       `json:"error,omitempty"` // the check could not be made, or it is still running
}

var pidLineRE = regexp.MustCompile(`SPARKBENCH_RPC_PID=(\d+)`)

// RPCListeners lists the TCP ports the host has in LISTEN state (from /proc/net/tcp and tcp6),
// with the local address each is bound to.
func (c *Conn) RPCListeners(ctx context.Context) (map[int][]string, error) {
	out, err := c.Output(ctx, 30*time.Second, Script(`cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true`))
	if err != nil {
		return nil, err
	}
	return parseListeners(string(out)), nil
}

// parseListeners reads /proc/net/tcp lines: "sl local_address rem_address st …", state 0A is
// LISTEN; the local address is HEXIP:HEXPORT.
func parseListeners(s string) map[int][]string {
	ports := map[int][]string{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		ip, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseInt(port, 16, 32)
		if err != nil {
			continue
		}
		ports[int(p)] = append(ports[int(p)], hexIP(ip))
	}
	return ports
}

func hexIP(h string) string {
	if len(h) == 8 { // IPv4, little-endian
		v, err := strconv.ParseUint(h, 16, 32)
		if err == nil {
			return net.IPv4(byte(v), byte(v>>8), byte(v>>16), byte(v>>24)).String()
		}
	}
	if len(h) == 32 {
		b := make(net.IP, 16)
		for i := 0; i < 4; i++ {
			w, err := strconv.ParseUint(h[i*8:i*8+8], 16, 32)
			if err != nil {
				return h
			}
			b[i*4], b[i*4+1], b[i*4+2], b[i*4+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
		}
		return b.String()
	}
	return h
}

// CheckRPCPort refuses a port something on the host already listens on (an RPCError
// port_taken naming host, port and the address it is bound to).
func (c *Conn) CheckRPCPort(ctx context.Context, spec RPCSpec) error {
	ls, err := c.RPCListeners(ctx)
	if err != nil {
		return &RPCError{Host: c.Host.Name, Endpoint: spec.Endpoint(), Code: "start_failed", Detail: "listing the host's listening ports: " + err.Error()}
	}
	if addrs := ls[spec.Port]; len(addrs) > 0 {
		return &RPCError{Host: c.Host.Name, Endpoint: spec.Endpoint(), Code: "port_taken",
			Detail: fmt.Sprintf("port %d is already taken on host %s (listening on %s); free it or choose another port", spec.Port, c.Host.Name, strings.Join(addrs, ", "))}
	}
	return nil
}

// StartRPC checks the port, starts ggml-rpc-server on the host over c (argv only: every word
// quoted), and waits, bounded by spec.Ready, until its endpoint accepts a connection from here.
// A server that exits first, or does not accept in time, is stopped and an RPCError returned
// with its log's last lines.
func StartRPC(ctx context.Context, c *Conn, spec RPCSpec) (*RPCServer, error) {
	if err := c.CheckRPCPort(ctx, spec); err != nil {
		return nil, err
	}
	s := &RPCServer{Conn: c, Spec: spec, Argv: spec.Argv(HostPath(c.Host.LlamaDir, RPCServerName)), log: capout.New(rpcLogCap), exited: make(chan struct{})}
	words, err := ExecCommand(append([]string{"NO_COLOR=1", "TERM=dumb"}, spec.Env...), s.Argv)
	if err != nil {
		return nil, &RPCError{Host: c.Host.Name, Endpoint: spec.Endpoint(), Code: "start_failed", Detail: err.Error()}
	}
	// sh prints its PID, then execs the server in its place: the PID is the server's.
	s.Via = c.Argv(true, Script(`echo SPARKBENCH_RPC_PID=$$; `+words))
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.stdin = w
	cmd := exec.Command(s.Via[0], s.Via[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = 2 * time.Second
	s.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, &RPCError{Host: c.Host.Name, Endpoint: spec.Endpoint(), Code: "start_failed", Detail: err.Error()}
	}
	_ = r.Close()
	s.cmd = cmd
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func (s *RPCServer) waitReady(ctx context.Context) error {
	ready := s.Spec.Ready
	if ready <= 0 {
		ready = DefaultRPCReady
	}
	deadline := time.Now().Add(ready)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	fail := func(code, why string) error {
		return &RPCError{Host: s.Conn.Host.Name, Endpoint: s.Spec.Endpoint(), Code: code, Detail: why + logTail(s.Log())}
	}
	for {
		if s.PID == 0 {
			if m := pidLineRE.FindStringSubmatch(s.log.String()); m != nil {
				s.PID, _ = strconv.Atoi(m[1])
			}
		}
		if s.PID != 0 {
			conn, err := net.DialTimeout("tcp", s.Spec.Endpoint(), time.Second)
			if err == nil {
				_ = conn.Close()
				return nil
			}
		}
		select {
		case <-s.exited:
			return fail("exited", "it exited before accepting connections")
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fail("not_ready", fmt.Sprintf("the port did not accept within %s", ready))
		}
	}
}

func logTail(l string) string {
	if t := lastLines(l, 4); t != "" {
		return "; its log: " + t
	}
	return ""
}

// Log is what the server (and ssh) printed so far.
func (s *RPCServer) Log() string { return s.log.String() }

// Exited is closed when the server's connection ended (the server exited, or ssh did).
func (s *RPCServer) Exited() <-chan struct{} { return s.exited }

// Died reports whether the server ended without being stopped, and how.
func (s *RPCServer) Died() (bool, string) {
	select {
	case <-s.exited:
	default:
		return false, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false, ""
	}
	how := "its connection ended"
	if s.exitErr != nil {
		how = s.exitErr.Error()
	}
	return true, fmt.Sprintf("rpc:server_died: ggml-rpc-server on host %s (%s, PID %d) ended during the run (%s)%s",
		s.Conn.Host.Name, s.Spec.Endpoint(), s.PID, how, logTail(s.Log()))
}

// Stop ends the server: SIGTERM on the host, SIGKILL after the grace, then the local ssh's
// group; each wait bounded. It then lists the host's ggml-rpc-servers and reports any still
// serving the port (Left). Stop is safe to call more than once; the first report is kept.
func (s *RPCServer) Stop(ctx context.Context) RPCStop {
	s.stopOnce.Do(func() { s.stopRep = s.stop(ctx) })
	return s.stopRep
}

func (s *RPCServer) stop(ctx context.Context) RPCStop {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	rep := RPCStop{Host: s.Conn.Host.Name, Endpoint: s.Spec.Endpoint(), PID: s.PID, Left: []RPCProcess{}}
	grace := s.Spec.Grace
	if grace <= 0 {
		grace = DefaultRPCGrace
	}
	gone := func(d time.Duration) bool {
		select {
		case <-s.exited:
			return true
		default:
		}
		select {
		case <-s.exited:
			return true
		case <-time.After(d):
			return false
		}
	}
	switch {
	case gone(0):
		rep.Exited = true
	case s.PID > 0 && s.Conn.Alive():
		for _, sig := range []string{"TERM", "KILL"} {
			rep.Signal = "SIG" + sig
			_, _ = s.Conn.Output(ctx, 10*time.Second, Script("kill -"+sig+" "+strconv.Itoa(s.PID)+" 2>/dev/null; true"))
			if gone(grace) {
				break
			}
		}
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM) // the local ssh: the remote pty hangs up
		if !gone(3 * time.Second) {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			gone(3 * time.Second)
		}
	}
	_ = s.stdin.Close()
	if !s.Conn.Alive() {
		rep.Error = "the connection to the host is gone: the server got SIGHUP with it, and no listing could be read"
		return rep
	}
	// A server just signalled may take a moment to leave the process table.
	deadline := time.Now().Add(grace)
	for {
		left, err := s.Conn.RPCProcesses(ctx)
		if err != nil {
			rep.Error = "listing the host's processes: " + err.Error()
			return rep
		}
		rep.Left = rep.Left[:0]
		for _, p := range left {
			if p.PID == s.PID || servesPort(p.Argv, s.Spec.Port) {
				rep.Left = append(rep.Left, p)
			}
		}
		if len(rep.Left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(rep.Left) > 0 {
		rep.Error = (&RPCError{Host: rep.Host, Endpoint: rep.Endpoint, Code: "left_running",
			Detail: fmt.Sprintf("%d ggml-rpc-server process(es) still on the host after SIGKILL", len(rep.Left))}).Error()
	}
	return rep
}

func servesPort(argv string, port int) bool {
	f := strings.Fields(argv)
	for i := 0; i+1 < len(f); i++ {
		if (f[i] == "-p" || f[i] == "--port") && f[i+1] == strconv.Itoa(port) {
			return true
		}
	}
	return false
}

// RPCProcesses lists the live ggml-rpc-server processes on the host (by /proc comm), each with
// its argv.
func (c *Conn) RPCProcesses(ctx context.Context) ([]RPCProcess, error) {
	return c.Processes(ctx, RPCServerName)
}

// Processes lists the host's live processes whose /proc comm is comm (at most 15 characters,
// as the kernel keeps it), each with its argv.
func (c *Conn) Processes(ctx context.Context, comm string) ([]RPCProcess, error) {
	out, err := c.Output(ctx, 30*time.Second, Script(`for d in /proc/[0-9]*; do `+
		`read -r c < "$d/comm" 2>/dev/null || continue; [ "$c" = `+Quote(comm)+` ] || continue; `+
		`s=$(cut -d')' -f2 "$d/stat" 2>/dev/null | cut -d' ' -f2); [ "$s" = Z ] && continue; `+
		`printf '%s %s\n' "${d#/proc/}" "$(tr '\0' ' ' < "$d/cmdline")"; done; true`))
	if err != nil {
		return nil, err
	}
	return parseProcesses(string(out)), nil
}

func parseProcesses(s string) []RPCProcess {
	var out []RPCProcess
	for _, l := range strings.Split(s, "\n") {
		pid, argv, ok := strings.Cut(strings.TrimSpace(l), " ")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			continue
		}
		out = append(out, RPCProcess{PID: n, Argv: strings.TrimSpace(argv)})
	}
	return out
}

// ErrRPCLeft is wrapped by StopAll's error when a server stayed on its host.
var ErrRPCLeft = errors.New("ggml-rpc-server left running")

// StopAll stops every server (in reverse order), bounded, and returns their reports; the
// error names each server that could not be checked or stayed.
func StopAll(ctx context.Context, servers []*RPCServer) ([]RPCStop, error) {
	var reps []RPCStop
	var bad []string
	for i := len(servers) - 1; i >= 0; i-- {
		r := servers[i].Stop(ctx)
		reps = append([]RPCStop{r}, reps...)
		if r.Error != "" {
			bad = append(bad, r.Error)
		}
	}
	if len(bad) > 0 {
		return reps, fmt.Errorf("%w: %s", ErrRPCLeft, strings.Join(bad, "; "))
	}
	return reps, nil
}
