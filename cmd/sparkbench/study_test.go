package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStudyValidateCLI(t *testing.T) {
	valid := filepath.Join("..", "..", "app", "study", "testdata", "valid.json")
	code, out, errOut := runCLI("study", "validate", valid)
	if code != 0 || !strings.Contains(out, `valid throughput plan "tiny depth curve", sha256 `) || !strings.Contains(out, "tiny/d0#end") {
		t.Fatalf("valid: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI("study", "validate", valid, "--json")
	var rep studyValidateReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Valid || len(rep.SHA256) != 64 || len(rep.Legs) != 8 {
		t.Fatalf("json: %s", out)
	}

	// A mismatching hash is refused (exit 2) and nothing but the report is produced.
	data, _ := os.ReadFile(valid)
	bad := strings.Replace(string(data), "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda", strings.Repeat("0", 64), 1)
	tmp := filepath.Join(t.TempDir(), "bad.json")
	abs, _ := filepath.Abs(filepath.Join(filepath.Dir(valid), "../../../testdata/models"))
	bad = strings.ReplaceAll(bad, "../../../testdata/models", abs)
	os.WriteFile(tmp, []byte(bad), 0o644)
	code, _, errOut = runCLI("study", "validate", tmp)
	if code != 2 || !strings.Contains(errOut, "models[0].sha256: MISMATCH") {
		t.Fatalf("mismatch: %d %s", code, errOut)
	}
	code, _, errOut = runCLI("study", "validate", filepath.Join(t.TempDir(), "absent.json"))
	if code != 2 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("absent: %d %s", code, errOut)
	}
}

func TestModelVerifyUsesTheNotebookCache(t *testing.T) {
	nb := filepath.Join(t.TempDir(), "notebook.db")
	model := filepath.Join("..", "..", "testdata", "models", "tiny-llama-f32.gguf")
	const sum = "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"
	code, out, errOut := runCLI("model", "verify", model, "--notebook", nb, "--json")
	var r modelVerifyReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.SHA256 != sum || r.FromCache || r.Status != "PENDING" {
		t.Fatalf("first verify: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI("model", "verify", model, "--notebook", nb, "--json", "--expect", sum)
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.FromCache || r.Status != "VERIFIED" {
		t.Fatalf("second verify: %d %s", code, out)
	}
	code, out, _ = runCLI("model", "verify", model, "--notebook", nb, "--expect", strings.Repeat("ab", 32))
	if code != 1 || !strings.Contains(out, "MISMATCH") || !strings.Contains(out, "download it again") {
		t.Fatalf("mismatch: %d %s", code, out)
	}
	for _, bad := range [][]string{
		{"model", "verify", model, "--notebook", nb, "--expect", "xyz"},
		{"model", "verify", filepath.Join(t.TempDir(), "absent.gguf"), "--notebook", nb},
		{"model", "verify", "--notebook", nb},
	} {
		if code, _, errOut := runCLI(bad...); code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: %d %q", bad, code, errOut)
		}
	}
}
