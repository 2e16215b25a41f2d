package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
)

func TestDemoPlanIsValidAndSmall(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := WriteFiles(ctx, dir); err != nil {
		t.Fatal(err)
	}
	p, err := Plan()
	if err != nil {
		t.Fatal(err)
	}
	probs, _ := study.Validate(p, study.ValidateOptions{PlanDir: dir, Hash: func(path string) (string, error) { return hashing.File(ctx, path, nil) }})
	if len(probs) != 0 {
		t.Fatalf("demo plan problems: %v", probs)
	}
	legs, err := study.Expand(p, dir)
	if err != nil || len(legs) != 6 {
		t.Fatalf("%d legs, %v", len(legs), err)
	}
	kinds := map[study.PredictionKind]int{}
	for _, pr := range p.Predictions {
		kinds[pr.Kind]++
	}
	if kinds[study.KindBand] != 1 || kinds[study.KindFork] != 1 || kinds[study.KindQuestion] != 1 {
		t.Errorf("predictions %v", kinds)
	}
	for _, l := range legs {
		if !bytes.Contains([]byte(joinArgs(l.Args)), []byte(" -t 1 ")) {
			t.Errorf("%s runs without -t 1: %v", l.ID, l.Args)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, PlanFile)); !bytes.Equal(b, PlanJSON()) {
		t.Error("plan file differs from the embedded plan")
	}
}

func joinArgs(a []string) string {
	var b bytes.Buffer
	for _, s := range a {
		b.WriteString(" " + s)
	}
	return b.String() + " "
}

// A damaged model is written again; a good one is kept (same inode).
func TestWriteFilesRepairsAndKeeps(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := WriteFiles(ctx, dir); err != nil {
		t.Fatal(err)
	}
	tiny, moe := filepath.Join(dir, "tiny-llama-f32.gguf"), filepath.Join(dir, "tiny-moe-f32.gguf")
	before, _ := os.Stat(moe)
	if err := os.WriteFile(tiny, []byte("GGUF but not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(ctx, dir); err != nil {
		t.Fatal(err)
	}
	p, _ := Plan()
	if sum, _ := hashing.File(ctx, tiny, nil); sum != p.Models[0].SHA256 {
		t.Errorf("tiny not repaired: %s", sum)
	}
	after, _ := os.Stat(moe)
	if !os.SameFile(before, after) {
		t.Error("a good model was rewritten")
	}
}

func TestDataDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/x/data")
	if d, _ := DataDir(); d != "/x/data/sparkbench" {
		t.Errorf("XDG: %s", d)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := DataDir(); d != "/home/u/.local/share/sparkbench" {
		t.Errorf("HOME: %s", d)
	}
}
