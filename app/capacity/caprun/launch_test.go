package caprun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/vocab"
)

// TestRunUnderLaunchWrapper: a capacity plan with build.launch_wrapper taskset -c CPU starts
// each llama-server under it; every lifetime's server attempt in run.json keeps llama-server's
// own argv and records the launch with CPU affinity CPU read from llama-server's process.
func TestRunUnderLaunchWrapper(t *testing.T) {
	loc := llamatest.Binaries(t)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var cpu string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			cpu = strings.FieldsFunc(strings.TrimSpace(v), func(r rune) bool { return r == ',' || r == '-' })[0]
		}
	}
	taskset, err := vocab.ResolveProgram("taskset")
	if err != nil || cpu == "" {
		t.Fatalf("taskset (util-linux) and /proc are needed: %v", err)
	}
	dir := t.TempDir()
	plan := writeRunPlan(t, dir, tinyCandidates(t)[:1], []int{1}, []int{1}, 0, 2, 8)
	var doc map[string]any
	pb, _ := os.ReadFile(plan)
	if err := json.Unmarshal(pb, &doc); err != nil {
		t.Fatal(err)
	}
	doc["build"] = map[string]any{"launch_wrapper": []string{"taskset", "-c", cpu}}
	pb, _ = json.Marshal(doc)
	if err := os.WriteFile(plan, pb, 0o644); err != nil {
		t.Fatal(err)
	}
	if probs := capacity.Validate(mustLoad(t, plan), capacity.ValidateOptions{PlanDir: dir}); len(probs) > 0 {
		for _, p := range probs {
			if strings.HasPrefix(p.Path, "build.") {
				t.Fatalf("the wrapper was not accepted: %v", probs)
			}
		}
	}
	out := filepath.Join(dir, "run")
	rep, _, err := runPlan(t, plan, loc.Server, out, []string{tag(t)}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(rep.Lifetimes) == 0 {
		t.Fatal("no lifetimes")
	}
	for _, lt := range rep.Lifetimes {
		at := lt.Server.Attempts
		if len(at) == 0 || at[len(at)-1].Launch == nil {
			t.Fatalf("%s: attempts %+v", lt.Key, at)
		}
		l := at[len(at)-1].Launch
		if l.Affinity == nil || l.Affinity.CPUs != cpu || l.Affinity.How != vocab.LaunchExec || l.LaunchedAs[0] != taskset ||
			lt.Server.Argv[0] != loc.Server || strings.Join(l.LaunchedAs[3:], " ") != strings.Join(lt.Server.Argv, " ") {
			t.Errorf("%s: argv %q, launch %+v", lt.Key, lt.Server.Argv, l)
		}
	}
	manifest, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if !strings.Contains(string(manifest), `"cpus_allowed_list":"`+cpu+`"`) && !strings.Contains(string(manifest), `"cpus_allowed_list": "`+cpu+`"`) {
		t.Errorf("run.json does not record the affinity")
	}
	// The run folder's bundle carries run.json as a raw file and verifies.
	files, err := bundle.Capacity(out, bundle.CapacityOptions{Options: bundle.Options{Version: "sparkbench test"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep := receipt.Verify(files, receipt.VerifyOptions{HashPlots: true}); !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
	// receipt.md gives each start's canonical command and the command it was launched as,
	// apart, with the affinity read from llama-server's process.
	md := string(files[receipt.FileReceipt])
	if !strings.Contains(md, "## Launch wrapper") || !strings.Contains(md, "under the launch wrapper `taskset -c "+cpu+"`") {
		t.Fatalf("receipt.md has no launch wrapper section:\n%s", md)
	}
	for _, lt := range rep.Lifetimes {
		at := lt.Server.Attempts[len(lt.Server.Attempts)-1]
		row := fmt.Sprintf("| `%s` | `%d` | `%s` | `%s` | `%s` |", lt.Key, len(lt.Server.Attempts), strings.Join(at.Argv, " "), strings.Join(at.Launch.LaunchedAs, " "), cpu)
		if !strings.Contains(md, row) {
			t.Errorf("receipt.md lacks the row %s", row)
		}
	}
}
