package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

func TestAnalyzeCLI(t *testing.T) {
	code, out, errOut := runCLI("analyze", "crossing", "--line", "70", "--points", "0:92.1,4096:75.34,8192:67.98")
	if code != 0 || !strings.Contains(out, "crosses 70 at about 7068 (between 75.34@4096 and 67.98@8192)") {
		t.Fatalf("crossing: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI("analyze", "crossing", "--line", "70", "--points", "0:92.1,4096:75.34,8192:67.98", "--json")
	var c struct {
		Kind  string  `json:"kind"`
		Depth float64 `json:"depth"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || c.Kind != "crossed" || math.Abs(c.Depth-7067.8) > 0.1 {
		t.Fatalf("crossing json: %d %s", code, out)
	}
	code, out, _ = runCLI("analyze", "slope", "--points", "0:92.83,8192:66.97")
	if code != 0 || strings.TrimSpace(out) != "d8192     -27.9%" {
		t.Fatalf("slope: %q", out)
	}
	code, out, _ = runCLI("analyze", "ceiling", "--bandwidth", "220", "--active-bytes", "9.0e9", "--json")
	var r ceilingReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || math.Abs(r.ExactCeiling-24.44) > 0.01 {
		t.Fatalf("ceiling: %s", out)
	}
	moe := filepath.Join(llamatest.ModelsDir(), "tiny-moe-f32.gguf")
	code, out, _ = runCLI("analyze", "ceiling", "--bandwidth", "20", "--model", moe, "--json")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !(r.HouseActiveBytes > r.ExactActiveBytes) || r.ExactActiveBytes <= 0 {
		t.Fatalf("ceiling from model: %s", out)
	}

	for _, bad := range [][]string{
		{"analyze"},
		{"analyze", "knee"},
		{"analyze", "crossing", "--points", "0:1"},
		{"analyze", "crossing", "--line", "70", "--points", "0:x"},
		{"analyze", "crossing", "--line", "70", "--points", "0:90,0:80"},
		{"analyze", "slope", "--points", "0:90"},
		{"analyze", "ceiling", "--bandwidth", "220"},
		{"analyze", "ceiling", "--bandwidth", "0", "--active-bytes", "1"},
		{"analyze", "ceiling", "--bandwidth", "220", "--model", "/nonexistent.gguf"},
	} {
		code, _, errOut := runCLI(bad...)
		if code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errOut)
		}
	}
}
