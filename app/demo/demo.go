// Package demo is the study shipped inside the binary: two generated tiny models (dense and
// mixture-of-experts), depths 0, 128 and 256 with one thread, a band prediction that should
// hit, a fork and a question. It finishes in seconds on any machine llama.cpp runs on. The
// models come from the deterministic generator (runner/gguf/testmodels), so they are written
// on demand and their SHA-256 is known in the plan.
package demo

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sparkbench/app/study"
	"sparkbench/runner/gguf/testmodels"
	"sparkbench/runner/hashing"
)

//go:embed plan.json
var planJSON []byte

// PlanFile is the demo plan's file name in the demo folder.
const PlanFile = "demo-study.json"

// PlanJSON is the embedded plan, as written to the demo folder.
func PlanJSON() []byte { return bytes.Clone(planJSON) }

// Plan decodes the embedded plan (defaults applied).
func Plan() (*study.Plan, error) {
	p, err := study.Decode("demo "+PlanFile, planJSON)
	if err != nil {
		return nil, err
	}
	p.Defaults()
	return p, nil
}

// DataDir is sparkbench's folder in the user's data folder: ${XDG_DATA_HOME:-~/.local/share}/sparkbench.
func DataDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "sparkbench"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("cannot find the user's data folder: neither XDG_DATA_HOME nor HOME is set")
	}
	return filepath.Join(home, ".local", "share", "sparkbench"), nil
}

// Dir is the demo's folder under dataDir.
func Dir(dataDir string) string { return filepath.Join(dataDir, "demo") }

// WriteFiles writes the demo plan and every model it names into dir, keeping files that are
// already right (a model whose SHA-256 matches the plan's) and rewriting the others.
func WriteFiles(ctx context.Context, dir string) error {
	p, err := Plan()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo folder: %w", err)
	}
	for _, m := range p.Models {
		path := filepath.Join(dir, m.Path)
		if sum, err := hashing.File(ctx, path, nil); err == nil && sum == m.SHA256 {
			continue
		}
		spec, ok := testmodels.ByFile(filepath.Base(m.Path))
		if !ok {
			return fmt.Errorf("demo model %s: the generator has no such model", m.Path)
		}
		sum, err := testmodels.Write(path, spec)
		if err != nil {
			return fmt.Errorf("demo model: %w", err)
		}
		if sum != m.SHA256 {
			return fmt.Errorf("demo model %s: generated SHA-256 %s, the demo plan expects %s (the generator changed)", path, sum, m.SHA256)
		}
	}
	planPath := filepath.Join(dir, PlanFile)
	if b, err := os.ReadFile(planPath); err != nil || !bytes.Equal(b, planJSON) {
		if err := os.WriteFile(planPath, planJSON, 0o644); err != nil {
			return fmt.Errorf("demo plan: %w", err)
		}
	}
	return nil
}

// Prepare writes the demo's files under dataDir and registers the demo study, once: a second
// call finds it again by its plan's SHA-256 (Registration.Existing).
func Prepare(ctx context.Context, rec study.Recorder, dataDir string) (study.Registration, error) {
	dir := Dir(dataDir)
	if err := WriteFiles(ctx, dir); err != nil {
		return study.Registration{}, err
	}
	p, err := Plan()
	if err != nil {
		return study.Registration{}, err
	}
	hash := func(path string) (string, error) { return hashing.File(ctx, path, nil) }
	return study.Register(ctx, rec, p, filepath.Join(dir, PlanFile), hash)
}

// Ensure gets the demo study ready to run (models written, study registered) and returns its
// id; the GUI calls it behind its "demo" button.
func Ensure(ctx context.Context, rec study.Recorder, dataDir string) (int64, error) {
	reg, err := Prepare(ctx, rec, dataDir)
	return reg.StudyID, err
}
