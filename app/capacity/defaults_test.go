package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/loadgen"
)

func TestDefaultPromptPlanIsValidAndWrittenOnce(t *testing.T) {
	dir := t.TempDir()
	path, err := WriteDefaultPromptPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := DefaultPromptPlanRef()
	p, sum, err := loadgen.LoadPromptPlan(path, ref.SHA256)
	if err != nil || sum != ref.SHA256 || !strings.HasPrefix(p.Prompt(3), "Request 3. ") {
		t.Fatalf("built-in prompt plan: %v %s %+v", err, sum, p)
	}
	if again, err := WriteDefaultPromptPlan(dir); err != nil || again != path {
		t.Fatalf("second write: %v %s", err, again)
	}
	// A user's file of that name is never overwritten.
	if err := os.WriteFile(path, []byte(`{"schema":"sparkbench.prompts/v1","prefix":"Q{n} ","body":"mine"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDefaultPromptPlan(dir); err == nil || !strings.Contains(err.Error(), "other contents") {
		t.Fatalf("a different file was not reported: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, DefaultPromptPlanFile)); !strings.Contains(string(b), "mine") {
		t.Fatal("the user's file was overwritten")
	}
}

func TestPassLoadGatesCodes(t *testing.T) {
	ttft, e2e := 120.0, 900.0
	m := PassMetrics{Pass: "reverse", TTFTMsP95: &ttft, E2EMsP95: &e2e, CompletionRate: 0.5, Completed: 4, Attempted: 8}
	gs := PassLoadGates(m, Limits{TTFTMsP95Max: 100, E2EMsP95Max: 1000, CompletionRateMin: 1})
	var codes []string
	for _, g := range gs {
		if g.Failure != "" {
			codes = append(codes, g.Failure)
		}
	}
	want := "reverse:" + CodeTTFTAbove + " reverse:" + CodeCompletionBelow
	if strings.Join(codes, " ") != want || len(gs) != 3 || !gs[1].Passed {
		t.Fatalf("codes %v, gates %+v; want %s", codes, gs, want)
	}
}
