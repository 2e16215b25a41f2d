package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
)

// loopHost is a loopback sshd host with its own llama.cpp folder and model folder.
func loopHost(t *testing.T, alias string, models ...string) (Host, Options, *sshdtest.Server) {
	t.Helper()
	loc := llamatest.Binaries(t)
	srv := sshdtest.Start(t, alias)
	bin, md := sshdtest.HostDirs(t, loc.Dir, models...)
	h := Host{Name: alias, SSH: alias, LlamaDir: bin, ModelDirs: []string{md}}
	return h, Options{Config: sshdtest.WriteConfig(t, "", srv)}, srv
}

func drain(l *runner.Leg) *runner.LegResult {
	for range l.Events() {
	}
	return l.Result()
}

func TestRemoteLegRunsThroughTheSameRunner(t *testing.T) {
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	h, o, _ := loopHost(t, "leg-host", model)
	ctx := context.Background()
	s, err := Connect(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, err := hashing.File(ctx, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := s.ResolveModel(ctx, model, want)
	if err != nil || hp != filepath.Join(h.ModelDirs[0], filepath.Base(model)) {
		t.Fatalf("ResolveModel = %q, %v", hp, err)
	}
	res := drain(s.StartLeg(ctx, runner.LegSpec{ID: "remote", Args: []string{"-m", model, "-p", "0", "-n", "4", "-r", "2", "-t", llamatest.Threads}, CVGate: runner.CVGate{Off: true}}))
	if res.Exit.Class != runner.ClassOK || len(res.Results()) != 1 || res.Results()[0].Test != "tg4" {
		t.Fatalf("remote leg: %s %q, %d results; transcript:\n%s", res.Exit.Class, res.Exit.Reason, len(res.Results()), res.Transcript.Bytes())
	}
	if res.Argv[0] != s.Bench() || !slices.Contains(res.Via, "-tt") || !strings.Contains(strings.Join(res.Via, " "), hp) {
		t.Fatalf("argv %q via %q: want the host's llama-bench, ssh -tt and the host's model path", res.Argv, res.Via)
	}
	local := (&runner.Fingerprinter{}).Take(ctx, llamatest.Binaries(t).Bench, nil)
	fp := res.Fingerprint
	if fp == nil || fp.Binary.SHA256 != local.Binary.SHA256 || fp.VersionLine != local.VersionLine ||
		len(fp.Libraries) != len(local.Libraries) || fp.Machine.CPUModel != local.Machine.CPUModel || fp.Machine.MemBytes != local.Machine.MemBytes {
		t.Fatalf("host fingerprint %+v\nlocal %+v: the same build and machine must read the same", fp, local)
	}
	for i := range fp.Libraries {
		if fp.Libraries[i].Name != local.Libraries[i].Name || fp.Libraries[i].SHA256 != local.Libraries[i].SHA256 {
			t.Fatalf("library %d: host %+v, local %+v", i, fp.Libraries[i], local.Libraries[i])
		}
	}
}

func TestConnectionKilledMidLegLeavesNoOrphan(t *testing.T) {
	model := llamatest.Model(t, "medium-llama-f16.gguf")
	h, o, _ := loopHost(t, "kill-host", model)
	ctx := context.Background()
	s, err := Connect(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ResolveModel(ctx, model, ""); err != nil {
		t.Fatal(err)
	}
	leg := s.StartLeg(ctx, runner.LegSpec{ID: "long", Args: []string{"-m", model, "-p", "0", "-n", "512", "-r", "50", "-t", llamatest.Threads}, CVGate: runner.CVGate{Off: true},
		Limits: runner.Limits{Start: 5 * time.Minute, Idle: 5 * time.Minute, Total: 10 * time.Minute}})
	go func() {
		for range leg.Events() {
		}
	}()
	// the remote llama-bench is running: cut the host's connection (its ssh master)
	if !waitFor(60*time.Second, func() bool { return len(sshdtest.Processes(h.LlamaDir+"/llama-bench")) > 0 }) {
		t.Fatal("the remote llama-bench never started")
	}
	if err := syscall.Kill(s.Conn.MasterPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := leg.Result()
	if res.Exit.Class != runner.ClassFailed || !strings.Contains(res.Exit.Reason, "connection to the host was lost") {
		t.Fatalf("leg after the connection was cut: %s %q", res.Exit.Class, res.Exit.Reason)
	}
	if !waitFor(20*time.Second, func() bool { return len(sshdtest.Processes(h.LlamaDir)) == 0 }) {
		t.Fatalf("processes left on the host: %q", sshdtest.Processes(h.LlamaDir))
	}
}

func waitFor(bound time.Duration, ok func() bool) bool {
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

func TestHostBadInput(t *testing.T) {
	f32 := llamatest.Model(t, "tiny-llama-f32.gguf")
	f16 := llamatest.Model(t, "tiny-llama-f16.gguf")
	loc := llamatest.Binaries(t)
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "date"), []byte("#!/bin/sh\necho 1000000000.25\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshdtest.Start(t, "bad-host", "SetEnv PATH="+fake+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	bin, md := sshdtest.HostDirs(t, loc.Dir)
	// the host's tiny-llama-f16.gguf is another file
	if err := os.Symlink(f32, filepath.Join(md, filepath.Base(f16))); err != nil {
		t.Fatal(err)
	}
	o := Options{Config: sshdtest.WriteConfig(t, "", srv)}
	ctx := context.Background()

	h := Host{Name: "bad-host", SSH: "bad-host", LlamaDir: t.TempDir(), ModelDirs: []string{md}}
	var nl *NoLlamaError
	if _, err := Connect(ctx, h, o); !errors.As(err, &nl) || !strings.Contains(err.Error(), "no executable llama-bench in "+h.LlamaDir) {
		t.Fatalf("a host without llama.cpp: %v", err)
	}
	h.LlamaDir = bin
	s, err := Connect(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.Info.Clock; !c.FarOff() || c.Skew > -24*time.Hour {
		t.Fatalf("the host's clock says 2001: skew %v ± %v, want far off", c.Skew, c.Uncertainty)
	}
	want, _ := hashing.File(ctx, f16, nil)
	var me *ModelError
	if _, err := s.ResolveModel(ctx, f16, want); !errors.As(err, &me) || !strings.Contains(err.Error(), "MISMATCH") {
		t.Fatalf("a model whose hash differs on the host: %v", err)
	}
	if _, err := s.ResolveModel(ctx, "/plans/absent.gguf", ""); !errors.As(err, &me) || !strings.Contains(err.Error(), "in none of the host's model_dirs") {
		t.Fatalf("a model the host lacks: %v", err)
	}
}
