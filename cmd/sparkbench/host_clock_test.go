package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
	"sparkbench/runner/remote/sshdtest"
)

// TestHostClockFarOff: a loopback host whose `date` runs 93 s ahead (a stand-in first on the
// PATH its sshd gives sessions). `host check` measures the skew from the desktop's midpoint of
// the round trip, says the clock is far off, by how much and what to do, and --json records
// the skew; the host's own legs would still be timed on the desktop.
func TestHostClockFarOff(t *testing.T) {
	loc := llamatest.Binaries(t)
	fake := t.TempDir()
	script := "#!/bin/sh\nnow=$(/bin/date +%s.%N)\necho \"$(( ${now%.*} + 93 )).${now#*.}\"\n"
	if err := os.WriteFile(filepath.Join(fake, "date"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshdtest.Start(t, "lab-skew", "SetEnv PATH="+fake+":/usr/local/bin:/usr/bin:/bin")
	bin, models := sshdtest.HostDirs(t, loc.Dir, llamatest.Model(t, "tiny-llama-f32.gguf"))
	hosts := map[string]any{"schema": "sparkbench.hosts/v1", "ssh_config": sshdtest.WriteConfig(t, "", srv),
		"hosts": []any{map[string]any{"name": "skewed", "ssh": "lab-skew", "llama_dir": bin, "model_dirs": []string{models}}}}
	b, _ := json.Marshal(hosts)
	file := filepath.Join(t.TempDir(), "hosts.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("host", "check", "skewed", "--hosts", file)
	m := regexp.MustCompile(`FAR OFF:    host skewed's clock is (\S+) ahead of this machine \(± (\S+)\): timestamps are taken on the desktop and the skew is recorded with the study; set the host's clock right \(NTP\)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("host check: %d\n%s\n%s", code, out, errOut)
	}
	said, err1 := time.ParseDuration(m[1])
	pm, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || said < 93*time.Second-pm-time.Second || said > 93*time.Second+pm+time.Second {
		t.Errorf("said %s ± %s: want 93 s within the uncertainty", m[1], m[2])
	}
	code, out, _ = runCLI("host", "check", "skewed", "--hosts", file, "--json")
	var info remote.HostInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("host check --json: %d %s", code, out)
	}
	if c := info.Clock; c.Skew < 93*time.Second-c.Uncertainty-time.Second || c.Skew > 93*time.Second+c.Uncertainty+time.Second || !c.FarOff() {
		t.Errorf("skew %v ± %v: want 93 s, far off", c.Skew, c.Uncertainty)
	}
}
