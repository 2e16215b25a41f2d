package studyrun

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"sparkbench/app/study"
)

// The engine's tests run the plans of app/study/testdata.
var planDir = filepath.Join("..", "testdata")

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func loadValid(t *testing.T) *study.Plan {
	t.Helper()
	p, err := study.Load(filepath.Join(planDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}
