package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamatest"
)

// -quantize with the real llama-quantize: three variants of the medium model, each a GGUF of
// its type; made again, the same bytes (the manifest says reproduced); against the committed
// manifest, the same hashes when the build is the one that wrote it; and the Q4_0 model runs
// in the real llama-bench, which names its type.
func TestQuantizedVariants(t *testing.T) {
	loc := llamatest.Binaries(t)
	medium := llamatest.Model(t, mediumName())
	dir := t.TempDir()
	if err := os.Symlink(medium, filepath.Join(dir, mediumName())); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var log bytes.Buffer
	if err := quantize(ctx, dir, loc.Dir, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	want := map[string]string{"Q8_0": "MOSTLY_Q8_0", "Q4_0": "MOSTLY_Q4_0", "Q4_K_M": "MOSTLY_Q4_K_M"}
	for _, q := range quantTypes {
		f, err := gguf.ReadFile(filepath.Join(dir, q.File))
		if err != nil {
			t.Fatalf("%s: %v", q.File, err)
		}
		if f.FileTypeName != want[q.Type] || f.Architecture != "llama" {
			t.Errorf("%s: file type %q, architecture %q; want %s", q.File, f.FileTypeName, f.Architecture, want[q.Type])
		}
	}
	// Made again (the manifest is removed so that nothing is skipped): the same bytes.
	b, err := os.ReadFile(filepath.Join(dir, quantManifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range quantTypes {
		if err := os.Remove(filepath.Join(dir, q.File)); err != nil {
			t.Fatal(err)
		}
	}
	log.Reset()
	if err := quantize(ctx, dir, loc.Dir, &log); err != nil || !strings.Contains(log.String(), "every model reproduced byte for byte") {
		t.Fatalf("the second quantization: %v\n%s", err, log.String())
	}
	// The committed manifest: the same hashes from the same build.
	var mine, committedRec quantRecord
	cb, err := os.ReadFile(filepath.Join(committed, quantManifest))
	if err != nil || json.Unmarshal(b, &mine) != nil || json.Unmarshal(cb, &committedRec) != nil {
		t.Fatalf("manifests: %v", err)
	}
	if mine.Build.SHA256 == committedRec.Build.SHA256 && mine.Source == committedRec.Source {
		for i, m := range mine.Models {
			if m != committedRec.Models[i] {
				t.Errorf("%s: %s here, %s in testdata/models/%s from the same build", m.File, m.SHA256, committedRec.Models[i].SHA256, quantManifest)
			}
		}
	} else {
		t.Logf("this build (%s, sha256 %s) is not the one that wrote testdata/models/%s (%s): hashes not compared",
			mine.Build.Version, mine.Build.SHA256, quantManifest, committedRec.Build.Version)
	}

	leg := runner.StartLeg(ctx, runner.LegSpec{Bench: loc.Bench, NoFingerprint: true,
		Args: []string{"-m", filepath.Join(dir, "medium-llama-q4_0.gguf"), "-p", "16", "-n", "4", "-r", "1", "-t", llamatest.Threads}})
	deadline := time.After(2 * time.Minute)
	for done := false; !done; {
		select {
		case _, ok := <-leg.Events():
			done = !ok
		case <-deadline:
			t.Fatal("llama-bench on the Q4_0 model did not end")
		}
	}
	res := leg.Result()
	rows := res.Results()
	if res.Exit.Class != runner.ClassOK || len(rows) != 2 || !strings.Contains(rows[0].Result.ModelType, "Q4_0") {
		t.Fatalf("llama-bench on Q4_0: %+v, %d rows, model type %q", res.Exit, len(rows), func() string {
			if len(rows) > 0 {
				return rows[0].Result.ModelType
			}
			return ""
		}())
	}
}
