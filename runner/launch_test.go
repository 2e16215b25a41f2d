package runner

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/vocab"
)

// firstCPU is the first CPU this process may run on (from /proc/self/status), the one the
// tests pin a leg to.
func firstCPU(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			v = strings.TrimSpace(v)
			return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '-' })[0]
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/self/status")
	return ""
}

func taskset(t *testing.T) string {
	t.Helper()
	p, err := vocab.ResolveProgram("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed by this test: %v", err)
	}
	return p
}

// checkWrapped checks a wrapped leg's record: its own command line unchanged, launched as
// the resolved wrapper followed by it, and the affinity of the tool's process.
func checkWrapped(t *testing.T, spec LegSpec, res *LegResult, wrapper []string, cpu, how string) {
	t.Helper()
	if !slices.Equal(res.Argv, spec.Argv()) {
		t.Errorf("argv %q; want the leg's own command line %q", res.Argv, spec.Argv())
	}
	l := res.Launch
	if l == nil {
		t.Fatal("no launch record")
	}
	if want := append(slices.Clone(wrapper), spec.Argv()...); !slices.Equal(l.LaunchedAs, want) {
		t.Errorf("launched as %q; want %q", l.LaunchedAs, want)
	}
	if !slices.Equal(l.Wrapper, wrapper) {
		t.Errorf("wrapper %q; want %q", l.Wrapper, wrapper)
	}
	if l.Affinity == nil {
		t.Fatalf("no affinity read: %s", l.AffinityError)
	}
	if l.Affinity.CPUs != cpu || l.Affinity.How != how || l.Affinity.PID <= 0 {
		t.Errorf("affinity %+v; want CPUs %s, how %s", *l.Affinity, cpu, how)
	}
}

// TestLaunchWrapperExecsTheTool: taskset replaces itself with the tool (same PID); the leg
// records its command line unchanged, launched as taskset + it, and CPU affinity cpu.
func TestLaunchWrapperExecsTheTool(t *testing.T) {
	cpu, ts := firstCPU(t), taskset(t)
	spec := fakeLeg(t, "", "FAKELLAMA_DELAY=100ms")
	spec.Wrapper = []string{"taskset", "-c", cpu}
	leg := StartLeg(context.Background(), spec)
	collect(t, leg.Events(), 60*time.Second)
	res := leg.Result()
	assertGone(t, leg.Pid())
	if res.Exit.Class != ClassOK {
		t.Fatalf("exit %+v", res.Exit)
	}
	checkWrapped(t, spec, res, []string{ts, "-c", cpu}, cpu, vocab.LaunchExec)
	if res.Launch.Affinity.PID != leg.Pid() {
		t.Errorf("affinity of PID %d; the wrapper exec'd the tool, so want the leg's PID %d", res.Launch.Affinity.PID, leg.Pid())
	}
}

// TestLaunchWrapperThatForksIsStoppedWhole: a wrapper that starts the tool as its child (a
// shell script that runs taskset and waits) gets the child's affinity; a stop ends both.
func TestLaunchWrapperThatForksIsStoppedWhole(t *testing.T) {
	cpu, ts := firstCPU(t), taskset(t)
	script := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+ts+" -c "+cpu+" \"$@\"\nexit $?\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := fakeLeg(t, "hang:1", "FAKELLAMA_DELAY=300ms") // alive a while before its first row and the stop
	spec.Wrapper = []string{script}
	leg := StartLeg(context.Background(), spec)
	var stopped bool
	deadline := time.After(60 * time.Second)
	for ev := range leg.Events() {
		if ev.Type == EventSample && !stopped {
			stopped = true
			go func() { _ = leg.Stop(context.Background()) }()
		}
		select {
		case <-deadline:
			t.Fatal("the leg did not end")
		default:
		}
	}
	res := leg.Result()
	assertGone(t, leg.Pid())
	if res.Exit.Class != ClassStoppedByUser {
		t.Fatalf("exit %+v; want stopped_by_user", res.Exit)
	}
	checkWrapped(t, spec, res, []string{script}, cpu, vocab.LaunchChild)
	if res.Launch.Affinity.PID == leg.Pid() {
		t.Errorf("affinity of the wrapper's PID %d; want its child's", leg.Pid())
	}
}

// TestLaunchWrapperRefused: a wrapper that cannot run ends the leg before anything starts,
// class failed, the reason naming the program and what to do.
func TestLaunchWrapperRefused(t *testing.T) {
	noexec := filepath.Join(t.TempDir(), "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		wrapper []string
		want    string
	}{
		{[]string{"sparkbench-no-such-wrapper"}, "sparkbench-no-such-wrapper: not found on PATH; install it"},
		{[]string{noexec}, noexec + ": not executable (mode -rw-r--r--); make it executable"},
		{[]string{"taskset", "", "0"}, "argument 1 is an empty string"},
		{[]string{"bin/taskset"}, "bin/taskset: a relative path"},
	}
	for _, c := range cases {
		spec := fakeLeg(t, "")
		spec.Wrapper = c.wrapper
		leg := StartLeg(context.Background(), spec)
		collect(t, leg.Events(), 10*time.Second)
		res := leg.Result()
		if leg.Pid() != 0 || res.Exit.Class != ClassFailed || !strings.Contains(res.Exit.Reason, c.want) {
			t.Errorf("%q: pid %d, exit %s %q; want failed before starting, saying %q", c.wrapper, leg.Pid(), res.Exit.Class, res.Exit.Reason, c.want)
		}
		if res.Launch == nil || res.Launch.Affinity != nil || res.Launch.AffinityError == "" || !slices.Equal(res.Argv, spec.Argv()) {
			t.Errorf("%q: launch %+v argv %q", c.wrapper, res.Launch, res.Argv)
		}
	}
}

// TestLaunchWrapperRealBench: the real llama-bench on the tiny model under taskset -c CPU:
// rows as usual, affinity CPU read from llama-bench's own process.
func TestLaunchWrapperRealBench(t *testing.T) {
	cpu, ts := firstCPU(t), taskset(t)
	spec := LegSpec{Bench: realBench(t), Args: []string{"-m", llamatest.Model(t, "tiny-llama-f32.gguf"), "-p", "16", "-n", "8",
		"-r", "2", "-t", llamatest.Threads}, CVGate: CVGate{Off: true}, NoFingerprint: true, Wrapper: []string{"taskset", "-c", cpu}}
	leg := StartLeg(context.Background(), spec)
	collect(t, leg.Events(), 2*time.Minute)
	res := leg.Result()
	assertGone(t, leg.Pid())
	if res.Exit.Class != ClassOK || len(res.Results()) != 2 {
		t.Fatalf("exit %+v, %d results", res.Exit, len(res.Results()))
	}
	checkWrapped(t, spec, res, []string{ts, "-c", cpu}, cpu, vocab.LaunchExec)
	// Without a wrapper nothing is recorded: an unwrapped leg's result is what it was.
	spec.Wrapper = nil
	leg = StartLeg(context.Background(), spec)
	collect(t, leg.Events(), 2*time.Minute)
	if res := leg.Result(); res.Launch != nil || res.Exit.Class != ClassOK {
		t.Errorf("unwrapped leg: launch %+v, exit %+v", res.Launch, res.Exit)
	}
}
