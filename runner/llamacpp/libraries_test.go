package llamacpp_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
)

// The real build's code is in its libraries: Inspect hashes libllama, libggml, libggml-base and
// the CPU backend it loaded (not the other CPU variants beside it), each hash the file's own.
func TestRealLibrariesIdentifyTheBuild(t *testing.T) {
	loc := llamatest.Binaries(t)
	b, err := llamacpp.Inspect(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range b.Libraries {
		names = append(names, l.Name)
		data, err := os.ReadFile(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != l.SHA256 || int64(len(data)) != l.Size {
			t.Errorf("%s: hash %s size %d, the file's is %x, %d", l.Name, l.SHA256, l.Size, sum, len(data))
		}
	}
	for _, want := range []string{"libllama.so.0", "libggml.so.0", "libggml-base.so.0"} {
		if !slices.Contains(names, want) {
			t.Errorf("libraries %q lack %s", names, want)
		}
	}
	var cpu []string
	for _, n := range names {
		if strings.HasPrefix(n, "libggml-cpu") {
			cpu = append(cpu, n)
		}
	}
	loaded := ""
	for _, be := range b.Backends {
		if strings.HasPrefix(be, "CPU (") {
			loaded = strings.TrimSuffix(strings.TrimPrefix(be, "CPU ("), ")")
		}
	}
	if len(cpu) != 1 || cpu[0] != loaded {
		t.Errorf("CPU backend libraries %q, want exactly the loaded one %q", cpu, loaded)
	}
	if !slices.IsSortedFunc(b.Libraries, func(x, y llamacpp.Binary) int { return strings.Compare(x.Name, y.Name) }) {
		t.Errorf("libraries not sorted: %q", names)
	}
}

// A tool that is not an ELF file (a wrapper script) has no libraries of its own; a backend that
// cannot be found is named, not fatal.
func TestLibrariesOfAScriptAndAMissingBackend(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "llama-bench")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	libs, missing, err := llamacpp.Libraries(script, []string{"CPU (libggml-cpu-nowhere.so)"})
	if err != nil || len(libs) != 0 || !slices.Equal(missing, []string{"libggml-cpu-nowhere.so"}) {
		t.Fatalf("libs %+v missing %q err %v", libs, missing, err)
	}
}
