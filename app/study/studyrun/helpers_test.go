package studyrun

import (
	"context"
	"path/filepath"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
)

// The engine's tests run the plans of app/study/testdata.
var planDir = filepath.Join("..", "testdata")

func sha256File(path string) (string, error) { return hashing.File(context.Background(), path, nil) }

func loadValid(t *testing.T) *study.Plan {
	t.Helper()
	p, err := study.Load(filepath.Join(planDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}
