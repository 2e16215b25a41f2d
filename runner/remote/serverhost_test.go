package remote

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
	"sparkbench/runner/server"
)

var _ server.Remote = (*ServerHost)(nil)

// startOnHost starts llama-server with the tiny model on a loopback host through ServerHost.
func startOnHost(t *testing.T, alias string) (*Conn, *ServerHost, *server.Server, *sshdtest.SyncBuffer, string) {
	t.Helper()
	if server.PIDMarker != serverPIDMarker {
		t.Fatalf("the PID markers differ: %q %q", server.PIDMarker, serverPIDMarker)
	}
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	h, o, _ := loopHost(t, alias, model)
	ctx := context.Background()
	c, err := Open(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sh := &ServerHost{Conn: c}
	if err := sh.CheckServer(ctx); err != nil {
		t.Fatal(err)
	}
	log := &sshdtest.SyncBuffer{}
	t0 := time.Now()
	srv, err := server.Start(ctx, server.Spec{Binary: sh.Binary(), Args: []string{"-m", filepath.Join(h.ModelDirs[0], filepath.Base(model)),
		"-t", llamatest.Threads, "--ctx-size", "128"}, Remote: sh, Log: log, StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("start on host: %v\n%s", err, log.String())
	}
	t.Logf("healthy on the host in %v", time.Since(t0).Round(time.Millisecond))
	return c, sh, srv, log, h.LlamaDir
}

// TestServerOnHost: llama-server on a loopback host through ssh -tt, reached through a
// forwarded local port; stopped with SIGTERM on the host, its peak RSS read there, the forward
// cancelled, nothing left on the host.
func TestServerOnHost(t *testing.T) {
	_, sh, srv, log, bin := startOnHost(t, "srv-host")
	n := srv.Network()
	if n == nil || n.LocalPort == 0 || n.RemotePort != srv.Port() || n.PID <= 0 || srv.Pid() != n.PID ||
		srv.URL() != "http://127.0.0.1:"+strconv.Itoa(n.LocalPort) {
		t.Fatalf("network %+v, url %s, pid %d", n, srv.URL(), srv.Pid())
	}
	if strings.Contains(log.String(), server.PIDMarker) {
		t.Errorf("the PID line reached the server log")
	}
	rtt, err := srv.RoundTrips(context.Background(), 10)
	if err != nil || rtt.N != 10 || !(rtt.MinMs > 0) || rtt.MinMs > rtt.MedianMs {
		t.Fatalf("round trips: %+v %v", rtt, err)
	}
	t.Logf("%s: round trips min %.3f ms median %.3f ms", n.Path(), rtt.MinMs, rtt.MedianMs)
	// the host's process list finds the running server (the check after the stop relies on it)
	if ps, err := sh.Left(context.Background(), srv.Pid(), srv.Port()); err != nil || len(ps) != 1 ||
		!strings.HasPrefix(ps[0], strconv.Itoa(srv.Pid())+" "+filepath.Join(bin, ServerName)) {
		t.Fatalf("the host's llama-servers while it runs: %q %v", ps, err)
	}
	// the host's /proc ties the listening socket to the server (Start checked it too): not to
	// another process, and no socket listens on a port nothing was started on
	ctx := context.Background()
	if owns, known := sh.Listens(ctx, srv.Pid(), srv.Port()); !owns || !known {
		t.Errorf("the server's own port: owns %v known %v", owns, known)
	}
	if owns, known := sh.Listens(ctx, os.Getpid(), srv.Port()); owns || !known {
		t.Errorf("another process on the server's port: owns %v known %v", owns, known)
	}
	free, err := sh.PickPort(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if owns, known := sh.Listens(ctx, srv.Pid(), free); owns || !known {
		t.Errorf("a port nothing listens on: owns %v known %v", owns, known)
	}
	t0 := time.Now()
	st := srv.Stop(context.Background())
	t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))
	if st.Remote == nil || st.Remote.Signal != "SIGTERM" || len(st.Remote.Left) != 0 || st.Remote.Error != "" || st.Unexpected ||
		st.Exit.Class != "stopped_by_user" {
		t.Errorf("stop: %+v remote %+v", st.Exit, st.Remote)
	}
	if st.RSS.KiB <= 0 || !strings.HasPrefix(st.RSS.Source, "host srv-host /proc/") || len(st.Evidence.Buffers) == 0 {
		t.Errorf("rss %+v evidence %+v", st.RSS, st.Evidence)
	}
	if left := sshdtest.Processes(filepath.Join(bin, ServerName)); len(left) > 0 {
		t.Errorf("left on the host: %v", left)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.LocalPort)), time.Second); err == nil {
		conn.Close()
		t.Errorf("the forward of port %d is still there", n.LocalPort)
	}
}

// TestServerOnHostDiesWithTheConnection: when the host's connection goes (the master killed),
// llama-server on the host gets SIGHUP with the remote terminal and is gone; Stop says the server
// had ended.
func TestServerOnHostDiesWithTheConnection(t *testing.T) {
	c, _, srv, _, bin := startOnHost(t, "srv-cut")
	if err := syscall.Kill(c.MasterPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the local ssh did not end with the connection")
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(sshdtest.Processes(filepath.Join(bin, ServerName))) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := sshdtest.Processes(filepath.Join(bin, ServerName)); len(left) > 0 {
		t.Fatalf("llama-server outlived its connection: %v", left)
	}
	if x, _ := srv.Exited(); x.Class != "failed" || !strings.Contains(x.Reason, "the connection to host srv-cut was lost") {
		t.Errorf("exit: %+v", x)
	}
	st := srv.Stop(context.Background())
	if !st.Unexpected || st.Remote == nil || st.Remote.Error == "" {
		t.Errorf("stop after the connection died: %+v %+v", st.Exit, st.Remote)
	}
}

// TestServerOnHostKilledThere: llama-server killed on the host (SIGKILL, as the OOM killer
// would) ends the lifetime as a crash, classified as a local one is; Stop says it had ended.
func TestServerOnHostKilledThere(t *testing.T) {
	_, sh, srv, _, bin := startOnHost(t, "srv-kill")
	if err := sh.Signal(context.Background(), srv.Pid(), "KILL"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the local ssh did not end with the server")
	}
	x, _ := srv.Exited()
	if x.Class != "crashed" || !strings.Contains(x.Reason, "killed by a signal on host srv-kill") {
		t.Errorf("exit: %+v", x)
	}
	st := srv.Stop(context.Background())
	if !st.Unexpected || st.Remote == nil || st.Remote.Signal != "" || len(st.Remote.Left) != 0 || st.Remote.Error != "" {
		t.Errorf("stop: %+v %+v", st.Exit, st.Remote)
	}
	if left := sshdtest.Processes(filepath.Join(bin, ServerName)); len(left) > 0 {
		t.Errorf("left on the host: %v", left)
	}
}
