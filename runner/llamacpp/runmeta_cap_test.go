package llamacpp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/capout"
)

// RunMeta (doctor's --version and --list-devices) keeps at most MetaCap bytes of a tool that
// floods 100 MB, head and tail, so the version line and the device list printed after the
// flood are still read. Before the cap it held all 100 MB in a bytes.Buffer.
func TestFaultsRunMetaCapsAFloodingTool(t *testing.T) {
	p := filepath.Join(t.TempDir(), "llama-bench")
	line := strings.Repeat("flood ", 15) + "flooding." // 99 bytes and yes's newline
	script := "#!/bin/sh\n" +
		"echo 'load_backend: loaded CPU backend from /opt/llama/libggml-cpu.so'\n" +
		"yes '" + line + "' | head -c 104857600\n" +
		"case \"$1\" in\n" +
		"--version) echo 'version: 0.7.0 (build 11669, commit Debian)' ;;\n" +
		"--list-devices) printf 'Available devices:\\n  Vulkan0: Fake GPU (24576 MiB, 23000 MiB free)\\n' ;;\n" +
		"esac\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	maxKept := MetaCap + len(capout.Marker(1<<40, MetaCap)) + 1
	out, err := RunMeta(context.Background(), MetaTimeout, p, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > maxKept || !strings.Contains(out, "bytes of output not kept (capture cap 1048576 bytes)]") {
		t.Fatalf("--version: kept %d bytes, most %d", len(out), maxKept)
	}
	if line, _, n, _, err := ParseVersion(out); err != nil || n != 11669 || line != "version: 0.7.0 (build 11669, commit Debian)" {
		t.Errorf("version after the flood: %q %d %v", line, n, err)
	}
	out, err = RunMeta(context.Background(), MetaTimeout, p, "--list-devices")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > maxKept {
		t.Fatalf("--list-devices: kept %d bytes, most %d", len(out), maxKept)
	}
	devs, backends := ParseDevices(out), ParseBackends(out)
	if len(devs) != 1 || devs[0].Name != "Vulkan0" || devs[0].TotalMiB != 24576 || len(backends) != 1 || backends[0] != "CPU (libggml-cpu.so)" {
		t.Errorf("devices %+v backends %v", devs, backends)
	}
}

// A named pipe where a binary should be is refused by HashBinary at once, not opened for a
// read that waits for a writer forever.
func TestFaultsHashBinaryRefusesANamedPipe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "llama-bench")
	if err := syscall.Mkfifo(p, 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := HashBinary(p); done <- err }()
	select {
	case err := <-done:
		if want := "hash " + p + ": " + p + " is a named pipe (FIFO), not a regular file; give the path of a file"; err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("HashBinary of a named pipe still blocked after 20 s")
	}
}
