// Package sharedtest finds the shared reference folder (shared/ beside the checkout: published
// llama.cpp outputs in wild/, this machine's in llama-samples/) for tests. It imports nothing of
// the project, so any package's tests can use it.
package sharedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Require reports something the suite needs and does not find: under `make test`
// (SPARKBENCH_REQUIRE_LLAMA=1) the test fails; in a bare `go test` it skips, saying how to
// make it a failure. For what `make setup` installs or the machine must have, never for a
// machine being busy.
func Require(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
		t.Fatalf("%s (required under make test)", what)
	}
	t.Skipf("%s; set SPARKBENCH_REQUIRE_LLAMA=1 to make this a failure", what)
}

// Root is $SPARKBENCH_SHARED when set, else ../shared beside the checkout.
func Root() string {
	if r := os.Getenv("SPARKBENCH_SHARED"); r != "" {
		return r
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..", "shared"))
}

// index is the file that marks each sub-folder as present.
var index = map[string]string{"wild": "SOURCES.md", "llama-samples": "README.md"}

// Dir is the shared folder's sub-folder sub ("wild" or "llama-samples"), read in place and
// never copied into the repository; a folder without its index file is missing (Require).
func Dir(t testing.TB, sub string) string {
	t.Helper()
	dir := filepath.Join(Root(), sub)
	name, ok := index[sub]
	if !ok {
		t.Fatalf("sharedtest: no sub-folder %q (want wild or llama-samples)", sub)
	}
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		Require(t, fmt.Sprintf("the shared reference folder %s is missing (%v): put shared/ beside the checkout or set SPARKBENCH_SHARED to it", dir, err))
	}
	return dir
}

// File is the file name of the sub-folder sub; a missing file fails the test (the folder is
// there, so its file must be).
func File(t testing.TB, sub, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t, sub), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing from the shared reference folder: %v", p, err)
	}
	return p
}
