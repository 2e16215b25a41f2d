package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
	"sparkbench/runner/remote/sshdtest"
)

// writeCapacityRPCPlan writes docs/examples/capacity-rpc-topology.json with the given ports
// and absolute paths: a local candidate (-dev none) and an RPC candidate (rpc: true, -dev
// RPC0,RPC1) of the tiny model, one slot, one client, the forward pass, two rpc_servers on
// host-a and host-b; generous limits (CI is loaded).
func writeCapacityRPCPlan(t *testing.T, dir string, ports [2]int) string {
	t.Helper()
	examples := filepath.Join(llamatest.RepoRoot(), "docs", "examples")
	ex, err := os.ReadFile(filepath.Join(examples, "capacity-rpc-topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.NewReplacer("127.0.0.1:50071", fmt.Sprintf("127.0.0.1:%d", ports[0]), "127.0.0.1:50072", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"../../testdata/models/tiny-llama-f32.gguf", llamatest.Model(t, "tiny-llama-f32.gguf"),
		`"serving-prompts.json"`, fmt.Sprintf("%q", filepath.Join(examples, "serving-prompts.json"))).Replace(string(ex))
	path := filepath.Join(dir, "capacity-rpc-topology.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeCapacityRPCPlanOf writes a plan like the example with another model, passes, measured
// requests and tokens per request.
func writeCapacityRPCPlanOf(t *testing.T, dir string, ports [2]int, modelName, passes string, measured, nPredict int) string {
	t.Helper()
	pp := filepath.Join(dir, "prompt-plan.json")
	if err := os.WriteFile(pp, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Request {n}. ","body":"The quick brown fox jumps over the lazy dog."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := llamatest.Model(t, modelName)
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.capacity/v1",
  "name": "tiny capacity over RPC (CLI test)",
  "candidates": [
    {"id": "local", "label": "tiny f32 here", "model": {"path": %[1]q, "sha256": %[2]q},
     "server_flags": ["-t", "1", "-lv", "4", "-dev", "none"]},
    {"id": "rpc", "label": "tiny f32 on two RPC servers", "model": {"path": %[1]q, "sha256": %[2]q},
     "server_flags": ["-t", "1", "-lv", "4", "-ngl", "99", "-dev", "RPC0,RPC1"], "rpc": true}
  ],
  "slots": [1], "clients": [1], "passes": %[6]s,
  "warmups": 1, "measured": %[7]d, "n_predict": %[8]d, "ctx_per_slot": 256, "seed": 42,
  "prompt_plan": {"path": "prompt-plan.json", "sha256": %[3]q},
  "limits": {"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 120000, "peak_rss_mib_max": 8192,
             "generation_rate_spread_max": 0.9, "e2e_p95_spread_max": 0.9},
  "rpc_servers": [{"host": "host-a", "endpoint": "127.0.0.1:%[4]d", "threads": 1},
                  {"host": "host-b", "endpoint": "127.0.0.1:%[5]d", "threads": 1}]
}
`, model, capacitySHA(t, model), capacitySHA(t, pp), ports[0], ports[1], passes, measured, nPredict)
	path := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// capacityRPCNotes are the study's capacity.rpc_server journal entries.
func capacityRPCNotes(t *testing.T, nb string) []study.RPCServerNote {
	t.Helper()
	var out []study.RPCServerNote
	for _, p := range journalOf(t, nb, "1", capacity.NoteRPCServer) {
		var n study.RPCServerNote
		if err := json.Unmarshal(p, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestCapacityRPCTopologyOverSSH: a capacity study with a local candidate and an RPC candidate
// over two ggml-rpc-servers the run starts over ssh on two loopback sshd hosts: both servers
// are started before the first lifetime and stopped after the last (journaled, none left on
// either host), the RPC candidate's lifetime passes the RPC evidence gate and carries its
// per-host split, the network tax is the RPC cell's rate over the local cell's (and the
// selected points'), capacity show prints it, and the receipt prints it and verifies.
func TestCapacityRPCTopologyOverSSH(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := writeCapacityRPCPlan(t, dir, [2]int{sshdtest.FreePort(t), sshdtest.FreePort(t)})
	nb := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runCapacity("run", "1", "--notebook", nb, "--llama-dir", llamaDir)
	t.Logf("run: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("run: %d", code)
	}
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Fatalf("ggml-rpc-servers left on the hosts after the run: %v", left)
	}
	for _, w := range []string{"ggml-rpc-server on host host-a (127.0.0.1:", ") started (pid ", ") stopped (pid "} {
		if !strings.Contains(errOut, w) {
			t.Errorf("the run's progress does not say %q", w)
		}
	}
	var started, stopped []string
	for _, n := range capacityRPCNotes(t, nb) {
		switch n.Event {
		case "started":
			started = append(started, n.Host)
			if n.PID <= 0 || !strings.HasSuffix(n.Argv[0], "/"+remote.RPCServerName) || !strings.Contains(strings.Join(n.Via, " "), "-tt") {
				t.Errorf("started: %+v", n)
			}
		case "stopped":
			stopped = append(stopped, n.Host)
			if n.Signal != "SIGTERM" || len(n.Left) != 0 || n.Error != "" || !strings.Contains(n.Log, "Accepted client connection") {
				t.Errorf("stopped: %+v", n)
			}
		default:
			t.Errorf("journaled %+v", n)
		}
	}
	if strings.Join(started, ",") != "host-a,host-b" || strings.Join(stopped, ",") != "host-a,host-b" {
		t.Fatalf("started %v, stopped %v: want both hosts, each once", started, stopped)
	}
	code, js, errOut := runCapacity("show", "1", "--notebook", nb, "--json")
	if code != 0 {
		t.Fatalf("show --json: %d %s", code, errOut)
	}
	var rep capacity.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil || !rep.Trusted {
		t.Fatalf("show --json: %v, trusted %v\n%s", err, rep.Trusted, js)
	}
	rate := map[string]float64{}
	selected := map[string]float64{}
	for _, c := range rep.Envelope {
		if len(c.Cells) != 1 || c.Cells[0].GenerationRate == nil {
			t.Fatalf("candidate %s: cells %+v", c.Candidate, c.Cells)
		}
		for _, f := range c.Cells[0].Failures {
			if strings.HasPrefix(f, "rpc:") {
				t.Errorf("candidate %s fails the RPC evidence gate: %v", c.Candidate, c.Cells[0].Failures)
			}
		}
		rate[c.Candidate] = *c.Cells[0].GenerationRate
		if c.Selected != nil {
			selected[c.Candidate] = c.Selected.GenerationRate
		}
	}
	checkCapacityNetworkTax(t, rep.NetworkTax, rate, selected)
	if len(rep.RPCSplits) != 1 || rep.RPCSplits[0].Candidate != "rpc" || len(rep.RPCSplits[0].Devices) != 2 {
		t.Fatalf("RPC splits: %+v", rep.RPCSplits)
	}
	sp := rep.RPCSplits[0]
	for i, host := range []string{"host-a", "host-b"} {
		if d := sp.Devices[i]; d.Device != fmt.Sprintf("RPC%d", i) || d.Host != host || d.ModelMiB <= 0 {
			t.Errorf("split device %d: %+v", i, d)
		}
	}
	t.Logf("RPC split: %s", capacity.RPCSplitText(sp))
	// the run journaled the same split for that lifetime
	splits := journalOf(t, nb, "1", capacity.NoteRPCSplit)
	var jn capacity.RPCSplitNote
	if len(splits) != 1 || json.Unmarshal(splits[0], &jn) != nil || jn.Lifetime != "forward/rpc/p1" || len(jn.Devices) != 2 || jn.Devices[1] != sp.Devices[1] {
		t.Errorf("journaled splits %s, want forward/rpc/p1's %+v", splits, sp)
	}
	code, text, _ := runCapacity("show", "1", "--notebook", nb)
	if code != 0 || !strings.Contains(text, "network tax (RPC candidate rate / local candidate rate, same model):") || !strings.Contains(text, "rpc forward/p1: RPC0 host-a (127.0.0.1:") {
		t.Errorf("show: %d\n%s", code, text)
	}
	bundle := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", "1", "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	tax := fmt.Sprintf("%.4f", rate["rpc"]/rate["local"])
	if !strings.Contains(string(md), "## RPC topology") || !strings.Contains(string(md), "### Network tax") || !strings.Contains(string(md), "| "+tax+" |") {
		t.Errorf("receipt.md does not print the network tax %s:\n%s", tax, md)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}

// checkCapacityNetworkTax checks the one pair's network tax against the candidates' cell and
// selected rates.
func checkCapacityNetworkTax(t *testing.T, taxes []capacity.NetworkTax, rate, selected map[string]float64) {
	t.Helper()
	if len(taxes) != 1 || taxes[0].Local != "local" || taxes[0].RPC != "rpc" || len(taxes[0].Cells) != 1 {
		t.Fatalf("network tax: %+v", taxes)
	}
	tx := taxes[0]
	c := tx.Cells[0]
	want := rate["rpc"] / rate["local"]
	if c.Slots != 1 || c.Clients != 1 || c.LocalRate != rate["local"] || c.RPCRate != rate["rpc"] || math.Abs(c.Ratio-want) > 1e-12*want {
		t.Errorf("network tax cell %+v, the cells give %v / %v = %v", c, rate["rpc"], rate["local"], want)
	}
	if len(selected) == 2 {
		if w := selected["rpc"] / selected["local"]; tx.Selected == nil || math.Abs(*tx.Selected-w) > 1e-12*w {
			t.Errorf("selected network tax %v, the selected points give %v", tx.Selected, w)
		}
	} else if tx.Selected != nil || tx.Note == "" {
		t.Errorf("selected network tax %v (note %q) without both selected points %v", tx.Selected, tx.Note, selected)
	}
	sel := "none (" + tx.Note + ")"
	if tx.Selected != nil {
		sel = fmt.Sprintf("%.4f", *tx.Selected)
	}
	t.Logf("network tax: P1/C1 %.4f (%.2f / %.2f tok/s), selected points %s", c.Ratio, c.RPCRate, c.LocalRate, sel)
}

// TestCapacityRPCPortTaken: a port already taken on a host refuses the capacity run before any
// server lifetime, naming host and port; no ggml-rpc-server is started and the refusal is
// journaled.
func TestCapacityRPCPortTaken(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	capacityTag(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := writeCapacityRPCPlan(t, dir, [2]int{sshdtest.FreePort(t), taken})
	nb := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runCapacity("run", "1", "--notebook", nb, "--llama-dir", llamaDir)
	t.Logf("run with a taken port: exit %d\n%s%s", code, out, errOut)
	want := fmt.Sprintf("port %d is already taken on host host-b", taken)
	if code == 0 || !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "rpc:port_taken") {
		t.Fatalf("run with a taken port: exit %d, want a refusal naming %q", code, want)
	}
	if strings.Contains(errOut, "llama-server ready") {
		t.Errorf("a server lifetime ran")
	}
	notes := capacityRPCNotes(t, nb)
	if len(notes) != 1 || notes[0].Event != "refused" || notes[0].Host != "host-b" || !strings.Contains(notes[0].Error, want) {
		t.Errorf("journaled %+v, want one refusal of host-b", notes)
	}
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Errorf("servers started anyway: %v", left)
	}
}

// TestCapacityRPCServerDies: a ggml-rpc-server killed during the RPC candidate's first
// lifetime halts the run with rpc:server_died naming the host (the reverse pass's lifetimes do
// not run), the study is halted, and the other server is stopped: none is left.
func TestCapacityRPCServerDies(t *testing.T) {
	lab, llamaDir := rpcLab(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := writeCapacityRPCPlanOf(t, dir, [2]int{sshdtest.FreePort(t), sshdtest.FreePort(t)}, "medium-llama-q8_0.gguf", `["forward", "reverse"]`, 40, 64)
	nb := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := runCapacity("run", "1", "--notebook", nb, "--llama-dir", llamaDir)
		done <- res{c, o, e}
	}()
	// wait for the RPC candidate's llama-server, then kill host-b's ggml-rpc-server
	killRPCServerOnceRunning(t, lab, "the RPC candidate's server", 2*time.Second, func() bool { return processRunning("llama-server", "--rpc") })
	var r res
	select {
	case r = <-done:
	case <-time.After(4 * time.Minute):
		t.Fatal("the run did not end after the server died")
	}
	t.Logf("run after the kill: %d\n%s%s", r.code, r.out, r.err)
	if r.code == 0 || !strings.Contains(r.err, "rpc:server_died") || !strings.Contains(r.err, "host host-b") {
		t.Errorf("run: exit %d, want a halt with rpc:server_died naming host-b", r.code)
	}
	if strings.Contains(r.err, "reverse/rpc/p1: llama-server ready") {
		t.Error("the reverse pass ran after the server died")
	}
	code, js, _ := runCapacity("show", "1", "--notebook", nb, "--json")
	var rep capacity.Report
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || rep.Study.Status != study.StatusHalted || !strings.Contains(rep.Study.LastHalt, "rpc:server_died") {
		t.Errorf("show: %d, study %+v", code, rep.Study)
	}
	// the lifetime the server died in is interrupted: a resumed run measures it again
	b, err := os.ReadFile(filepath.Join(dir, "data", "sparkbench", "runs", "1", capacity.RunManifestFile))
	var man capacity.RunReport
	if err != nil || json.Unmarshal(b, &man) != nil {
		t.Fatalf("run.json: %v", err)
	}
	interrupted := false
	for _, l := range man.Lifetimes {
		interrupted = interrupted || l.Key == "forward/rpc/p1" && strings.Contains(l.Interrupted, "rpc:server_died")
	}
	if !interrupted || len(man.RPCServers) != 4 {
		t.Errorf("run.json: lifetimes %+v, rpc_servers %d entries (want 2 starts, 2 stops)", man.Lifetimes, len(man.RPCServers))
	}
	if left := rpcServersOf(lab); len(left) > 0 {
		t.Errorf("servers left: %v", left)
	}
}

// TestCapacityRPCExamplePlanValidates: docs/examples/capacity-rpc-topology.json is a valid plan
// and its RPC candidate's servers get --rpc with both endpoints before its flags.
func TestCapacityRPCExamplePlanValidates(t *testing.T) {
	code, out, errOut := runCapacity("validate", filepath.Join(llamatest.RepoRoot(), "docs", "examples", "capacity-rpc-topology.json"))
	if code != 0 || !strings.Contains(out, "--ctx-size 256 --rpc 127.0.0.1:50071,127.0.0.1:50072 -t 1 -lv 4 -ngl 99 -dev RPC0,RPC1") ||
		!strings.Contains(out, "--ctx-size 256 -t 1 -lv 4 -dev none") {
		t.Fatalf("validate: %d\n%s\n%s", code, out, errOut)
	}
}
