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
