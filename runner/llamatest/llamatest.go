// Package llamatest gives tests the real llama.cpp binaries and the project's generated models.
// Under `make test` (SPARKBENCH_REQUIRE_LLAMA=1) a missing piece fails the test with the
// command that fixes it; in a bare `go test` it skips with the same message.
package llamatest

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"sparkbench/runner/llamacpp"
	"sparkbench/runner/sharedtest"
)

// Threads is passed to every llama.cpp run in tests: the default (all cores, spin-polling)
// collapses on a busy 2-core machine.
const Threads = "1"

func missing(t testing.TB, what string) {
	t.Helper()
	sharedtest.Require(t, what)
}

// Binaries returns the llama.cpp folder found by the normal search order.
func Binaries(t testing.TB) llamacpp.Location {
	t.Helper()
	loc, err := llamacpp.Locate("")
	if err != nil {
		missing(t, err.Error())
	}
	return loc
}

// BatchedBench returns llama-batched-bench of the located folder (skips, or fails under
// SPARKBENCH_REQUIRE_LLAMA=1, naming the installer command, when the folder lacks it).
func BatchedBench(t testing.TB) string {
	t.Helper()
	p, err := llamacpp.BatchedBench(Binaries(t))
	if err != nil {
		missing(t, err.Error())
	}
	return p
}

// RepoRoot is the module root (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ModelsDir is testdata/models at the repo root.
func ModelsDir() string { return filepath.Join(RepoRoot(), "testdata", "models") }

// Model returns the path of a generated model by file name, e.g. "tiny-llama-f32.gguf".
func Model(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(ModelsDir(), name)
	if _, err := os.Stat(p); err != nil {
		missing(t, "model "+p+" is missing: run make models")
	}
	return p
}

// Models lists every generated model present in testdata/models.
func Models(t testing.TB) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(ModelsDir(), "*.gguf"))
	sort.Strings(m)
	if len(m) == 0 {
		missing(t, "no models in "+ModelsDir()+": run make models")
	}
	return m
}

// SharedSample returns a file of the shared llama-samples folder (sharedtest.Dir: a missing
// folder fails under SPARKBENCH_REQUIRE_LLAMA=1 and skips otherwise).
func SharedSample(t testing.TB, name string) string {
	t.Helper()
	return sharedtest.File(t, "llama-samples", name)
}
