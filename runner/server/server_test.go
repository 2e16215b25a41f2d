package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/loadgen"
)

func TestEvidenceFromSample(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("testdata", "server-v.stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ScanEvidence(log, Markers{Must: []string{`CPU_Mapped model buffer`}, MustNot: []string{`CPU_KLEIDIAI model buffer`, `CPU model buffer size`}})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Loads != 2 || ev.BlockLine != 349 {
		t.Fatalf("loads %d block %d; want the second (real) load at line 349", ev.Loads, ev.BlockLine)
	}
	if len(ev.Layers) != 3 || ev.Layers[2] != (LayerDevice{Layer: 2, Device: "CPU"}) {
		t.Fatalf("layers %+v", ev.Layers)
	}
	want := []Buffer{{Kind: BufferModel, Device: "CPU_Mapped", MiB: 0.63, Line: 504}, {Kind: BufferOutput, Device: "CPU", MiB: 0, Line: 522}, {Kind: BufferKV, Device: "CPU", MiB: 0.5, Line: 525}, {Kind: BufferCompute, Device: "CPU", MiB: 2.64, Line: 659}}
	if len(ev.Buffers) != len(want) {
		t.Fatalf("buffers %+v", ev.Buffers)
	}
	for i := range want {
		if ev.Buffers[i] != want[i] {
			t.Errorf("buffer %d = %+v, want %+v", i, ev.Buffers[i], want[i])
		}
	}
	// The dry pass's "CPU model buffer size = 0.00 MiB" (line 186) is outside the last block.
	got := map[string]MarkerCheck{}
	for _, m := range ev.Markers {
		got[m.Regex] = m
	}
	if m := got[`CPU_Mapped model buffer`]; !m.Ok || m.Line != 504 {
		t.Errorf("must marker %+v", m)
	}
	if m := got[`CPU model buffer size`]; !m.Ok || m.Found {
		t.Errorf("a must_not marker only in the dry pass counted: %+v", m)
	}
	if len(ev.Failed()) != 0 {
		t.Errorf("failed %+v", ev.Failed())
	}
	if _, err := ScanEvidence(nil, Markers{Must: []string{"("}}); err == nil {
		t.Error("a bad regex was accepted")
	}
}

func TestArgv(t *testing.T) {
	s := Spec{Binary: "/b/llama-server", Args: []string{"-m", "m.gguf", "-t", "1"}}
	if got := strings.Join(s.Argv(8080), " "); got != "/b/llama-server -m m.gguf -t 1 -lv 4 --host 127.0.0.1 --port 8080" {
		t.Fatal(got)
	}
	s.Args = []string{"-m", "m.gguf", "--verbosity=3"}
	if got := strings.Join(s.Argv(1), " "); strings.Contains(got, "-lv 4") {
		t.Fatal(got)
	}
	if _, err := Start(context.Background(), Spec{Binary: "x", Args: []string{"--port=80"}}); err == nil {
		t.Fatal("--port accepted")
	}
}

func TestParseVmHWM(t *testing.T) {
	kib, err := parseVmHWM(strings.NewReader("Name:\tllama-server\nVmPeak:\t  9 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 1 kB\n"))
	if err != nil || kib != 12345 {
		t.Fatal(kib, err)
	}
	if _, err := parseVmHWM(strings.NewReader("Name: x\n")); err == nil {
		t.Fatal("no VmHWM accepted")
	}
	if kib, err := ReadVmHWM(os.Getpid()); err != nil || kib <= 0 {
		t.Fatal(kib, err)
	}
}

// tagged returns an environment entry unique to the test and checks, when the test ends,
// that no process carrying it survived.
func tagged(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	kv := "SPARKBENCH_TEST_TAG=" + hex.EncodeToString(b)
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			left := ProcessesWithEnv(kv)
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Errorf("processes survived the test: %v", left)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return kv
}

func tinySpec(t *testing.T, extra ...string) Spec {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	args := append([]string{"-m", model, "--parallel", "2", "--ctx-size", "512", "-t", llamatest.Threads}, extra...)
	return Spec{Binary: loc.Server, Args: args, Env: []string{tagged(t)}, StartTimeout: time.Minute}
}

// syncBuffer is a log sink the test can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRealServerLifetime(t *testing.T) {
	spec := tinySpec(t)
	spec.Markers = Markers{Must: []string{`CPU_Mapped model buffer`}, MustNot: []string{`CPU_KLEIDIAI model buffer`}}
	var log syncBuffer
	spec.Log = &log
	srv, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	t.Logf("healthy in %v on %s (pid %d)", srv.ReadyIn(), srv.URL(), srv.Pid())
	if !strings.HasSuffix(strings.Join(srv.Argv(), " "), "-lv 4 --host 127.0.0.1 --port "+strings.TrimPrefix(srv.URL(), "http://127.0.0.1:")) {
		t.Errorf("argv %q", srv.Argv())
	}
	rs := loadgenOnce(t, srv.URL(), 2, 8)
	for _, r := range rs {
		if !r.OK() || r.Tokens != 8 || r.Timings == nil {
			t.Fatalf("request %+v", r)
		}
	}
	ev := srv.Evidence()
	if ev.Loads < 1 || ev.MiB(BufferModel) <= 0 || ev.MiB(BufferKV) <= 0 || ev.MiB(BufferCompute) <= 0 || len(ev.Failed()) != 0 {
		t.Fatalf("evidence %+v", ev)
	}
	start := time.Now()
	st := srv.Stop(context.Background())
	t.Logf("stopped in %v: %+v rss %+v", time.Since(start), st.Exit.Class, st.RSS)
	if st.RSS.KiB <= 0 || !strings.HasPrefix(st.RSS.Source, "/proc/") || st.Unexpected {
		t.Errorf("stopped %+v", st)
	}
	if st.Exit.Class != runner.ClassStoppedByUser || st.Exit.Escalated {
		t.Errorf("exit %+v", st.Exit)
	}
	if st2 := srv.Stop(context.Background()); st2.RSS != st.RSS {
		t.Error("Stop is not idempotent")
	}
	// The log file's evidence is the live evidence.
	again, _ := ScanEvidence([]byte(log.String()), spec.Markers)
	if again.BlockLine != ev.BlockLine || len(again.Buffers) != len(ev.Buffers) {
		t.Errorf("log evidence %+v, live %+v", again, ev)
	}
}

func loadgenOnce(t *testing.T, url string, c, n int) []loadgen.Result {
	t.Helper()
	// No keep-alive: a connection the test's client left idle would make llama-server wait
	// out its keep-alive timeout (5 s) on SIGTERM, and Stop escalate to SIGKILL (seen once
	// under load: the last response's connection went back to the idle pool after the run had
	// closed its idle connections).
	tr := loadgen.NewTransport(c)
	tr.DisableKeepAlives = true
	defer tr.CloseIdleConnections()
	a := loadgen.Start(context.Background(), loadgen.Config{URL: url, Clients: c, Measured: c, NPredict: n, Seed: 42,
		Prompt: func(i int) string { return "Request " + string(rune('A'+i)) + ". hello" }, Timeout: time.Minute, Transport: tr})
	var rs []loadgen.Result
	for r := range a.Results() {
		rs = append(rs, r)
	}
	return rs
}

func TestVerboseShowsLayerDevices(t *testing.T) {
	spec := tinySpec(t, "-v", "-fit", "off")
	srv, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	// The evidence as Stop returns it (the log read to its end), as the capacity run uses it:
	// right after Start the log reader may not have reached the layer lines yet (the server
	// answers /health before the reader catches up on a loaded machine).
	ev := srv.Stop(context.Background()).Evidence
	if ev.Loads != 1 || len(ev.Layers) < 2 || ev.Layers[0].Device != "CPU" {
		t.Fatalf("evidence at -v with -fit off: %+v", ev)
	}
	for _, a := range srv.Argv() {
		if a == "-lv" {
			t.Fatalf("-lv added beside -v: %q", srv.Argv())
		}
	}
}

// A port taken by another program that even answers /health: llama-server cannot bind it, the
// 200 is not from our process, the next attempt moves to a free port.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})}
	go func() { _ = impostor.Serve(ln) }()
	defer impostor.Close()
	taken := ln.Addr().(*net.TCPAddr).Port

	spec := tinySpec(t)
	spec.Port = taken
	srv, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	at := srv.Attempts()
	if len(at) != 2 || at[0].Port != taken || !strings.Contains(at[0].Reason, BindFailure) || srv.Port() == taken {
		t.Fatalf("attempts %+v, port %d", at, srv.Port())
	}
	if runner.ProcessAlive(at[0].Pid) {
		t.Errorf("the failed attempt %d is alive", at[0].Pid)
	}
	if rs := loadgenOnce(t, srv.URL(), 1, 4); !rs[0].OK() {
		t.Fatalf("request %+v", rs[0])
	}
}

func TestBadModelNeverHealthy(t *testing.T) {
	spec := tinySpec(t)
	bad := filepath.Join(t.TempDir(), "not.gguf")
	if err := os.WriteFile(bad, []byte("this is not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec.Args[1] = bad
	var log syncBuffer
	spec.Log = &log
	start := time.Now()
	_, err := Start(context.Background(), spec)
	var se *StartError
	if !errors.As(err, &se) || se.Class != runner.ClassLoadFailed || !strings.Contains(se.Reason, "invalid magic") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
	if se.Exit.PeakRSS <= 0 || !strings.Contains(log.String(), "exiting due to model loading error") {
		t.Errorf("exit %+v, log %q", se.Exit, log.String())
	}
}

// A binary that starts but never answers /health (a stand-in for a hung load): the start
// timeout stops it and its whole process group.
func TestStartTimeout(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "llama-server")
	script := "#!/bin/sh\necho 'main: loading model'\nsleep 300 &\nsleep 300\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Start(context.Background(), Spec{Binary: fake, Args: []string{"-m", "x.gguf"}, Env: []string{tagged(t)},
		StartTimeout: 700 * time.Millisecond, Grace: 300 * time.Millisecond})
	var se *StartError
	if !errors.As(err, &se) || se.Class != runner.ClassTimeout || !strings.Contains(se.Reason, "did not answer 200 within 700ms") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestKilledServer(t *testing.T) {
	srv, err := Start(context.Background(), tinySpec(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	if err := syscall.Kill(srv.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after a kill")
	}
	st := srv.Stop(context.Background())
	if !st.Unexpected || st.Exit.Class != runner.ClassCrashed || st.RSS.Source != "wait4 rusage" || st.RSS.KiB <= 0 {
		t.Fatalf("stopped %+v", st)
	}
}

// SIGTERM with a stream in flight would take llama-server 30 s: Stop escalates after the
// grace period, so the wait stays bounded even when the client did not let go.
func TestStopWithStreamInFlight(t *testing.T) {
	spec := tinySpec(t)
	spec.Args[5] = "8192" // --ctx-size: room for a long generation in each of the 2 slots
	spec.Grace = time.Second
	srv, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	a := loadgen.Start(context.Background(), loadgen.Config{URL: srv.URL(), Clients: 1, Measured: 1, NPredict: 3000,
		Prompt: func(int) string { return "Request 1. long" }, Timeout: time.Minute})
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	st := srv.Stop(context.Background())
	took := time.Since(start)
	r := <-a.Results()
	t.Logf("stop took %v, exit %+v; client: %s", took, st.Exit, r.Error)
	if took > 5*time.Second {
		t.Errorf("stop took %v", took)
	}
	if r.OK() {
		t.Errorf("the 3000-token stream completed: %+v", r)
	}
}
