package studyrun

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// A plan refused for anything but a hash is refused before any model file is hashed: the hash
// function (and the notebook's cache behind it) is never called, and nothing is journaled.
func TestRegisterHashesOnlyAnOtherwiseValidPlan(t *testing.T) {
	ctx := context.Background()
	var hashed []string
	hash := func(path string) (string, error) {
		hashed = append(hashed, filepath.Base(path))
		return sha256File(path)
	}
	file := filepath.Join(planDir, "valid.json")
	rec := newMemRecorder()
	for _, edit := range []func(p *study.Plan){
		func(p *study.Plan) { p.Axes.Reps = 0 },
		func(p *study.Plan) { p.Axes.Depths = nil },
		func(p *study.Plan) { p.Predictions[0].About.Model = "llama" },
		// A structural error beside a wrong hash: refused for the structure, nothing hashed.
		func(p *study.Plan) { p.Axes.Reps = 0; p.Models[0].SHA256 = strings.Repeat("0", 64) },
	} {
		p := loadValid(t)
		edit(p)
		_, err := study.Register(ctx, rec, p, file, hash)
		var ref *study.RefusedError
		if !errors.As(err, &ref) || strings.Contains(err.Error(), "MISMATCH") {
			t.Fatalf("refusal: %v", err)
		}
	}
	if len(hashed) != 0 || len(rec.journal) != 0 {
		t.Fatalf("refused plans hashed %q and journaled %q", hashed, rec.journal)
	}
	// Only a wrong hash: hashed, then refused as a MISMATCH.
	p := loadValid(t)
	p.Models[1].SHA256 = strings.Repeat("0", 64)
	if _, err := study.Register(ctx, rec, p, file, hash); err == nil || !strings.Contains(err.Error(), "models[1].sha256: MISMATCH") {
		t.Fatalf("mismatch: %v", err)
	}
	if len(hashed) != 2 || len(rec.journal) != 0 {
		t.Fatalf("mismatch hashed %q and journaled %q", hashed, rec.journal)
	}
	if _, err := study.Register(ctx, rec, loadValid(t), file, hash); err != nil || len(hashed) != 4 || rec.journal[0] != "plan.registered "+mustSHA(t, loadValid(t))[:8] {
		t.Fatalf("valid: %v, hashed %q, journal %q", err, hashed, rec.journal)
	}
}

func mustSHA(t *testing.T, p *study.Plan) string {
	t.Helper()
	sum, _, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
