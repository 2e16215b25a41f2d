package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/runner/llamatest"
)

// The kind contract's receipt clause: a receipt exported and verified, then with one derived
// figure changed in study.json and in receipt.md and SHA256SUMS re-made with the program's own
// function, fails `sparkbench verify`, naming the figure (its path in study.json, the line of
// receipt.md). One test per study kind with ordinary receipts, through the real CLI verbs.

// forgeFigure sets the number at path (keys and indices) in the bundle's study.json to v,
// replaces mdOld by mdNew in its receipt.md (both must be there), re-makes SHA256SUMS with
// receipt.Sums and writes the files back. It returns the path as verify names it.
func forgeFigure(t *testing.T, dir string, path []any, v float64, mdOld, mdNew string) string {
	t.Helper()
	files, err := bundle.ReadDir(dir, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(files[receipt.FileStudy]))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	name, at := "", doc
	for i, p := range path {
		last := i == len(path)-1
		switch k := p.(type) {
		case string:
			m, ok := at.(map[string]any)
			if !ok || m[k] == nil {
				t.Fatalf("study.json has no %s%s", name, k)
			}
			if name != "" {
				name += "."
			}
			name += k
			if last {
				m[k] = v
			}
			at = m[k]
		case int:
			a, ok := at.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("study.json has no %s[%d]", name, k)
			}
			name += fmt.Sprintf("[%d]", k)
			if last {
				a[k] = v
			}
			at = a[k]
		}
	}
	js, err := canon.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(js, files[receipt.FileStudy]) {
		t.Fatalf("%s is already %g", name, v)
	}
	if !bytes.Contains(files[receipt.FileReceipt], []byte(mdOld)) {
		t.Fatalf("receipt.md has no %q:\n%s", mdOld, files[receipt.FileReceipt])
	}
	files[receipt.FileStudy] = js
	files[receipt.FileReceipt] = bytes.Replace(files[receipt.FileReceipt], []byte(mdOld), []byte(mdNew), 1)
	files[receipt.FileSums] = receipt.Sums(files)
	for _, n := range []string{receipt.FileStudy, receipt.FileReceipt, receipt.FileSums} {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// verifyForged runs `sparkbench verify` on a forged bundle: it must exit 1 naming the figure
// in study.json (path, forged value, the value re-assembly gives) and in receipt.md (its line
// with the forged text).
func verifyForged(t *testing.T, dir, path, forged, mdNew string) {
	t.Helper()
	code, out, errOut := runCLI("verify", dir)
	for _, want := range []string{
		"DIFFERS study.json: differs from the re-assembled file: " + path + " is " + forged + ", re-assembly gives ",
		"DIFFERS receipt.md: line ",
		mdNew,
		"FAILED: 2 problem(s)",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("verify of a bundle with %s forged: exit %d, want 1, output lacks %q:\n%s\n%s", path, code, want, out, errOut)
		}
	}
}

func verifyOK(t *testing.T, dir string) {
	t.Helper()
	if code, out, errOut := runCLI("verify", dir); code != 0 || !strings.Contains(out, "OK: every file matches") {
		t.Fatalf("verify of the exported receipt: %d\n%s\n%s", code, out, errOut)
	}
}

// Throughput: the demo study's first result row's mean.
func TestForgedFigureFailsVerifyThroughput(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	nb, id := demoNotebook(t, home)
	dir := filepath.Join(t.TempDir(), "receipt")
	if code, out, errOut := runCLI("receipt", id, "--notebook", nb, "--out", dir); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	verifyOK(t, dir)
	files, err := bundle.ReadDir(dir, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Results []struct {
			Mean float64 `json:"mean_ts"`
		} `json:"results"`
	}
	if err := json.Unmarshal(files[receipt.FileStudy], &s); err != nil || len(s.Results) == 0 {
		t.Fatalf("study.json results: %v %s", err, files[receipt.FileStudy])
	}
	m := s.Results[0].Mean
	forged := m*1.25 + 1
	old, nw := fmt.Sprintf("| %.2f ± ", m), fmt.Sprintf("| %.2f ± ", forged)
	path := forgeFigure(t, dir, []any{"results", 0, "mean_ts"}, forged, old, nw)
	verifyForged(t, dir, path, string(must(canon.Marshal(forged))), nw)
}

// Quantization ladder: the candidate's tg@0 speed (a ladder recorded by hand, as quantrun
// journals one).
func TestForgedFigureFailsVerifyQuant(t *testing.T) {
	_, _, dir, _ := handLadderBundle(t)
	verifyOK(t, dir)
	path := forgeFigure(t, dir, []any{"candidates", 0, "speed", "tg@0"}, 99.5, "| Q4_0 | 4.50 | 1.0 | 12.50 |", "| Q4_0 | 4.50 | 1.0 | 99.50 |")
	verifyForged(t, dir, path, "99.5", "| Q4_0 | 4.50 | 1.0 | 99.50 |")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Capacity: the first candidate's selected operating point's generation rate (a small real
// capacity study: llama-server on the tiny models).
func TestForgedFigureFailsVerifyCapacity(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := capacityStudyPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("run", "1", "--notebook", nbPath); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	out := filepath.Join(dir, "receipt")
	if code, o, e := runCLI("receipt", "1", "--out", out, "--notebook", nbPath); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, o, e)
	}
	verifyOK(t, out)
	files, err := bundle.ReadDir(out, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Candidates []struct {
			Selected *struct {
				Slots   int     `json:"slots"`
				Clients int     `json:"clients"`
				Rate    float64 `json:"generation_rate"`
			} `json:"selected"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(files[receipt.FileStudy], &s); err != nil || len(s.Candidates) == 0 || s.Candidates[0].Selected == nil {
		t.Fatalf("study.json's first candidate has no selected point: %v %.600s", err, files[receipt.FileStudy])
	}
	sel := s.Candidates[0].Selected
	forged := sel.Rate*1.25 + 1
	old := fmt.Sprintf("| P%d / C%d | %.2f tok/s |", sel.Slots, sel.Clients, sel.Rate)
	nw := fmt.Sprintf("| P%d / C%d | %.2f tok/s |", sel.Slots, sel.Clients, forged)
	path := forgeFigure(t, out, []any{"candidates", 0, "selected", "generation_rate"}, forged, old, nw)
	verifyForged(t, out, path, string(must(canon.Marshal(forged))), nw)
}
