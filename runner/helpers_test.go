package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
)

var (
	fakeOnce sync.Once
	fakeDir  string
	fakePath string
	fakeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// fakeLlama builds runner/testdata/fakellama once per test binary and returns its path.
func fakeLlama(t testing.TB) string {
	t.Helper()
	fakeOnce.Do(func() {
		fakeDir, fakeErr = os.MkdirTemp("", "sparkbench-fakellama-")
		if fakeErr != nil {
			return
		}
		fakePath = filepath.Join(fakeDir, "llama-bench")
		cmd := exec.Command("go", "build", "-o", fakePath, "./testdata/fakellama")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeErr = err
			fakePath = string(out)
			return
		}
		// The backend the fake says it loaded lies beside it, as a real build's does.
		fakeErr = os.WriteFile(filepath.Join(fakeDir, "libggml-cpu-fake.so"), []byte("stand-in backend library\n"), 0o644)
	})
	if fakeErr != nil {
		t.Fatalf("build fakellama: %v: %s", fakeErr, fakePath)
	}
	return fakePath
}

// collect drains a leg's events (failing the test if it takes longer than limit).
func collect(t testing.TB, events <-chan Event, limit time.Duration) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(limit)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("events not closed within %s (got %d events)", limit, len(out))
		}
	}
}

func ofType(evs []Event, typ EventType) []Event {
	var out []Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// assertGone fails unless no live process is left in the group pgid, none of pids is alive,
// and no process runs the fake binary (checked through /proc).
func assertGone(t testing.TB, pgid int, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := GroupMembers(pgid)
		for _, p := range pids {
			if ProcessAlive(p) {
				left = append(left, p)
			}
		}
		left = append(left, fakeProcesses()...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived the leg (group %d): %v", pgid, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeProcesses lists live processes whose command line starts with the fake binary's path.
func fakeProcesses() []int {
	if fakePath == "" || fakeErr != nil {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasPrefix(b, []byte(fakePath+"\x00")) && string(b) != fakePath {
			continue
		}
		if ProcessAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// realBench returns the real llama-bench (skips, or fails under SPARKBENCH_REQUIRE_LLAMA=1).
func realBench(t testing.TB) string {
	t.Helper()
	return llamatest.Binaries(t).Bench
}

func lineTexts(evs []Event) string {
	var b strings.Builder
	for _, e := range ofType(evs, EventLine) {
		b.WriteString(e.Line.Text)
		b.WriteByte('\n')
	}
	return b.String()
}
