package remote

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
)

func TestParseListeners(t *testing.T) {
	in := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:C3A5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:0016 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0 0 0 0 0 0
`
	got := parseListeners(in)
	if len(got) != 2 || got[50085][0] != "127.0.0.1" || got[8080][0] != "::" {
		t.Fatalf("parseListeners = %v", got)
	}
}

func TestRPCServersOverSSH(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	ctx := context.Background()
	var servers []*RPCServer
	for _, alias := range []string{"rpc-a", "rpc-b"} {
		h, o, _ := loopHost(t, alias)
		c, err := Open(ctx, h, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := StartRPC(ctx, c, RPCSpec{Bind: "127.0.0.1", Port: sshdtest.FreePort(t), Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	defer func() { _, _ = StopAll(ctx, servers) }()
	eps := []string{servers[0].Spec.Endpoint(), servers[1].Spec.Endpoint()}
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(bctx, loc.Bench, "-m", model, "--rpc", strings.Join(eps, ","), "-ngl", "99", "-dev", "RPC0/RPC1",
		"-t", llamatest.Threads, "-p", "0", "-n", "4", "-r", "1", "-o", "jsonl").Output()
	if err != nil || !strings.Contains(string(out), `"backends": "`) || !strings.Contains(string(out), "RPC\"") {
		t.Fatalf("llama-bench --rpc %v: %v\n%s", eps, err, out)
	}
	for _, s := range servers {
		if s.PID <= 0 || !strings.Contains(s.Log(), "Accepted client connection") {
			t.Fatalf("server %s: PID %d, log:\n%s", s.Spec.Endpoint(), s.PID, s.Log())
		}
	}
	reps, err := StopAll(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reps {
		if r.Signal != "SIGTERM" || len(r.Left) != 0 || r.Error != "" {
			t.Fatalf("stop %d: %+v", i, r)
		}
		if ps, err := servers[i].Conn.RPCProcesses(ctx); err != nil || hasPort(ps, servers[i].Spec.Port) {
			t.Fatalf("host %s still lists %v (%v)", r.Host, ps, err)
		}
	}
}

func hasPort(ps []RPCProcess, port int) bool {
	for _, p := range ps {
		if servesPort(p.Argv, port) {
			return true
		}
	}
	return false
}

func TestRPCPortTakenIsRefused(t *testing.T) {
	h, o, _ := loopHost(t, "rpc-taken")
	ctx := context.Background()
	c, err := Open(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = StartRPC(ctx, c, RPCSpec{Bind: "127.0.0.1", Port: port, Threads: 1})
	var re *RPCError
	if !errors.As(err, &re) || re.Code != "port_taken" || !strings.Contains(err.Error(), "host rpc-taken") ||
		!strings.Contains(err.Error(), "port "+strconv.Itoa(port)) {
		t.Fatalf("StartRPC on a taken port: %v", err)
	}
	if ps, _ := c.RPCProcesses(ctx); hasPort(ps, port) {
		t.Fatalf("a server was started anyway: %v", ps)
	}
}

func TestRPCServerDeathIsSeen(t *testing.T) {
	h, o, _ := loopHost(t, "rpc-dies")
	ctx := context.Background()
	c, err := Open(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := StartRPC(ctx, c, RPCSpec{Bind: "127.0.0.1", Port: sshdtest.FreePort(t), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Output(ctx, 10*time.Second, Script("kill -KILL "+strconv.Itoa(s.PID))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the server's death was not seen")
	}
	died, why := s.Died()
	if !died || !strings.Contains(why, "rpc:server_died") || !strings.Contains(why, "host rpc-dies") {
		t.Fatalf("Died = %v %q", died, why)
	}
	if r := s.Stop(ctx); !r.Exited || len(r.Left) != 0 || r.Error != "" {
		t.Fatalf("stop after death: %+v", r)
	}
}

// TestRPCServerDiesWithItsConnection: the local ssh killed as sparkbench's death would (its
// group, SIGKILL): the host's server gets SIGHUP from its pty and is gone.
func TestRPCServerDiesWithItsConnection(t *testing.T) {
	h, o, _ := loopHost(t, "rpc-hup")
	ctx := context.Background()
	c, err := Open(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := sshdtest.FreePort(t)
	s, err := StartRPC(ctx, c, RPCSpec{Bind: "127.0.0.1", Port: port, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(ctx)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ps, err := c.RPCProcesses(ctx)
		if err == nil && !hasPort(ps, port) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the server outlived its connection: %v (%v)", ps, err)
		}
	}
}
