package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
	"sparkbench/runner/remote/sshdtest"
	"sparkbench/store"
)

// rpcLab starts the example hosts file's two hosts as loopback sshd hosts and points
// $SPARKBENCH_HOSTS at the test's copy.
func rpcLab(t *testing.T) (*sshdtest.Lab, string) {
	t.Helper()
	loc := llamatest.Binaries(t)
	lab := sshdtest.StartLab(t, filepath.Join(llamatest.RepoRoot(), "docs", "examples", "hosts.json"), loc.Dir)
	t.Setenv("SPARKBENCH_HOSTS", lab.HostsFile)
	return lab, loc.Dir
}

// writeRPCPlan writes a plan whose legs run model locally (-dev none) and on two
// ggml-rpc-servers the run starts on host-a and host-b (-dev RPC0/RPC1).
func writeRPCPlan(t *testing.T, dir, name, model, sha string, ports [2]int, nGen, reps int) string {
	t.Helper()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "m", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 32], "n_prompt": [32], "n_gen": [%d], "reps": %d, "threads": [1], "ngl": [99],
           "devices": ["none", "RPC0/RPC1"]},
  "split": "combined",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
  "rpc_servers": [{"host": "host-a", "endpoint": "127.0.0.1:%d", "threads": 1},
                  {"host": "host-b", "endpoint": "127.0.0.1:%d", "threads": 1}]
}`, name, model, sha, nGen, reps, ports[0], ports[1])
	file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func rpcModelSHA(t *testing.T, path string) string {
	t.Helper()
	sha, err := hashing.File(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// rpcServersOf lists the loopback hosts' ggml-rpc-server processes (they are this machine's).
func rpcServersOf(lab *sshdtest.Lab) []string {
	var out []string
	for _, d := range lab.LlamaDirs {
		out = append(out, sshdtest.Processes(filepath.Join(d, remote.RPCServerName))...)
	}
	return out
}

func journalOf(t *testing.T, nb, id string, kind string) []json.RawMessage {
	t.Helper()
	n, err := store.Open(nb)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	es, err := n.Journal(context.Background(), mustAtoi(t, id), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, e := range es {
		if e.Kind == kind {
			out = append(out, e.Payload)
		}
	}
	return out
}

// TestRPCTopologyOverSSH: a plan with two rpc_servers on two loopback sshd hosts: the run starts
// ggml-rpc-server on each through ssh, runs the local arm and the RPC arm, and stops both (none
// left on either host); the network tax (device_ratio RPC0/RPC1 / none) is each RPC row's t/s
// over the local row's at the same test and depth; the per-host layer split is journaled; the
// receipt prints the figure and verifies.
func TestRPCTopologyOverSSH(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	// the example plan, with free ports and the model's absolute path
	ex, err := os.ReadFile(filepath.Join(llamatest.RepoRoot(), "docs", "examples", "rpc-topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.NewReplacer("127.0.0.1:50061", fmt.Sprintf("127.0.0.1:%d", sshdtest.FreePort(t)),
		"127.0.0.1:50062", fmt.Sprintf("127.0.0.1:%d", sshdtest.FreePort(t)), "../../testdata/models/tiny-llama-f32.gguf", model).Replace(string(ex))
	file := filepath.Join(dir, "rpc-topology.json")
	if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nb, id, rep := runWithoutCVFlags(t, dir, file, llamaDir)
	t.Logf("register + run: %v", time.Since(start))
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Fatalf("ggml-rpc-servers left on the hosts after the run: %v", left)
	}
	var started, stopped int
	for _, p := range journalOf(t, nb, id, study.NoteRPCServer) {
		var n study.RPCServerNote
		_ = json.Unmarshal(p, &n)
		switch n.Event {
		case "started":
			started++
			if n.PID <= 0 || !strings.HasSuffix(n.Argv[0], "/"+remote.RPCServerName) || !strings.Contains(strings.Join(n.Via, " "), "-tt") {
				t.Errorf("started: %+v", n)
			}
		case "stopped":
			stopped++
			if n.Signal != "SIGTERM" || len(n.Left) != 0 || n.Error != "" || !strings.Contains(n.Log, "Accepted client connection") {
				t.Errorf("stopped: %+v", n)
			}
		}
	}
	if started != 2 || stopped != 2 {
		t.Fatalf("%d servers started, %d stopped, want 2 and 2", started, stopped)
	}
	for _, l := range rep.Legs {
		if l.Class != "ok" {
			t.Fatalf("leg %s: %s %s", l.Label, l.Class, l.Reason)
		}
	}
	checkRPCNetworkTax(t, nb, id, rep)
	// the per-host layer split
	splits := journalOf(t, nb, id, study.NoteRPCSplit)
	if len(splits) == 0 {
		t.Fatal("no layer split journaled")
	}
	var sp study.RPCSplitNote
	_ = json.Unmarshal(splits[0], &sp)
	if len(sp.Devices) != 2 || sp.Devices[0].Host != "host-a" || sp.Devices[1].Host != "host-b" || sp.Devices[0].Layers+sp.Devices[1].Layers != 3 ||
		sp.Devices[0].ModelMiB <= 0 {
		t.Fatalf("layer split: %s", splits[0])
	}
	t.Logf("layer split: %s", splits[0])
	if code, out, errOut := runCLI("study", "show", id, "--notebook", nb); code != 0 || !strings.Contains(out, "device_ratio tg16 @ d0 of tiny RPC0/RPC1 / none") ||
		!strings.Contains(out, "RPC0 host-a (127.0.0.1:") {
		t.Errorf("show: %d\n%s\n%s", code, out, errOut)
	} else {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "RPC") {
				t.Logf("show: %s", l)
			}
		}
	}
	bundle := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "RPC0/RPC1") || !strings.Contains(string(md), "device_ratio") || !strings.Contains(string(md), "## RPC layer split") {
		t.Errorf("receipt.md does not print the network tax:\n%s", md)
	}
	for _, l := range strings.Split(string(md), "\n") {
		if strings.Contains(l, "RPC0/RPC1 / none") || strings.Contains(l, "host-") {
			t.Logf("receipt.md: %s", l)
		}
	}
	sj, _ := os.ReadFile(filepath.Join(bundle, "study.json"))
	if !strings.Contains(string(sj), `"rpc_split"`) || !strings.Contains(string(sj), `"host-b"`) {
		t.Errorf("the bundle's study.json has no layer split")
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}

// checkRPCNetworkTax: every device_ratio figure is RPC t/s ÷ local t/s of its rows, RPC rows
// ran on the servers, and P1 (the tax at tg16 @ d0) is answered with the same value.
func checkRPCNetworkTax(t *testing.T, nb, id string, rep *study.Report) {
	t.Helper()
	n, err := store.Open(nb)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := n.StudyBenchRows(context.Background(), mustAtoi(t, id))
	n.Close()
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]float64{}
	for _, r := range rows {
		ts[fmt.Sprintf("%s %s d%d", r.Devices, r.TestName(), r.NDepth)] = r.AvgTs
		if r.Devices == "RPC0/RPC1" && (!strings.Contains(r.Backends, "RPC") || r.RanOn() != "RPC") {
			t.Errorf("RPC row: backends %q, ran on %q", r.Backends, r.RanOn())
		}
	}
	ratios := 0
	for _, f := range rep.Figures {
		if f.Figure != study.FigureDeviceRatio {
			continue
		}
		ratios++
		key := fmt.Sprintf("%s d%d", f.Selector.Test, *f.Selector.Depth)
		want := ts["RPC0/RPC1 "+key] / ts["none "+key]
		if f.Value == nil || math.Abs(*f.Value-want) > 1e-9*want || f.Selector.Device != "RPC0/RPC1" || f.Selector.BaseDevice != "none" {
			t.Errorf("network tax %s: %v, the rows give %v", f.Label, f.Value, want)
		}
		t.Logf("network tax %s = %.3f (%s)", f.Label, *f.Value, f.Detail)
	}
	if ratios != 4 { // pp32 and tg16 at depths 0 and 32
		t.Fatalf("%d device_ratio figures, want 4: %+v", ratios, rep.Figures)
	}
	if len(rep.Scoreboard) != 1 || rep.Scoreboard[0].Verdict.Outcome != study.Answered || rep.Scoreboard[0].Verdict.Value == nil {
		t.Errorf("P1 (the network tax at tg16 @ d0): %+v", rep.Scoreboard)
	} else if want := ts["RPC0/RPC1 tg16 d0"] / ts["none tg16 d0"]; math.Abs(*rep.Scoreboard[0].Verdict.Value-want) > 1e-9*want {
		t.Errorf("P1 answered %v, the rows give %v", *rep.Scoreboard[0].Verdict.Value, want)
	}
}

// TestRPCTopologyPortTaken: a port already taken on a host refuses the run before any leg, naming
// host and port, and starts no server.
func TestRPCTopologyPortTaken(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	sha := rpcModelSHA(t, model)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	file := writeRPCPlan(t, dir, "rpc port taken", model, sha, [2]int{sshdtest.FreePort(t), taken}, 8, 2)
	id := registerAndRun(t, nb, file, llamaDir, false)
	code, out, errOut := runCLI("study", "run", id, "--notebook", nb, "--llama-dir", llamaDir)
	want := fmt.Sprintf("port %d is already taken on host host-b", taken)
	t.Logf("run with a taken port: exit %d\n%s%s", code, out, errOut)
	if code == 0 || !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "rpc:port_taken") {
		t.Fatalf("run with a taken port: %d\n%s\n%s\nwant %q", code, out, errOut, want)
	}
	for _, l := range showJSON(t, id, nb).Legs {
		if l.ID != 0 || l.Started != nil {
			t.Errorf("leg %s ran: %+v", l.Label, l)
		}
	}
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Errorf("servers started anyway: %v", left)
	}
}

// TestRPCTopologyServerDies: a ggml-rpc-server killed during a leg: the leg ends with
// rpc:server_died naming host and endpoint, the gate is recorded, the run halts, and the other
// server is stopped.
func TestRPCTopologyServerDies(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	model := llamatest.Model(t, "medium-llama-q8_0.gguf")
	sha := rpcModelSHA(t, model)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	file := writeRPCPlan(t, dir, "rpc dies", model, sha, [2]int{sshdtest.FreePort(t), sshdtest.FreePort(t)}, 128, 10)
	id := registerAndRun(t, nb, file, llamaDir, false)
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := runCLI("study", "run", id, "--notebook", nb, "--llama-dir", llamaDir)
		done <- res{c, o, e}
	}()
	// wait for the RPC leg's llama-bench, then kill host-b's server
	killRPCServerOnceRunning(t, lab, "the RPC leg", time.Second, func() bool {
		return len(sshdtest.Processes(filepath.Join(llamaDir, "llama-bench"))) > 0 && processRunning("llama-bench", "RPC0/RPC1")
	})
	var r res
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the run did not end after the server died")
	}
	t.Logf("run after the kill: %d\n%s%s", r.code, r.out, r.err)
	if !strings.Contains(r.out+r.err, "rpc:server_died") || !strings.Contains(r.out+r.err, "host host-b") {
		t.Errorf("run: %d\n%s\n%s", r.code, r.out, r.err)
	}
	rep := showJSON(t, id, nb)
	var died bool
	for _, l := range rep.Legs {
		died = died || strings.Contains(l.Reason, "rpc:server_died") && strings.Contains(l.Reason, "host host-b")
	}
	if !died || rep.Study.Status != study.StatusHalted {
		t.Errorf("status %s, legs %+v", rep.Study.Status, rep.Legs)
	}
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Errorf("servers left: %v", left)
	}
}

// killRPCServerOnceRunning waits (3 minutes at most) until running says the process that uses
// the servers (what) is there, lets it settle, and kills host-b's ggml-rpc-server.
func killRPCServerOnceRunning(t *testing.T, lab *sshdtest.Lab, what string, settle time.Duration, running func() bool) {
	t.Helper()
	var victim int
	for end := time.Now().Add(3 * time.Minute); victim == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal(what + " did not start")
		}
		if !running() {
			continue
		}
		time.Sleep(settle)
		for _, p := range sshdtest.Processes(filepath.Join(lab.LlamaDirs["host-b"], remote.RPCServerName)) {
			victim, _ = strconv.Atoi(strings.Fields(p)[0])
		}
	}
	_ = syscall.Kill(victim, syscall.SIGKILL)
}

// processRunning reports whether a process of tool whose command line holds marker is running
// here (a leg or server on the RPC servers, in the tests that kill one mid-run).
func processRunning(tool, marker string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), tool) && strings.Contains(string(b), marker) {
			return true
		}
	}
	return false
}

// TestRPCExamplePlanValidates: docs/examples/rpc-topology.json is a valid plan (validation checks
// rpc_servers by form; the servers start with the run), and its legs get --rpc and -v.
func TestRPCExamplePlanValidates(t *testing.T) {
	llamatest.Binaries(t)
	code, out, errOut := runCLI("study", "validate", filepath.Join(llamatest.RepoRoot(), "docs", "examples", "rpc-topology.json"))
	if code != 0 || !strings.Contains(out, "--rpc 127.0.0.1:50061,127.0.0.1:50062 -dev RPC0/RPC1 -v") || strings.Contains(out+errOut, "warning") {
		t.Fatalf("validate: %d\n%s\n%s", code, out, errOut)
	}
}
