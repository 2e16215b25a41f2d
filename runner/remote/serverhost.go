package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/llamacpp"
)

// ServerName is llama-server's program name (and its /proc comm).
const ServerName = "llama-server"

// serverPIDMarker is what the host's shell prints before it execs llama-server
// (runner/server.PIDMarker: the server package reads it).
const serverPIDMarker = "SPARKBENCH_SERVER_PID="

// ServerHost runs llama-server lifetimes on a host over its connection (runner/server.Remote):
// each as ssh -tt 'exec /bin/sh -c "echo PID; exec env … llama-server …"' (the server leads the
// remote pty's session, so it gets SIGHUP when the connection goes), reached through a forward
// of a free local port on the master connection (ssh -O forward -L, cancelled with -O cancel).
type ServerHost struct {
	Conn *Conn
}

// Name is the host's name.
func (h *ServerHost) Name() string { return h.Conn.Host.Name }

// Dest is its ssh destination.
func (h *ServerHost) Dest() string { return h.Conn.Host.SSH }

// Binary is llama-server's path on the host.
func (h *ServerHost) Binary() string { return HostPath(h.Conn.Host.LlamaDir, ServerName) }

// CheckServer refuses a host without an executable llama-server in its llama_dir.
func (h *ServerHost) CheckServer(ctx context.Context) error {
	out, err := h.Conn.Output(ctx, 30*time.Second, Script(`if [ -x `+QuotePath(h.Binary())+` ]; then echo ok; else echo missing; fi`))
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "ok" {
		return fmt.Errorf("host %s: no executable %s in %s (llama_dir: looked for %s); install llama.cpp's server there or fix the hosts file",
			h.Name(), ServerName, h.Conn.Host.LlamaDir, h.Binary())
	}
	return nil
}

// PickPort is a random port of 20000–59999 that nothing on the host listens on.
func (h *ServerHost) PickPort(ctx context.Context) (int, error) {
	ls, err := h.Conn.RPCListeners(ctx)
	if err != nil {
		return 0, err
	}
	for range 100 {
		if p := 20000 + rand.IntN(40000); len(ls[p]) == 0 {
			return p, nil
		}
	}
	return 0, errors.New("no free port found in 100 tries")
}

// Command is the local ssh -tt command line that runs argv (argv[0]: the host's llama-server)
// with env there, the shell printing its PID before it execs the server in its place.
func (h *ServerHost) Command(argv, env []string) ([]string, error) {
	words, err := ExecCommand(append(append([]string(nil), llamacpp.QuietEnv...), env...), argv)
	if err != nil {
		return nil, err
	}
	return h.Conn.Argv(true, Script(`echo `+serverPIDMarker+`$$; `+words)), nil
}

func forwardSpec(lport, rport int) string {
	return fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", lport, rport)
}

// Forward asks the master connection to forward a free port of this machine's 127.0.0.1 to
// the host's 127.0.0.1:rport (a port taken in between: another one, up to 5 tries).
func (h *ServerHost) Forward(ctx context.Context, rport int) (int, error) {
	var last error
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		lport := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if last = h.control(ctx, "forward", lport, rport); last == nil {
			return lport, nil
		}
	}
	return 0, fmt.Errorf("host %s: forward a local port to its 127.0.0.1:%d: %w", h.Name(), rport, last)
}

// Unforward cancels a forward.
func (h *ServerHost) Unforward(lport, rport int) error {
	if lport == 0 || !h.Conn.Alive() {
		return nil
	}
	return h.control(context.Background(), "cancel", lport, rport)
}

func (h *ServerHost) control(ctx context.Context, op string, lport, rport int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	argv := append(h.Conn.base(false), "-O", op, "-L", forwardSpec(lport, rport), h.Conn.Host.SSH)
	if _, errOut, err := runBounded(ctx, argv, nil); err != nil {
		return fmt.Errorf("ssh -O %s: %w: %s", op, err, lastLines(errOut, 2))
	}
	return nil
}

// Status is /proc/PID/status on the host.
func (h *ServerHost) Status(ctx context.Context, pid int) (string, error) {
	out, err := h.Conn.Output(ctx, 15*time.Second, Script("cat /proc/"+strconv.Itoa(pid)+"/status"))
	return string(out), err
}

// Signal sends SIGsig to pid on the host.
func (h *ServerHost) Signal(ctx context.Context, pid int, sig string) error {
	_, err := h.Conn.Output(ctx, 10*time.Second, Script("kill -"+Quote(sig)+" "+strconv.Itoa(pid)+" 2>/dev/null; true"))
	return err
}

// Left lists the host's live llama-servers that are pid or serve rport, as "PID argv".
func (h *ServerHost) Left(ctx context.Context, pid, rport int) ([]string, error) {
	ps, err := h.Conn.Processes(ctx, ServerName)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, p := range ps {
		if p.PID == pid || servesPort(p.Argv, rport) {
			out = append(out, strconv.Itoa(p.PID)+" "+p.Argv)
		}
	}
	return out, nil
}

// Connected says whether the master connection still answers (ssh -O check).
func (h *ServerHost) Connected(ctx context.Context) bool {
	return h.Conn.Alive() && h.Conn.check(ctx) == nil
}

// Listens says whether pid holds the socket listening on the host's 127.0.0.1:rport, from the
// host's /proc/net/tcp and /proc/PID/fd (as runner/server does for a local server). known is
// false when the host's /proc could not tell: the caller then trusts the health check alone.
func (h *ServerHost) Listens(ctx context.Context, pid, rport int) (owns, known bool) {
	want := fmt.Sprintf("0100007F:%04X", rport)
	script := `I=; while read -r _ l _ st _ _ _ _ _ ino _; do [ "$l" = ` + want + ` ] && [ "$st" = 0A ] && { I=$ino; break; }; done < /proc/net/tcp; ` +
		`[ -n "$I" ] || { echo none; exit 0; }; ` +
		`[ -d /proc/` + strconv.Itoa(pid) + `/fd ] || { echo gone; exit 0; }; ` +
		`for f in /proc/` + strconv.Itoa(pid) + `/fd/*; do [ "$(readlink "$f" 2>/dev/null)" = "socket:[$I]" ] && { echo own; exit 0; }; done; echo other`
	out, err := h.Conn.Output(ctx, 15*time.Second, Script(script))
	if err != nil {
		return false, false
	}
	switch strings.TrimSpace(string(out)) {
	case "own":
		return true, true
	case "none", "gone", "other":
		return false, true
	}
	return false, false
}
