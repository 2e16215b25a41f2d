package llamacpp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	out := "ggml_backend_load_best: failed to enumerate /x: No such file or directory\r\n" +
		"load_backend: loaded CPU backend from /opt/llama.cpp/bin/libggml-cpu-zen4.so\n" +
		"version: 0.7.0 (build 11669, commit Debian)\nbuilt with GNU 16.2.0 for Linux x86_64\n"
	line, v, n, c, err := ParseVersion(out)
	if err != nil {
		t.Fatal(err)
	}
	if line != "version: 0.7.0 (build 11669, commit Debian)" || v != "0.7.0" || n != 11669 || c != "Debian" {
		t.Fatalf("got %q %q %d %q", line, v, n, c)
	}
	var b Build
	if err := parseVersion(&b, out); err != nil || b.BuiltWith != "GNU 16.2.0 for Linux x86_64" {
		t.Fatalf("built with = %q, err %v", b.BuiltWith, err)
	}
	if got := ParseBackends(out); len(got) != 1 || got[0] != "CPU (libggml-cpu-zen4.so)" {
		t.Fatalf("backends = %q", got)
	}
	// an upstream git build
	_, v, n, c, err = ParseVersion("version: 6500 (b1a2c3d4)\nbuilt with cc for x86_64\n")
	if err != nil || v != "b6500" || n != 6500 || c != "b1a2c3d4" {
		t.Fatalf("upstream line: got %q %d %q %v", v, n, c, err)
	}
	_, _, n, c, err = ParseVersion("version: 6543 (build 6543, commit 3f4a2b1)\n")
	if err != nil || n != 6543 || c != "3f4a2b1" {
		t.Fatalf("got %d %q %v", n, c, err)
	}
	if _, _, _, _, err := ParseVersion("usage: llama-server [options]\n"); err == nil || !strings.Contains(err.Error(), "usage: llama-server") {
		t.Fatalf("error should quote the output, got %v", err)
	}
}

func TestParseDevices(t *testing.T) {
	out := "load_backend: loaded CUDA backend from x\nAvailable devices:\n" +
		"  CUDA0: NVIDIA GeForce RTX 4090 (24076 MiB, 23500 MiB free)\r\n" +
		"  Vulkan0: AMD Radeon (RADV) (8192 MiB, 8000 MiB free)\n" +
		"  BLAS: OpenBLAS\n\nsomething else\n  X0: not a device\n"
	got := ParseDevices(out)
	want := []Device{
		{Name: "CUDA0", Description: "NVIDIA GeForce RTX 4090", TotalMiB: 24076, FreeMiB: 23500},
		{Name: "Vulkan0", Description: "AMD Radeon (RADV)", TotalMiB: 8192, FreeMiB: 8000},
		{Name: "BLAS", Description: "OpenBLAS", TotalMiB: 0, FreeMiB: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d devices %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("device %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := ParseDevices("Available devices:\n  (none)\n"); len(d) != 0 {
		t.Fatalf("CPU-only build lists no device, got %+v", d)
	}
}

func fakeTool(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho 'version: 1.0 (build 7, commit abc)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCheckErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	onlyBench := filepath.Join(tmp, "only-bench")
	os.Mkdir(onlyBench, 0o755)
	fakeTool(t, onlyBench, BenchTool)
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	noexec := filepath.Join(tmp, "noexec")
	os.Mkdir(noexec, 0o755)
	os.WriteFile(filepath.Join(noexec, BenchTool), nil, 0o644)
	os.WriteFile(filepath.Join(noexec, ServerTool), nil, 0o644)

	cases := []struct {
		dir  string
		want []string
	}{
		{filepath.Join(tmp, "nonexistent"), []string{"nonexistent", "does not exist", "make llama"}},
		{file, []string{"is a file, not a folder"}},
		{empty, []string{"has no executable llama-bench or llama-server", "build/bin"}},
		{onlyBench, []string{"has no executable llama-server"}},
		{noexec, []string{"has no executable llama-bench or llama-server"}},
	}
	for _, c := range cases {
		_, err := Check(c.dir, SourceFlag)
		var le *LocateError
		if !errors.As(err, &le) {
			t.Fatalf("%s: want *LocateError, got %v", c.dir, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: error must be one line: %q", c.dir, msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q lacks %q", c.dir, msg, w)
			}
		}
	}
}

func TestLocateOrder(t *testing.T) {
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good")
	os.Mkdir(good, 0o755)
	fakeTool(t, good, BenchTool)
	fakeTool(t, good, ServerTool)
	prefixBin := filepath.Join(tmp, "prefix", "bin")
	os.MkdirAll(prefixBin, 0o755)
	fakeTool(t, prefixBin, BenchTool)
	fakeTool(t, prefixBin, ServerTool)

	t.Setenv(EnvPrefix, filepath.Join(tmp, "prefix"))
	t.Setenv("PATH", "/nonexistent")
	t.Setenv(EnvDir, "")
	loc, err := Locate("")
	if err != nil || loc.Dir != prefixBin || loc.Source != SourcePrefix {
		t.Fatalf("prefix: got %+v %v", loc, err)
	}
	t.Setenv(EnvDir, good)
	if loc, err = Locate(""); err != nil || loc.Dir != good || loc.Source != SourceEnv {
		t.Fatalf("env: got %+v %v", loc, err)
	}
	if loc, err = Locate(prefixBin); err != nil || loc.Source != SourceFlag {
		t.Fatalf("flag: got %+v %v", loc, err)
	}
	// a folder named explicitly is never replaced by another
	t.Setenv(EnvDir, filepath.Join(tmp, "typo"))
	if _, err = Locate(""); err == nil || !strings.Contains(err.Error(), "typo") {
		t.Fatalf("env typo must fail, got %v", err)
	}
	t.Setenv(EnvDir, "")
	t.Setenv(EnvPrefix, filepath.Join(tmp, "none"))
	t.Setenv("PATH", good)
	if loc, err = Locate(""); err != nil || loc.Source != SourcePath || loc.Dir != good {
		t.Fatalf("PATH: got %+v %v", loc, err)
	}
	t.Setenv("PATH", "/nonexistent")
	if _, err = Locate(""); err == nil || !strings.Contains(err.Error(), "make llama") {
		t.Fatalf("nothing: want the install command, got %v", err)
	}
}
