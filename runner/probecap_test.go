package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sparkbench/runner/capout"
	"sparkbench/runner/llamacpp"
)

// floodingBench writes a fake llama-bench that prints a backend line, floodBytes of log
// lines (100-byte lines), then its real answer, for --version and for --list-devices.
func floodingBench(t *testing.T, floodBytes int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "llama-bench")
	line := strings.Repeat("flood ", 15) + "flooding." // 99 bytes, then yes adds the newline
	script := "#!/bin/sh\n" +
		"echo 'load_backend: loaded CPU backend from /opt/llama/libggml-cpu.so'\n" +
		"yes '" + line + "' | head -c " + strconv.Itoa(floodBytes) + "\n" +
		"case \"$1\" in\n" +
		"--version) echo 'version: 0.7.0 (build 11669, commit Debian)' ;;\n" +
		"--list-devices) printf 'Available devices:\\n  Vulkan0: Fake GPU (24576 MiB, 23000 MiB free)\\n' ;;\n" +
		"esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A llama-bench that floods its --version and --list-devices output (25 MB each time, 100 MB
// in all over the four runs here) is fingerprinted within llamacpp.MetaCap per probe: what runMeta keeps is at most the
// cap (plus the one marker line), the fingerprint notes the cut, and the heap does not grow
// with the flood. Before the cap, runMeta kept every byte the pty delivered (the issue
// measured 462 MB RSS).
func TestFaultsFingerprintProbesCapAFloodingBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB through a pty")
	}
	const floodBytes = 25_000_000
	bench := floodingBench(t, floodBytes)
	maxKept := llamacpp.MetaCap + len(capout.Marker(1<<40, llamacpp.MetaCap)) + 1

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	for _, arg := range []string{"--version", "--list-devices"} {
		out, omitted, err := runMeta(context.Background(), bench, nil, arg)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if len(out) > maxKept || omitted <= 0 || !strings.Contains(out, "bytes of output not kept (capture cap 1048576 bytes)]") {
			t.Fatalf("%s: kept %d bytes (most %d), %d left out, marker %v", arg, len(out), maxKept, omitted, strings.Contains(out, "[sparkbench:"))
		}
		if !strings.HasPrefix(out, "load_backend: loaded CPU backend") {
			t.Errorf("%s: the head of the output was not kept: %q", arg, out[:min(len(out), 80)])
		}
	}
	fp := (&Fingerprinter{HwmonRoot: t.TempDir()}).Take(context.Background(), bench, nil)
	close(stop)
	<-sampled
	notes := strings.Join(fp.Errors, "\n")
	for _, arg := range []string{"--version", "--list-devices"} {
		if !strings.Contains(notes, arg+": printed more than the 1048576 bytes kept; ") {
			t.Errorf("fingerprint errors do not note the cut of %s: %q", arg, notes)
		}
	}
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("peak heap in use %.1f MiB, %.1f MiB above the %.1f MiB before", float64(peak.Load())/(1<<20), float64(growth)/(1<<20), float64(base.HeapInuse)/(1<<20))
	if growth > 32<<20 {
		t.Errorf("heap grew by %d MiB under a 100 MB flood: not bounded", growth>>20)
	}
}
