package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
	"sparkbench/runner/remote/sshdtest"
)

// capacityHost starts a loopback sshd host "bench-a" with its own llama.cpp and model folders
// (the tiny model) and writes a hosts file for it; without llama-server when noServer.
func capacityHost(t *testing.T, noServer bool) (hostsFile, bin string) {
	t.Helper()
	loc := llamatest.Binaries(t)
	srv := sshdtest.Start(t, "cap-host")
	bin, models := sshdtest.HostDirs(t, loc.Dir, llamatest.Model(t, "tiny-llama-f32.gguf"))
	if noServer {
		if err := os.Remove(filepath.Join(bin, remote.ServerName)); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]any{"schema": "sparkbench.hosts/v1", "ssh_config": sshdtest.WriteConfig(t, "", srv),
		"hosts": []any{map[string]any{"name": "bench-a", "ssh": "cap-host", "llama_dir": bin, "model_dirs": []string{models}}}}
	b, _ := json.Marshal(hosts)
	hostsFile = filepath.Join(t.TempDir(), "hosts.json")
	if err := os.WriteFile(hostsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return hostsFile, bin
}

// hostCapacityPlan is smallCapacityPlan cut to one server lifetime (forward pass, P1, C1, 2 requests of 4
// tokens) with limits a loaded 2-core machine meets.
func hostCapacityPlan(t *testing.T, dir string) string {
	t.Helper()
	plan := smallCapacityPlan(t, dir, "tiny capacity on a host")
	var m map[string]any
	b, _ := os.ReadFile(plan)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["slots"], m["passes"] = []int{1}, []string{"forward"}
	m["limits"] = map[string]any{"ttft_ms_p95_max": 60000, "e2e_ms_p95_max": 120000, "peak_rss_mib_max": 8192,
		"generation_rate_spread_max": 10, "e2e_p95_spread_max": 10}
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(plan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestCapacityRunOnHost: a capacity study whose llama-server runs on a loopback sshd host
// (ssh -tt, the model found and hashed in the host's model_dirs) and is loaded from here
// through a forwarded port: run.json, the journal and the receipt carry the network path and
// its round-trip floor, the server's evidence and peak RSS come from the host, the receipt
// verifies, and no llama-server is left on the host.
func TestCapacityRunOnHost(t *testing.T) {
	hostsFile, bin := capacityHost(t, false)
	capacityTag(t) // the local ssh processes carry the tag: none may survive either
	dir := t.TempDir()
	plan := hostCapacityPlan(t, dir)
	nb := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d\n%s%s", code, out, errOut)
	}
	runDir := filepath.Join(dir, "run")
	start := time.Now()
	code, out, errOut := runCapacity("run", "1", "--notebook", nb, "--on", "bench-a", "--hosts", hostsFile, "--out", runDir)
	t.Logf("capacity run --on: %v\n%s%s", time.Since(start).Round(time.Millisecond), out, errOut)
	if code != 0 {
		t.Fatalf("run --on: exit %d", code)
	}
	if left := sshdtest.Processes(filepath.Join(bin, remote.ServerName)); len(left) > 0 {
		t.Fatalf("llama-server left on the host: %v", left)
	}
	var rep capacity.RunReport
	b, err := os.ReadFile(filepath.Join(runDir, capacity.RunManifestFile))
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Lifetimes) != 1 {
		t.Fatalf("run.json: %v\n%s", err, b)
	}
	// the run's machine is the host's fingerprint (here the same box), without its name, and
	// its build the host's llama.cpp (checkHostBuild)
	if m := rep.Machine; m == nil || m.LogicalCPUs <= 0 || m.MemBytes <= 0 || m.Hostname != "" {
		t.Errorf("machine %+v", rep.Machine)
	}
	checkHostBuild(t, rep.Build, bin)
	s := rep.Lifetimes[0].Server
	n := s.Network
	if n == nil {
		t.Fatalf("no network record: %+v", s)
	}
	if n.Host != "bench-a" || n.SSH != "cap-host" || n.LocalPort <= 0 || n.RemotePort <= 0 || n.RTTProbes != 20 || n.RTTError != "" ||
		!(n.RTTMinMs > 0) || n.RTTMinMs > n.RTTMedianMs || n.StopSignal != "SIGTERM" || len(n.Left) != 0 || n.StopError != "" ||
		!strings.Contains(n.Path, "ssh cap-host") {
		t.Errorf("network: %+v", n)
	}
	t.Logf("network: %s, round trips min %.3f ms, median %.3f ms", n.Path, n.RTTMinMs, n.RTTMedianMs)
	if s.Argv[0] != filepath.Join(bin, remote.ServerName) || s.Port != n.RemotePort || s.Class != "stopped_by_user" ||
		s.Unexpect || len(s.Attempts) != 1 || !strings.Contains(strings.Join(s.Attempts[0].Via, " "), "-tt") {
		t.Errorf("server: argv %v port %d class %s %s unexpected %v attempts %+v", s.Argv, s.Port, s.Class, s.Reason, s.Unexpect, s.Attempts)
	}
	if s.RSS == nil || s.RSS.KiB <= 0 || !strings.HasPrefix(s.RSS.Source, "host bench-a /proc/") {
		t.Errorf("peak RSS: %+v", s.RSS)
	}
	if s.Evidence == nil || len(s.Evidence.Buffers) == 0 {
		t.Errorf("evidence: %+v", s.Evidence)
	}
	if c := rep.Lifetimes[0].Cells; len(c) != 1 || c[0].Completed != 2 {
		t.Errorf("cells: %+v", c)
	}
	notes := journalOf(t, nb, "1", capacity.NoteNetwork)
	if len(notes) != 1 || !strings.Contains(string(notes[0]), `"rtt_median_ms"`) || !strings.Contains(string(notes[0]), "ssh cap-host") {
		t.Errorf("journal: %d %s entries: %s", len(notes), capacity.NoteNetwork, notes)
	}
	bundle := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", "1", "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if !strings.Contains(string(md), "## Network path") || !strings.Contains(string(md), "ssh cap-host") {
		t.Errorf("receipt.md has no network path:\n%s", md)
	}
	for _, l := range strings.Split(string(md), "\n") {
		if strings.Contains(l, "cap-host") {
			t.Logf("receipt.md: %s", l)
		}
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}

// TestCapacityRunOnHostBadInput: a host without llama-server in its llama_dir, one without the
// plan's model in its model_dirs (through the notebook and notebook-free), an unknown host, and
// --hosts without --on are refused (exit 2) naming what is wrong; nothing runs.
func TestCapacityRunOnHostBadInput(t *testing.T) {
	hostsFile, bin := capacityHost(t, true)
	dir := t.TempDir()
	plan := hostCapacityPlan(t, dir)
	nb := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCapacity("run", "1", "--notebook", nb, "--on", "bench-a", "--hosts", hostsFile, "--out", filepath.Join(dir, "run"))
	if code != 2 || !strings.Contains(errOut, "host bench-a: no executable llama-server in "+bin) {
		t.Errorf("no llama-server: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("a run folder was made: %v", err)
	}
	if n := journalOf(t, nb, "1", capacity.NoteRun); len(n) != 0 {
		t.Errorf("a run was journaled: %s", n)
	}
	// with llama-server there but not the model: refused naming the folders looked at
	if err := os.Symlink(filepath.Join(llamatest.Binaries(t).Dir, remote.ServerName), filepath.Join(bin, remote.ServerName)); err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(filepath.Dir(bin), "models")
	if err := os.Remove(filepath.Join(models, "tiny-llama-f32.gguf")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCapacity("run", "1", "--notebook", nb, "--on", "bench-a", "--hosts", hostsFile, "--out", filepath.Join(dir, "run"))
	if code != 2 || !strings.Contains(errOut, "host bench-a: model ") || !strings.Contains(errOut, "tiny-llama-f32.gguf is in none of the host's model_dirs (looked at "+models+"/tiny-llama-f32.gguf)") {
		t.Errorf("no model on the host: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("a run folder was made: %v", err)
	}
	code, _, errOut = runCapacity("run", "1", "--notebook", nb, "--on", "bench-z", "--hosts", hostsFile)
	if code != 2 || !strings.Contains(errOut, "bench-z") {
		t.Errorf("unknown host: exit %d %s", code, errOut)
	}
	// a notebook-free run is refused the same way, with no run folder
	code, _, errOut = runCapacity("run", plan, "--no-notebook", "--on", "bench-a", "--hosts", hostsFile, "--out", filepath.Join(dir, "run"))
	if code != 2 || !strings.Contains(errOut, "tiny-llama-f32.gguf is in none of the host's model_dirs") {
		t.Errorf("plan file with --on: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("a run folder was made: %v", err)
	}
	code, _, errOut = runCapacity("run", "1", "--notebook", nb, "--hosts", hostsFile)
	if code != 2 || !strings.Contains(errOut, "give --on too") {
		t.Errorf("--hosts without --on: exit %d %s", code, errOut)
	}
	// a plan with a telemetry block: its samplers read this machine, not the host's servers
	var m map[string]any
	b, _ := os.ReadFile(plan)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["telemetry"] = map[string]any{"interval_ms": 100}
	b, _ = json.Marshal(m)
	telPlan := filepath.Join(dir, "telemetry-plan.json")
	if err := os.WriteFile(telPlan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCapacity("run", telPlan, "--no-notebook", "--on", "bench-a", "--hosts", hostsFile, "--out", filepath.Join(dir, "run"))
	if code != 2 || !strings.Contains(errOut, "telemetry samples this machine's devices, not host bench-a's") {
		t.Errorf("a telemetry plan with --on: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "run")); !os.IsNotExist(err) {
		t.Errorf("a run folder was made: %v", err)
	}
}

// TestCapacityRunPlanOnHost: a notebook-free `capacity run PLAN --on HOST` runs its servers (the
// lifetime's and the quality guard's) on the host as a study's does: run.json has the network
// path and floor, the run folder's receipt prints it and verifies, and no llama-server is left
// on the host.
func TestCapacityRunPlanOnHost(t *testing.T) {
	hostsFile, bin := capacityHost(t, false)
	capacityTag(t)
	dir := t.TempDir()
	plan := hostCapacityPlan(t, dir)
	// with a quality gate: the guard's server runs on the host too
	b, _ := os.ReadFile(plan)
	if err := os.WriteFile(plan, []byte(strings.Replace(string(b), `"limits": {`, `"limits": {"quality_floor": 0.5, `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(cases, []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[
	  {"id":"any","prompt":"Hello","n_predict":4,"matcher":"regex","expect":"[\\s\\S]*"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	code, out, errOut := runCapacity("run", plan, "--no-notebook", "--on", "bench-a", "--hosts", hostsFile, "--out", runDir, "--quality-cases", cases)
	if code != 0 {
		t.Fatalf("run PLAN --on: exit %d\n%s%s", code, out, errOut)
	}
	if left := sshdtest.Processes(filepath.Join(bin, remote.ServerName)); len(left) > 0 {
		t.Fatalf("llama-server left on the host: %v", left)
	}
	var rep capacity.RunReport
	b, err := os.ReadFile(filepath.Join(runDir, capacity.RunManifestFile))
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Lifetimes) != 1 || len(rep.Guards) != 1 {
		t.Fatalf("run.json: %v\n%s", err, b)
	}
	checkHostBuild(t, rep.Build, bin)
	if n := rep.Lifetimes[0].Server.Network; n == nil || n.Host != "bench-a" || !(n.RTTMinMs > 0) || n.RTTMinMs > n.RTTMedianMs || len(n.Left) != 0 {
		t.Fatalf("network: %+v", n)
	}
	if g := rep.Guards[0]; g.Score != 1 || g.Cases != 1 || g.Server.Network == nil || g.Server.Network.StopSignal != "SIGTERM" ||
		len(g.Server.Network.Left) != 0 || g.Server.Argv[0] != filepath.Join(bin, remote.ServerName) {
		t.Errorf("guard: %+v network %+v", g, g.Server.Network)
	}
	bundle := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", "--capacity-run", runDir, "--out", bundle); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	if md, _ := os.ReadFile(filepath.Join(bundle, "receipt.md")); !strings.Contains(string(md), "## Network path") {
		t.Errorf("receipt.md has no network path:\n%s", md)
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}

// checkHostBuild: run.json's build of a run on host bench-a is the host's llama.cpp: its
// llama_dir and llama-server, the version line its llama-bench printed there, and the SHA-256
// of the llama-server the run started, hashed on the host (compared here with the same file
// hashed locally: the loopback host is this machine).
func checkHostBuild(t *testing.T, b *llamacpp.Build, bin string) {
	t.Helper()
	server := filepath.Join(bin, remote.ServerName)
	if b == nil || b.Source != "host bench-a" || b.Server != server || !strings.HasPrefix(b.VersionLine, "version: ") || len(b.Binaries) != 2 {
		t.Fatalf("build %+v, want the host's", b)
	}
	want, err := hashing.File(context.Background(), server, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Binaries[1]; got.Path != server || got.SHA256 != want || got.Size <= 0 {
		t.Errorf("the host's llama-server %+v, want SHA-256 %s", got, want)
	}
}
