package testmodels

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWriteMatchesCommittedSums: Write gives the bytes (and so the SHA-256) committed in
// testdata/models/SHA256SUMS, and leaves no temporary file behind.
func TestWriteMatchesCommittedSums(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	sums, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "models", "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, _ := strings.Cut(line, "  ")
		s, ok := ByFile(name)
		if !ok {
			t.Fatalf("no spec for %s", name)
		}
		got, err := Write(filepath.Join(dir, name), s)
		if err != nil || got != want {
			t.Errorf("%s: sha256 %s, %v; want %s", name, got, err, want)
		}
	}
	if _, ok := ByFile("absent.gguf"); ok {
		t.Error("ByFile found a model that does not exist")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*")) // atomicfile's temporary files are hidden
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
