package runner

import (
	"context"
	"slices"
	"testing"

	"sparkbench/runner/llamatest"
)

// Every leg's fingerprint hashes the libraries that hold the build's code, not only the tool.
func TestRealFingerprintHashesTheLibraries(t *testing.T) {
	loc := llamatest.Binaries(t)
	fp := (&Fingerprinter{HwmonRoot: t.TempDir()}).Take(context.Background(), loc.Bench, nil)
	var names []string
	for _, l := range fp.Libraries {
		names = append(names, l.Name)
		if len(l.SHA256) != 64 || l.Size == 0 {
			t.Errorf("%s: %+v", l.Name, l)
		}
	}
	if !slices.Contains(names, "libllama.so.0") || !slices.Contains(names, "libggml-base.so.0") {
		t.Fatalf("fingerprint libraries %q (errors %q)", names, fp.Errors)
	}
}
