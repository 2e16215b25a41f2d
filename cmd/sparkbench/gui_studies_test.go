package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// TestStudyServiceRunsTheDemoForReal drives the window's study service against a real
// notebook and the real llama-bench: demo registered, run, verdicts shown, and registering
// again finds the same study.
func TestStudyServiceRunsTheDemoForReal(t *testing.T) {
	llamatest.Binaries(t)
	nb, tmp, _ := tempNotebook(t)
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	ctx := context.Background()
	id, err := svc.EnsureDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := svc.EnsureDemo(ctx); err != nil || again != id {
		t.Fatalf("demo registered twice: %d vs %d (%v)", again, id, err)
	}
	list, err := svc.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list: %+v %v", list, err)
	}
	var kinds []string
	sum, err := svc.Run(ctx, id, func(e study.Event) { kinds = append(kinds, string(e.Kind)) })
	if err != nil || sum.Halted || sum.LegsDone != sum.LegsTotal {
		t.Fatalf("run: %+v %v", sum, err)
	}
	joined := strings.Join(kinds, " ")
	for _, want := range []string{"run_started", "leg_started", "sample", "leg_finished", "verdict", "done"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %s: %s", want, joined)
		}
	}
	rep, err := svc.Show(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Scoreboard {
		if s.Verdict.Outcome == study.Pending || s.Verdict.Outcome == study.Unresolvable {
			t.Errorf("%s still %s after the run: %s", s.Prediction, s.Verdict.Outcome, s.Verdict.Problem)
		}
	}
	if len(rep.Results) == 0 {
		t.Fatal("no results shown")
	}
}

// TestPlotFromAStudy charts the demo study's results from the notebook, as PNG and SVG.
func TestPlotFromAStudy(t *testing.T) {
	llamatest.Binaries(t)
	nb, tmp, nbPath := tempNotebook(t)
	svc := studyService{nb: nb, dataDir: filepath.Join(tmp, "data")}
	id, err := svc.EnsureDemo(context.Background())
	if err == nil {
		_, err = svc.Run(context.Background(), id, func(study.Event) {})
	}
	nb.Close()
	if err != nil {
		t.Fatal(err)
	}
	ref := strconv.FormatInt(id, 10)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", ref, "--kind", "depth", "--line", "10000", "--out", filepath.Join(tmp, "depth.png")}, "wrote"},
		{[]string{"plot", ref, "--kind", "depth", "--metric", "pp", "--out", filepath.Join(tmp, "depth-pp.svg")}, "wrote"},
		{[]string{"plot", ref, "--kind", "repeatability", "--out", filepath.Join(tmp, "rep.png")}, ""},
	} {
		code, out, errOut := runCLI(append(c.args, "--notebook", nbPath)...)
		if c.want != "" && (code != 0 || !strings.Contains(out, c.want)) {
			t.Errorf("%v: %d %s %s", c.args, code, out, errOut)
		}
		if c.want == "" && code == 2 && !strings.Contains(errOut, "no repeated leg") {
			t.Errorf("%v: %d %s", c.args, code, errOut)
		}
	}
	if st, err := os.Stat(filepath.Join(tmp, "depth.png")); err != nil || st.Size() < 10000 {
		t.Fatalf("depth.png: %v", err)
	}
	code, _, errOut := runCLI("plot", ref, "--kind", "envelope", "--out", filepath.Join(tmp, "e.png"), "--notebook", nbPath)
	if code != 2 || !strings.Contains(errOut, "charts a capacity study") {
		t.Fatalf("envelope from a throughput study: %d %s", code, errOut)
	}
}

// tempNotebook opens a new notebook in a temporary folder, closed when the test ends; it
// returns the notebook, the folder and the notebook's path.
func tempNotebook(t *testing.T) (*store.Notebook, string, string) {
	t.Helper()
	tmp := t.TempDir()
	path := filepath.Join(tmp, "notebook.db")
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Close() })
	return nb, tmp, path
}
