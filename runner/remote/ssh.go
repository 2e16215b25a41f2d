package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"sparkbench/runner/capout"
)

// Defaults for Options fields left zero.
const (
	DefaultConnectTimeout = 15 * time.Second
	DefaultCommandTimeout = 2 * time.Minute
	stderrCap             = 64 << 10
)

// Options says how ssh is run for every host.
type Options struct {
	SSH            string        // the ssh client (default: ssh on PATH)
	Config         string        // ssh -F FILE (empty: the user's ~/.ssh/config)
	ConnectTimeout time.Duration // ssh ConnectTimeout and the wait for the master (default 15s)
}

func (o Options) ssh() string {
	if o.SSH != "" {
		return o.SSH
	}
	return "ssh"
}

func (o Options) connectTimeout() time.Duration {
	if o.ConnectTimeout > 0 {
		return o.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// Conn is one host's multiplexed connection: an ssh master process that sparkbench starts,
// owns (own process group, Pdeathsig) and ends in Close; every command and leg runs as a
// session over it (ControlMaster=no, its ControlPath), so a host is logged into once.
type Conn struct {
	Host Host
	opt  Options
	dir  string // holds the control socket
	sock string

	master    *exec.Cmd
	masterErr *capout.Buffer
	exited    chan struct{}
	closeOnce sync.Once
}

// ConnError is a connection that failed, with ssh's own words: Kind is unknown_host,
// host_key, refused, timeout, auth, lost or failed.
type ConnError struct {
	Host   string
	Kind   string
	Detail string
}

func (e *ConnError) Error() string {
	what := map[string]string{
		"unknown_host": "the destination does not resolve (an unknown alias or host name)",
		"host_key":     "host key verification failed (not in known_hosts, or it changed); sparkbench never bypasses it: check the key and fix known_hosts yourself",
		"refused":      "connection refused (no sshd on that port?)",
		"timeout":      "connection timed out",
		"auth":         "authentication failed (BatchMode: no password prompt; load a key in the agent or set IdentityFile)",
		"lost":         "the connection was lost",
		"failed":       "ssh failed",
	}[e.Kind]
	d := strings.TrimSpace(e.Detail)
	if d != "" {
		d = ": ssh said: " + lastLines(d, 3)
	}
	return fmt.Sprintf("host %s: %s%s", e.Host, what, d)
}

// classifySSH reads ssh's stderr.
func classifySSH(stderr string) string {
	s := strings.ToLower(stderr)
	switch {
	case strings.Contains(s, "host key verification failed"), strings.Contains(s, "remote host identification has changed"):
		return "host_key"
	case strings.Contains(s, "could not resolve hostname"), strings.Contains(s, "name or service not known"):
		return "unknown_host"
	case strings.Contains(s, "connection refused"):
		return "refused"
	case strings.Contains(s, "timed out"):
		return "timeout"
	case strings.Contains(s, "permission denied"):
		return "auth"
	case strings.Contains(s, "connection closed"), strings.Contains(s, "connection reset"), strings.Contains(s, "broken pipe"),
		strings.Contains(s, "closed by remote host"), strings.Contains(s, "control socket"), strings.Contains(s, "mux_client"):
		return "lost"
	}
	return "failed"
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r", "")), "\n")
	var keep []string
	for _, l := range ls {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "@@@") && !strings.Contains(l, "IT IS POSSIBLE") {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, " / ")
}

// base is the ssh argv every call starts with (before the destination).
func (c *Conn) base(master bool) []string {
	a := []string{c.opt.ssh()}
	if c.opt.Config != "" {
		a = append(a, "-F", c.opt.Config)
	}
	a = append(a, "-o", "BatchMode=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", int(c.opt.connectTimeout().Seconds())),
		"-o", "ControlPath="+c.sock)
	if master {
		return append(a, "-o", "ControlMaster=yes", "-o", "ControlPersist=no")
	}
	// A session goes over the master or not at all: were the master gone, ssh would quietly open
	// a connection of its own; ProxyCommand=false (never reached while the master answers) makes
	// that attempt fail at once instead.
	return append(a, "-o", "ControlMaster=no", "-o", "ProxyCommand=false")
}

// Open logs into h once: it starts the master and waits (bounded by the connect timeout) until
// its control socket answers, or returns a ConnError with ssh's reason.
func Open(ctx context.Context, h Host, o Options) (*Conn, error) {
	if probs := h.Validate(); len(probs) > 0 {
		return nil, errors.New(strings.Join(probs, "; "))
	}
	dir, err := os.MkdirTemp("", "sb-ssh-")
	if err != nil {
		return nil, err
	}
	c := &Conn{Host: h, opt: o, dir: dir, sock: filepath.Join(dir, "m"), masterErr: capout.New(stderrCap), exited: make(chan struct{})}
	argv := append(c.base(true), "-N", h.SSH)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = c.masterErr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("host %s: start %s: %w", h.Name, argv[0], err)
	}
	c.master = cmd
	go func() { _ = cmd.Wait(); close(c.exited) }()
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(c.opt.connectTimeout() + 5*time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.exited:
			msg := c.masterErr.String()
			return &ConnError{Host: c.Host.Name, Kind: classifySSH(msg), Detail: msg}
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if _, err := os.Stat(c.sock); err == nil && c.check(ctx) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return &ConnError{Host: c.Host.Name, Kind: "timeout", Detail: c.masterErr.String()}
		}
	}
}

// check asks the master whether it is alive (ssh -O check), bounded.
func (c *Conn) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := append(c.base(false), "-O", "check", c.Host.SSH)
	_, _, err := runBounded(ctx, argv, nil)
	return err
}

// Alive reports whether the master connection is still up.
func (c *Conn) Alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// Argv is the local command line that runs remote (a remote command line, see Command) over
// the connection: with tty, ssh -tt (a remote pty: the tool sees a terminal and gets SIGHUP
// when the connection goes).
func (c *Conn) Argv(tty bool, remote string) []string {
	a := c.base(false)
	if tty {
		a = append(a, "-tt")
	} else {
		a = append(a, "-T")
	}
	return append(a, c.Host.SSH, remote)
}

// MasterPid is the master ssh process (tests end it to cut the connection).
func (c *Conn) MasterPid() int {
	if c.master == nil || c.master.Process == nil {
		return 0
	}
	return c.master.Process.Pid
}

// Output runs remote without a pty and returns its stdout, bounded by timeout (default
// DefaultCommandTimeout) and capped at maxOut bytes; a non-zero exit is an error with the
// command's stderr.
func (c *Conn) Output(ctx context.Context, timeout time.Duration, remote string) ([]byte, error) {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, errOut, err := runBounded(ctx, c.Argv(false, remote), nil)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 255 {
			return out, &ConnError{Host: c.Host.Name, Kind: classifySSH(errOut), Detail: errOut}
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("host %s: no answer within %s: %s", c.Host.Name, timeout, lastLines(errOut, 2))
		}
		return out, fmt.Errorf("host %s: %w: %s", c.Host.Name, err, lastLines(errOut, 3))
	}
	return out, nil
}

// maxOut bounds what a remote command may print.
const maxOut = 16 << 20

// runBounded runs argv in its own process group (stdin: what it reads, nil for none), killed
// with the group when ctx ends.
func runBounded(ctx context.Context, argv []string, stdin io.Reader) ([]byte, string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	errb := capout.New(stderrCap)
	cmd.Stdout = &limitWriter{w: &out, n: maxOut}
	cmd.Stderr = errb
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		if err == nil {
			err = ctx.Err()
		}
	}
	return out.Bytes(), errb.String(), err
}

type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Close ends the master (ssh -O exit, then its process group), bounded, and removes the
// socket's folder. Sessions still running over it end with it.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		if c.master != nil && c.Alive() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _, _ = runBounded(ctx, append(c.base(false), "-O", "exit", c.Host.SSH), nil)
			cancel()
			select {
			case <-c.exited:
			case <-time.After(3 * time.Second):
				_ = syscall.Kill(-c.master.Process.Pid, syscall.SIGKILL)
				select {
				case <-c.exited:
				case <-time.After(3 * time.Second):
				}
			}
		}
		_ = os.RemoveAll(c.dir)
	})
}
