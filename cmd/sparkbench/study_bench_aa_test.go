//go:build aabench

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
)

// TestAdaptiveAABench is scripts/bench-aa.sh (built only with the aabench tag, so that make
// test neither runs nor skips it; make test vets it),
// issue 31's real A/A: the shipped adaptive example (docs/examples/adaptive-reps.json, only
// its name changed so that each copy registers as a study of its own) run as
// SPARKBENCH_AA_PAIRS pairs (default 10) of identical studies, back to back, each pair
// compared with `study compare A B --json` (the default statistics: process level). It prints
// every cell's comparison, the fraction of cells called significant with its 95%
// Clopper–Pearson interval (the target: 10% or less at this count), and the spread
// between processes and within one per test (medians over the studies), to SPARKBENCH_AA_OUT
// (default stdout). It asserts nothing about the rate: it is the figure it reports.
func TestAdaptiveAABench(t *testing.T) {
	pairs := envInt(t, "SPARKBENCH_AA_PAIRS", 10)
	loc := llamatest.Binaries(t)
	llamatest.Model(t, "medium-llama-f16.gguf")
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "adaptive-reps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := json.Unmarshal(src, &plan); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Abs(filepath.Join("..", "..", "docs", "examples"))
	for _, m := range plan["models"].([]any) { // resolved as the example resolves them
		m := m.(map[string]any)
		m["path"] = filepath.Join(examples, m["path"].(string))
	}
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	write := func(name string) string {
		plan["name"] = name
		b, err := json.MarshalIndent(plan, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type cellResult struct {
		pair int
		cell study.CellComparison
	}
	var cells []cellResult
	spread := map[string][2][]float64{} // test → between, within over the studies' cells
	for i := range pairs {
		var ids [2]string
		for k := range 2 {
			ids[k] = registerAndRun(t, nb, write(fmt.Sprintf("aa %d%c", i+1, 'a'+k)), loc.Dir, true)
			code, out, errOut := runCLI("study", "show", ids[k], "--notebook", nb, "--json")
			var rep study.Report
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
				t.Fatalf("show %s: %d %s", ids[k], code, errOut)
			}
			for _, c := range rep.Results {
				if u := c.Unit; u != nil && u.BetweenCV != nil {
					key := fmt.Sprintf("%s@d%d", c.Test, c.Depth)
					x := spread[key]
					x[0], x[1] = append(x[0], *u.BetweenCV), append(x[1], u.WithinCV)
					spread[key] = x
				}
			}
		}
		code, out, errOut := runCLI("study", "compare", ids[0], ids[1], "--notebook", nb, "--json")
		var c study.StudyComparison
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil || c.Stats != study.StatsProcess {
			t.Fatalf("compare %s %s: %d %s %s", ids[0], ids[1], code, out, errOut)
		}
		for _, cc := range c.Cells {
			cells = append(cells, cellResult{i + 1, cc})
		}
		t.Logf("pair %d: studies %s and %s compared", i+1, ids[0], ids[1])
	}
	out := io.Writer(os.Stdout)
	if f := os.Getenv("SPARKBENCH_AA_OUT"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		out = w
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "pair\tcell\tcomparison\n")
	sig := 0
	for _, c := range cells {
		if c.cell.Significant {
			sig++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", c.pair, c.cell.Label(), c.cell.Word)
	}
	tw.Flush()
	lo, hi := clopperPearson(sig, len(cells))
	fmt.Fprintf(out, "\nA/A: %d of %d cells significant at α = 0.05 over %d pairs of the adaptive example: %.1f%% (95%% Clopper–Pearson interval %.1f%%–%.1f%%; target 10%% or less)\n",
		sig, len(cells), pairs, 100*float64(sig)/float64(len(cells)), lo*100, hi*100)
	fmt.Fprintf(out, "spread per test (medians over the %d studies' cells):\n", 2*pairs)
	var keys []string
	for k := range spread {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, _ := analysis.Median(spread[k][0])
		w, _ := analysis.Median(spread[k][1])
		fmt.Fprintf(out, "  %-10s between processes %.2f%%, within %.2f%%\n", k, b*100, w*100)
	}
}
