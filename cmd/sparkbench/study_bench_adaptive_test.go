package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// TestAdaptiveTimeToPrecision is scripts/bench-adaptive.sh (SPARKBENCH_ADAPTIVE_BENCH=1; it
// skips otherwise): on the medium model, tg16 and pp64 at depths 0 and 256 with one thread,
// the same cells measured by a study with adaptive repetitions to ±1% (3 to
// SPARKBENCH_ADAPTIVE_MAX repetitions in chunks of 3) and by a study with a fixed -r 10, each
// run whole through `study run`, side by side in SPARKBENCH_ADAPTIVE_PAIRS pairs (default 10)
// whose order alternates (fixed first in pairs 1, 3, …, adaptive first in 2, 4, …), so drift
// falls on both. It prints each pair's wall times and achieved 95% half-widths, then the
// medians, to SPARKBENCH_ADAPTIVE_OUT (default stdout). It asserts nothing about the times:
// they are the figures it reports.
func TestAdaptiveTimeToPrecision(t *testing.T) {
	if os.Getenv("SPARKBENCH_ADAPTIVE_BENCH") == "" {
		t.Skip("a benchmark of several minutes: scripts/bench-adaptive.sh")
	}
	pairs, maxReps := envInt(t, "SPARKBENCH_ADAPTIVE_PAIRS", 10), envInt(t, "SPARKBENCH_ADAPTIVE_MAX", 30)
	loc := llamatest.Binaries(t)
	medium := llamatest.Model(t, "medium-llama-f16.gguf")
	sha := fileSHA(t, medium)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	var rows []benchPair
	for i := range pairs {
		fixed := benchPlan(t, dir, fmt.Sprintf("fixed %d", i), medium, sha, `"reps": 10`, "")
		adaptive := benchPlan(t, dir, fmt.Sprintf("adaptive %d", i), medium, sha, "", fmt.Sprintf(`,
  "adaptive": {"min_reps": 3, "max_reps": %d, "chunk_reps": 3, "targets": [{"test": "tg", "rel": 0.01}, {"test": "pp", "rel": 0.01}],
    "order": "blocks", "seed": %d}`, maxReps, i))
		ids := []string{registerAndRun(t, nb, fixed, loc.Dir, false), registerAndRun(t, nb, adaptive, loc.Dir, false)}
		p := benchPair{first: "fixed"}
		order := []int{0, 1}
		if i%2 == 1 {
			order, p.first = []int{1, 0}, "adaptive"
		}
		for _, k := range order {
			start := time.Now()
			if code, out, errOut := runCLI("study", "run", ids[k], "--notebook", nb, "--llama-dir", loc.Dir); code != 0 {
				t.Fatalf("run %s: %d\n%s\n%s", ids[k], code, out, errOut)
			}
			p.wall[k] = time.Since(start)
			p.cells[k], p.reps[k] = halfWidths(t, nb, ids[k])
		}
		rows = append(rows, p)
		t.Logf("pair %d: fixed %s, adaptive %s", i+1, p.wall[0].Round(time.Millisecond), p.wall[1].Round(time.Millisecond))
	}
	out := io.Writer(os.Stdout)
	if f := os.Getenv("SPARKBENCH_ADAPTIVE_OUT"); f != "" {
		w, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		out = w
	}
	printBenchPairs(out, rows, maxReps)
}

// benchPair is one pair: [0] the fixed study, [1] the adaptive one.
type benchPair struct {
	first string
	wall  [2]time.Duration
	cells [2]map[string]float64 // cell → relative 95% half-width of the mean
	reps  [2]int                // repetitions of each cell (the most of any)
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a whole number >= 1", name, s)
	}
	return n
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// benchPlan writes the benchmark's plan: the medium model, tg16 and pp64 at d0 and d256, one
// thread, the CV gates open (the spread is what is measured); reps and adaptive as given.
func benchPlan(t *testing.T, dir, name, model, sha, reps, adaptive string) string {
	t.Helper()
	if reps != "" {
		reps = ", " + reps
	}
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "medium", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 256], "n_prompt": [64], "n_gen": [16], "threads": [1]%s},
  "split": "per_depth",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}%s
}`, name, model, sha, reps, adaptive)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// halfWidths reads a finished study's result cells: each one's relative 95% half-width of the
// mean over its repetitions, and the most repetitions of a cell.
func halfWidths(t *testing.T, nbPath, ref string) (map[string]float64, int) {
	t.Helper()
	n, err := store.OpenWith(nbPath, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l, err := study.LoadStudy(context.Background(), store.StudyRecorder{N: n}, int64(mustAtoi(t, ref)))
	if err != nil {
		t.Fatal(err)
	}
	out, reps := map[string]float64{}, 0
	for _, r := range study.BuildResults(l, nil, 0).Rows {
		test := fmt.Sprintf("tg%d", r.Result.NGen)
		if r.Result.NGen == 0 {
			test = fmt.Sprintf("pp%d", r.Result.NPrompt)
		}
		out[fmt.Sprintf("%s@d%d", test, r.Result.NDepth)] = analysis.RelHalfWidth(r.Result.SamplesTs)
		reps = max(reps, len(r.Result.SamplesTs))
	}
	if len(out) != 4 {
		t.Fatalf("study %s: %d result cells, want 4", ref, len(out))
	}
	return out, reps
}

// printBenchPairs prints the pairs and their medians: the wall time ratio fixed/adaptive (above
// 1: adaptive is faster) and each cell's achieved half-width on both sides.
func printBenchPairs(w io.Writer, rows []benchPair, maxReps int) {
	cells := []string{}
	for c := range rows[0].cells[0] {
		cells = append(cells, c)
	}
	slices.Sort(cells)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pair\tfirst\tfixed s\tadaptive s\tratio\tadaptive reps\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s fixed\t%s adaptive\t", c, c)
	}
	fmt.Fprintln(tw)
	var ratios []float64
	hw := map[string][2][]float64{}
	var totals [2]time.Duration
	met := 0
	for i, p := range rows {
		r := p.wall[0].Seconds() / p.wall[1].Seconds()
		ratios = append(ratios, r)
		totals[0], totals[1] = totals[0]+p.wall[0], totals[1]+p.wall[1]
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.2f\t%d\t", i+1, p.first, p.wall[0].Seconds(), p.wall[1].Seconds(), r, p.reps[1])
		all := true
		for _, c := range cells {
			fmt.Fprintf(tw, "±%.2f%%\t±%.2f%%\t", p.cells[0][c]*100, p.cells[1][c]*100)
			x := hw[c]
			x[0], x[1] = append(x[0], p.cells[0][c]), append(x[1], p.cells[1][c])
			hw[c] = x
			all = all && p.cells[1][c] <= 0.01
		}
		if all {
			met++
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	med := func(xs []float64) float64 { m, _ := analysis.Median(xs); return m }
	fmt.Fprintf(w, "\nwall time fixed/adaptive: median %.2f over %d pairs (total %.1f s fixed, %.1f s adaptive: %.2f)\n",
		med(ratios), len(rows), totals[0].Seconds(), totals[1].Seconds(), totals[0].Seconds()/totals[1].Seconds())
	fmt.Fprintf(w, "adaptive runs that met ±1%% in every cell: %d of %d (max_reps %d)\n", met, len(rows), maxReps)
	fmt.Fprintf(w, "median achieved 95%% half-width of the mean, fixed -r 10 vs adaptive:\n")
	for _, c := range cells {
		fmt.Fprintf(w, "  %-12s ±%.2f%%  vs  ±%.2f%%\n", c, med(hw[c][0])*100, med(hw[c][1])*100)
	}
}
