package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/runner"
	"sparkbench/runner/vocab"
)

// firstCPU is the first CPU this process may run on (from /proc/self/status).
func firstCPU(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.FieldsFunc(strings.TrimSpace(v), func(r rune) bool { return r == ',' || r == '-' })[0]
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return ""
}

// TestServerUnderLaunchWrapper: the real llama-server started under taskset -c CPU (exec) and
// under a script that forks it: healthy, its attempt keeps llama-server's own argv and
// records the launch with CPU affinity CPU of llama-server's process, /health's listener is
// that process, the RSS is read from it, and a stop leaves nothing behind.
func TestServerUnderLaunchWrapper(t *testing.T) {
	cpu := firstCPU(t)
	taskset, err := vocab.ResolveProgram("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed: %v", err)
	}
	script := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+taskset+" -c "+cpu+" \"$@\"\nexit $?\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		wrapper, want []string
		how           string
	}{
		{[]string{"taskset", "-c", cpu}, []string{taskset, "-c", cpu}, vocab.LaunchExec},
		{[]string{script}, []string{script}, vocab.LaunchChild},
	} {
		spec := tinySpec(t)
		spec.Wrapper = c.wrapper
		srv, err := Start(context.Background(), spec)
		if err != nil {
			t.Fatalf("%q: %v", c.wrapper, err)
		}
		at := srv.Attempts()[0]
		l := at.Launch
		if l == nil || l.Affinity == nil || l.Affinity.CPUs != cpu || l.Affinity.How != c.how {
			t.Fatalf("%q: launch %+v", c.wrapper, l)
		}
		if at.Argv[0] != spec.Binary || !slices.Equal(l.LaunchedAs, append(slices.Clone(c.want), at.Argv...)) {
			t.Errorf("%q: argv %q, launched as %q", c.wrapper, at.Argv, l.LaunchedAs)
		}
		if (c.how == vocab.LaunchExec) != (l.Affinity.PID == srv.Pid()) {
			t.Errorf("%q: llama-server PID %d, started PID %d, how %s", c.wrapper, l.Affinity.PID, srv.Pid(), c.how)
		}
		rs := loadgenOnce(t, srv.URL(), 1, 4)
		if len(rs) == 0 || !rs[0].OK() {
			t.Fatalf("%q: request %+v", c.wrapper, rs)
		}
		st := srv.Stop(context.Background())
		if st.Exit.Class != runner.ClassStoppedByUser || st.RSS.KiB <= 0 || st.RSS.Source != fmt.Sprintf("/proc/%d/status", l.Affinity.PID) {
			t.Errorf("%q: stopped %+v", c.wrapper, st)
		}
	}
	spec := tinySpec(t)
	spec.Wrapper = []string{"sparkbench-no-such-wrapper"}
	if _, err := Start(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "sparkbench-no-such-wrapper: not found on PATH") {
		t.Errorf("a missing wrapper: %v", err)
	}
}
