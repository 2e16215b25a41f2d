package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
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

const (
	tinySHA = "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"
	moeSHA  = "b661d8b0483102bbf249468538c29552cb9a7ffd462197150b07d97886ca35bd"
)

// writePlan writes a per-depth plan over the generated tiny and MoE models (absolute paths).
// The CV gates are opened to 100%: tests of about a millisecond on a shared 2-core machine
// vary by more than 5% (see the demo plan). For the same reason the canary tolerates a 95%
// drop: its tg after a crash fell 39% below its baseline once in CI, which halted a test about
// retries; canary failures have their own tests, with fakes (app/study/studyrun).
func writePlan(t *testing.T, dir, name string, tiny, moe string, reps, nGen int, extra string) string {
	t.Helper()
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "tiny", "path": %q, "sha256": %q}, {"id": "moe", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 128, 256], "n_prompt": [64], "n_gen": [%d], "reps": %d, "threads": [1]},
  "split": "per_depth", "canary": {"model": "tiny", "max_drop": 0.95},
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}%s
}`, name, tiny, tinySHA, moe, moeSHA, nGen, reps, extra)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var studyIDRE = regexp.MustCompile(`study (\d+) `)

func registeredID(t *testing.T, out string) string {
	t.Helper()
	m := studyIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no study id in %q", out)
	}
	return m[1]
}

func showJSON(t *testing.T, id, nb string) *study.Report {
	t.Helper()
	code, out, errOut := runCLI("study", "show", id, "--json", "--notebook", nb)
	var rep study.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("study show --json: %d %s %s", code, out, errOut)
	}
	return &rep
}

// TestStudyEndToEndRealBench: register -> run on the real llama-bench -> verdicts journaled;
// every figure and verdict of `study show --json` recomputes from the stored rows it names.
func TestStudyEndToEndRealBench(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	file := writePlan(t, dir, "e2e study", tiny, moe, 5, 32, `,
  "repeatability": {"leg": "tiny/d0", "at": ["start", "end"]},
  "conditions": [{"text": "shared test machine", "legs": ["moe/d256"]}],
  "bandwidth": {"gbs": 20},
  "predictions": [
    {"id": "P1", "text": "tiny tg above 100 t/s at d0", "kind": "band", "about": {"figure": "cell", "model": "tiny", "test": "tg", "depth": 0}, "lo": 100},
    {"id": "P2", "text": "tiny tg slope to d256", "kind": "fork", "about": {"figure": "depth_slope", "model": "tiny", "test": "tg", "depth": 256},
     "arms": [{"name": "steep", "hi": -0.2}, {"name": "flat", "lo": -0.05}]},
    {"id": "P3", "text": "tiny keeps up with moe at d256", "kind": "comparison", "about": {"figure": "cell", "model": "tiny", "test": "tg32", "depth": 256},
     "op": ">=", "than": {"figure": "cell", "model": "moe", "test": "tg32", "depth": 256}, "tolerance": 0.5},
    {"id": "P4", "text": "where does moe tg cross 10000?", "kind": "question", "about": {"figure": "crossing_depth", "model": "moe", "test": "tg", "line": 10000}},
    {"id": "P5", "text": "tiny efficiency at d0?", "kind": "question", "about": {"figure": "efficiency", "model": "tiny", "test": "tg", "convention": "tensor_exact", "depth": 0}},
    {"id": "P6", "text": "tiny/d0 against its quiet repeats?", "kind": "question", "about": {"figure": "contamination_delta", "test": "tg", "legs": ["tiny/d0#start", "tiny/d0", "tiny/d0#end"]}},
    {"id": "P7", "text": "moe tg spread at d128?", "kind": "band", "about": {"figure": "cv", "model": "moe", "test": "tg32", "depth": 128}, "lo": 0, "hi": 1}
  ]`)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "registered: plan sha256 ") || !strings.Contains(out, "7 predictions, 8 legs") {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id := registeredID(t, out)
	p, _ := study.Load(file)
	p.Defaults()
	sum, _, _ := p.SHA256()
	if !strings.Contains(out, sum) {
		t.Errorf("register does not print the plan SHA-256 %s: %s", sum, out)
	}
	if code, out2, _ := runCLI("study", "register", file, "--notebook", nb); code != 0 || !strings.Contains(out2, "study "+id+" ") || !strings.Contains(out2, "already registered") {
		t.Errorf("second register: %d %s", code, out2)
	}
	// An amendment before its legs ran is accepted.
	if code, out, errOut := runCLI("amend", id, "--prediction", "P1", "--set-lo", "150", "--reason", "the registered floor was a typo", "--notebook", nb); code != 0 || !strings.Contains(out, "amendment recorded") {
		t.Fatalf("amend before: %d %s %s", code, out, errOut)
	}

	start := time.Now()
	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("8 legs + canary baseline on the real llama-bench in %s", time.Since(start).Round(time.Millisecond))
	for _, p := range []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7"} {
		if !strings.Contains(out, "verdict "+p+": ") {
			t.Errorf("no verdict line for %s:\n%s", p, out)
		}
	}

	// After the legs ran: refused with the reason, recordable as a deviation.
	code, _, errOut = runCLI("amend", id, "--prediction", "P1", "--set-lo", "200", "--reason", "tighter", "--notebook", nb)
	if code != 1 || !strings.Contains(errOut, "tiny/d0 (finished)") || !strings.Contains(errOut, "--as-deviation") {
		t.Fatalf("amend after: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("amend", id, "--prediction", "P1", "--set-lo", "200", "--reason", "tighter", "--as-deviation", "--notebook", nb); code != 0 || !strings.Contains(out, "deviation recorded") {
		t.Fatalf("deviation: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI("verdict", id, "--prediction", "P2", "--human", "PASS", "--why", "the slope is what the KV cost predicts", "--notebook", nb); code != 0 {
		t.Fatalf("verdict: %d %s", code, errOut)
	}
	if code, out, errOut := runCLI("finding", "add", id, "--text", "tg falls with depth on both models", "--leg", "tiny/d256", "--leg", "moe/d256", "--prediction", "P2", "--notebook", nb); code != 0 || !strings.Contains(out, "F1 recorded") {
		t.Fatalf("finding: %d %s %s", code, out, errOut)
	}

	rep := showJSON(t, id, nb)
	if rep.Study.Status != "complete" || rep.Study.LegsDone != 8 || len(rep.Results) != 16 {
		t.Fatalf("report: %+v, %d results", rep.Study, len(rep.Results))
	}
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	tr := newTracer(t, n, rep.Study.ID, map[string]string{"tiny": tiny, "moe": moe}, 20)
	for _, c := range rep.Results {
		r := tr.row(c.Source)
		if r.AvgTs != c.Mean || r.StddevTs != c.SD || r.NDepth != c.Depth || r.TestName() != benchfmt.TestName(r.NPrompt, r.NGen, c.Depth) {
			t.Errorf("cell %+v != stored row %s (%v ± %v)", c, c.Source, r.AvgTs, r.StddevTs)
		}
	}
	kinds := map[study.Figure]int{}
	for _, f := range rep.Figures {
		if f.Value == nil {
			t.Errorf("figure %s has no value: %s %s", f.Label, f.Problem, f.Detail)
			continue
		}
		kinds[f.Figure]++
		if want := tr.recompute(f.Selector, f.Sources); math.Abs(want-*f.Value) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("figure %s = %v, recomputed from %v: %v", f.Label, *f.Value, f.Sources, want)
		}
	}
	if kinds[study.FigureSlope] != 8 || kinds[study.FigureCeiling] != 4 || kinds[study.FigureEfficiency] != 6 || kinds[study.FigureRepeatabilityCV] != 2 || kinds[study.FigureCrossing] != 1 {
		t.Errorf("figures by kind: %v", kinds)
	}
	traced := map[study.Figure]int{}
	for _, sc := range rep.Scoreboard {
		v := sc.Verdict
		if sc.Recorded == nil || sc.Recorded.Outcome != string(v.Outcome) {
			t.Errorf("%s: recorded %+v, computed %s", sc.Prediction, sc.Recorded, v.Outcome)
		}
		pr := predictionByID(p, sc.Prediction)
		if sc.Prediction == "P3" {
			if *v.Value != tr.row(v.Sources[0]).AvgTs || *v.Other != tr.row(v.Sources[1]).AvgTs {
				t.Errorf("P3 %v vs %v from %v", *v.Value, *v.Other, v.Sources)
			}
			continue
		}
		if v.Value == nil {
			t.Logf("%s: %s (no number: %s)", sc.Prediction, sc.Word, v.Detail)
			continue
		}
		if want := tr.recompute(pr.About, v.Sources); math.Abs(want-*v.Value) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, recomputed %v from %v", sc.Prediction, *v.Value, want, v.Sources)
		}
		traced[pr.About.Figure]++
		t.Logf("%s %s: %s", sc.Prediction, sc.Kind, sc.Word)
	}
	// The contamination delta (P6) and the CV (P7) always have a value: each was traced.
	if traced[study.FigureContamination] != 1 || traced[study.FigureCV] != 1 {
		t.Errorf("scoreboard figures traced: %v", traced)
	}
	p1 := rep.Scoreboard[0]
	if p1.Word != "HIT" || !p1.Amended || p1.Expected != ">= 150" || len(p1.Deviations) != 1 || !strings.HasPrefix(p1.Deviations[0].Word, "DEVIATION: ") {
		t.Errorf("P1: %+v", p1)
	}
	if h := rep.Scoreboard[1].Human; h == nil || h.Outcome != "PASS" {
		t.Errorf("P2 human verdict: %+v", h)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Label != "F1" || !slices.Equal(rep.Findings[0].Legs, []string{"tiny/d256", "moe/d256"}) || rep.Findings[0].Predictions[0] != "P2" {
		t.Errorf("findings: %+v", rep.Findings)
	}
	if len(rep.Amendments) != 1 || len(rep.Deviations) != 1 || rep.Deviations[0].Prediction != "P1" {
		t.Errorf("amendments %d deviations %+v", len(rep.Amendments), rep.Deviations)
	}
	for _, l := range rep.Legs {
		if l.Label == "moe/d256" && !slices.Equal(l.Conditions, []string{"shared test machine"}) {
			t.Errorf("moe/d256 conditions %q", l.Conditions)
		}
	}
	// Verdicts journaled once each; the chain verifies.
	entries, _ := n.Journal(context.Background(), rep.Study.ID, 0, 10000)
	verdicts := map[string]int{}
	for _, e := range entries {
		if e.Kind == store.KindVerdict {
			var v struct{ Key string }
			json.Unmarshal(e.Payload, &v)
			verdicts[v.Key]++
		}
	}
	if len(verdicts) != 7 || verdicts["P1"] != 1 || verdicts["P5"] != 1 || verdicts["P6"] != 1 || verdicts["P7"] != 1 {
		t.Errorf("verdict journal entries %v", verdicts)
	}
	if vr, err := n.Verify(context.Background()); err != nil || !vr.OK() {
		t.Fatalf("verify: %+v %v", vr.Broken, err)
	}
	code, out, _ = runCLI("study", "show", id, "--notebook", nb)
	for _, want := range []string{"prediction scoreboard", "DEVIATION: ", "(amended)", "F1 tg falls with depth", "results by depth", "derived figures", "PASS: the slope"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("study show lacks %q:\n%s", want, out)
		}
	}

	// A model replaced after registration: `study run` refuses it (MISMATCH), runs nothing.
	copyPath := filepath.Join(dir, "tiny-copy.gguf")
	data, _ := os.ReadFile(tiny)
	os.WriteFile(copyPath, data, 0o644)
	file2 := writePlan(t, dir, "mismatch study", copyPath, moe, 1, 16, "")
	code, out, errOut = runCLI("study", "register", file2, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register 2: %d %s", code, errOut)
	}
	id2 := registeredID(t, out)
	f16, _ := os.ReadFile(llamatest.Model(t, "tiny-llama-f16.gguf"))
	os.WriteFile(copyPath, f16, 0o644)
	code, out, errOut = runCLI("study", "run", id2, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 2 || !strings.Contains(errOut, "MISMATCH") || strings.Contains(out, "started") {
		t.Fatalf("mismatch run: %d\n%s\n%s", code, out, errOut)
	}
}

func predictionByID(p *study.Plan, id string) study.Prediction {
	for _, x := range p.Predictions {
		if x.ID == id {
			return x
		}
	}
	return study.Prediction{}
}

// tracer reads stored rows by reference and recomputes figures from them.
type tracer struct {
	t       *testing.T
	n       *store.Notebook
	legs    map[int64][]benchfmt.Result // BenchRows by leg
	planLeg map[int64]string            // the plan leg each notebook leg ran
	rows    map[string]study.StoredRow
	models  map[string]string
	gbs     float64
}

func newTracer(t *testing.T, n *store.Notebook, studyID int64, models map[string]string, gbs float64) *tracer {
	rows, err := store.StudyRecorder{N: n}.Rows(context.Background(), studyID)
	if err != nil {
		t.Fatal(err)
	}
	legs, err := store.StudyRecorder{N: n}.Legs(context.Background(), studyID)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tracer{t: t, n: n, legs: map[int64][]benchfmt.Result{}, planLeg: map[int64]string{}, rows: map[string]study.StoredRow{}, models: models, gbs: gbs}
	for _, r := range rows {
		tr.rows[study.RowRef(r.LegID, r.Seq)] = r
	}
	for _, l := range legs {
		tr.planLeg[l.ID] = l.PlanLeg
	}
	return tr
}

// row returns the stored row a reference names, read back with BenchRows, after checking it
// counts as a result.
func (tr *tracer) row(ref string) benchfmt.Result {
	tr.t.Helper()
	leg, seq, err := study.ParseRowRef(ref)
	if err != nil {
		tr.t.Fatal(err)
	}
	if st := tr.rows[ref].Status; st != "result" {
		tr.t.Errorf("%s has status %q: only result rows may back a figure", ref, st)
	}
	r, ok := tr.rows[ref]
	if !ok {
		tr.t.Fatalf("%s (leg %d seq %d) is not a stored row of the study", ref, leg, seq)
	}
	if tr.legs[leg] == nil {
		if tr.legs[leg], err = tr.n.BenchRows(context.Background(), leg); err != nil {
			tr.t.Fatal(err)
		}
	}
	if b := tr.legs[leg]; int(seq) >= len(b) || b[seq].AvgTs != r.Result.AvgTs || b[seq].NDepth != r.Result.NDepth || b[seq].NGen != r.Result.NGen {
		tr.t.Fatalf("%s: BenchRows(%d) disagrees with the study's rows", ref, leg)
	}
	return r.Result
}

func (tr *tracer) ceiling(model, conv string) float64 {
	h, err := gguf.ReadFile(tr.models[model])
	if err != nil {
		tr.t.Fatal(err)
	}
	bytes := float64(h.ActiveBytesPerToken())
	if conv == "house" {
		bytes = h.HouseActiveBytesPerToken()
	}
	c, _ := analysis.CeilingTPS(tr.gbs, bytes)
	return c
}

func (tr *tracer) recompute(s study.Selector, sources []string) float64 {
	tr.t.Helper()
	var rs []benchfmt.Result
	for _, src := range sources {
		if strings.HasPrefix(src, "leg ") {
			rs = append(rs, tr.row(src))
		}
	}
	at := func(depth int) benchfmt.Result {
		for _, r := range rs {
			if r.NDepth == int64(depth) {
				return r
			}
		}
		tr.t.Fatalf("%s: no source row at depth %d in %v", s, depth, sources)
		return benchfmt.Result{}
	}
	switch s.Figure {
	case study.FigureCell:
		return at(*s.Depth).AvgTs
	case study.FigureSlope:
		first := rs[0]
		for _, r := range rs {
			if r.NDepth < first.NDepth {
				first = r
			}
		}
		return (at(*s.Depth).AvgTs - first.AvgTs) / first.AvgTs
	case study.FigureCrossing:
		var pts []analysis.Point
		for _, r := range rs {
			pts = append(pts, analysis.Point{X: float64(r.NDepth), Y: r.AvgTs})
		}
		c, err := analysis.CrossingDepth(pts, s.Line)
		if err != nil {
			tr.t.Fatal(err)
		}
		switch c.Kind {
		case analysis.Crossed:
			return c.Depth
		case analysis.BelowAtStart:
			return c.From.X
		}
		return math.Inf(1)
	case study.FigureCeiling:
		return tr.ceiling(s.Model, s.Conv)
	case study.FigureEfficiency:
		return at(*s.Depth).AvgTs / tr.ceiling(s.Model, s.Conv)
	case study.FigureRepeatabilityCV:
		var means []float64
		for _, r := range rs {
			means = append(means, r.AvgTs)
		}
		return analysis.Summarize(means).CV
	case study.FigureCV:
		r := at(*s.Depth)
		if len(rs) != 1 || !testIs(s.Test, r) {
			tr.t.Fatalf("%s: sources %v are not the one %s row", s, sources, s.Test)
		}
		return r.StddevTs / r.AvgTs
	case study.FigureContamination:
		// Sources are the named legs' rows, in order: quiet before, contaminated, quiet after.
		if len(rs) != 3 || len(s.Legs) != 3 {
			tr.t.Fatalf("%s: %d source rows for legs %v", s, len(rs), s.Legs)
		}
		for i, src := range sources {
			leg, _, _ := study.ParseRowRef(src)
			if tr.planLeg[leg] != s.Legs[i] || !testIs(s.Test, rs[i]) {
				tr.t.Fatalf("%s: source %s is a row of plan leg %q (%s), want a %s row of %q", s, src, tr.planLeg[leg], rs[i].TestName(), s.Test, s.Legs[i])
			}
		}
		return rs[1].AvgTs/((rs[0].AvgTs+rs[2].AvgTs)/2) - 1
	}
	tr.t.Fatalf("no recomputation for %s", s.Figure)
	return 0
}

// testIs reports whether row r is the test a selector names: "tg" or "pp" (any size), or an
// exact test such as "tg32".
func testIs(sel string, r benchfmt.Result) bool {
	name := benchfmt.TestName(r.NPrompt, r.NGen, 0)
	return name == sel || (len(sel) == 2 && strings.HasPrefix(name, sel) && len(name) > 2 && name[2] >= '0' && name[2] <= '9')
}

const studyHelperEnv = "SPARKBENCH_STUDY_CLI_HELPER"

// TestStudyHelperProcess runs the CLI with the arguments in $SPARKBENCH_STUDY_CLI_HELPER
// (separated by \x1f): the child that TestStudyRunKill9Resumes kills.
func TestStudyHelperProcess(t *testing.T) {
	args := os.Getenv(studyHelperEnv)
	if args == "" {
		t.Skip("helper process for TestStudyRunKill9Resumes")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// TestStudyRunKill9Resumes kills `study run` (a child process) with SIGKILL in the middle of
// its second leg, runs it again, and checks that it resumes at that leg with nothing
// duplicated and the journal intact.
func TestStudyRunKill9Resumes(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	// 20 repetitions of tg128: the second row of a leg takes a few hundred ms to arrive.
	file := writePlan(t, dir, "kill study", tiny, moe, 20, 128, "")
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s", code, errOut)
	}
	id := registeredID(t, out)

	cmd := exec.Command(os.Args[0], "-test.run=^TestStudyHelperProcess$")
	cmd.Env = append(os.Environ(), studyHelperEnv+"="+strings.Join([]string{"study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir}, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr bytes.Buffer
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var seen []string
	killed := false
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		// The first row of the second leg has arrived: its second row is still running.
		if strings.HasPrefix(line, "  tiny/d128 ") {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	cmd.Wait()
	if !killed {
		t.Fatalf("the child ended before the second leg's first row:\n%s\n%s", strings.Join(seen, "\n"), childErr.String())
	}
	// Pdeathsig takes llama-bench down with it: no orphan keeps running.
	deadline := time.Now().Add(5 * time.Second)
	for orphanOf(dir) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if orphanOf(dir) {
		t.Error("a llama-bench of the killed run is still alive")
	}

	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 {
		t.Fatalf("resume: %d\n%s\n%s", code, out, errOut)
	}
	var started []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " started: ") {
			started = append(started, l[:strings.Index(l, " started: ")])
		}
	}
	if len(started) == 0 || started[0] != "leg 2/6 tiny/d128 (attempt 2)" || len(started) != 5 || !strings.Contains(out, "resuming: 1/6 legs finished before") {
		t.Fatalf("resume did not start at the first unfinished leg: %q\n%s", started, out)
	}

	n, err := store.Open(nb)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	legs, err := store.StudyRecorder{N: n}.Legs(context.Background(), mustAtoi(t, id))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]int{}
	finished := map[string]int{}
	var interrupted []string
	total := 0
	for _, l := range legs {
		labels[l.Label]++
		switch {
		case l.State == store.LegInterrupted:
			interrupted = append(interrupted, l.Label)
			if l.Results != 0 || l.Unmarked != l.Rows {
				t.Errorf("interrupted leg %+v: its rows must stay unmarked", l)
			}
		case l.Role == study.RoleLeg:
			finished[l.PlanLeg]++
			total += l.Rows
			rows, _ := n.BenchRows(context.Background(), l.ID)
			if l.Class != "ok" || l.Rows != 2 || l.Results != 2 || len(rows) != 2 {
				t.Errorf("leg %s: class %s, %d rows (%d read back), %d results", l.Label, l.Class, l.Rows, len(rows), l.Results)
			}
		}
	}
	for label, k := range labels {
		if k != 1 {
			t.Errorf("leg label %q recorded %d times", label, k)
		}
	}
	if len(finished) != 6 || total != 12 || !slices.Equal(interrupted, []string{"tiny/d128"}) {
		t.Errorf("finished %v (%d rows), interrupted %q", finished, total, interrupted)
	}
	for pl, k := range finished {
		if k != 1 {
			t.Errorf("plan leg %s finished %d times", pl, k)
		}
	}
	if vr, err := n.Verify(context.Background()); err != nil || !vr.OK() {
		t.Fatalf("verify after kill and resume: %+v %v", vr.Broken, err)
	}
	t.Logf("killed after %d output lines; resumed: %q; legs %v", len(seen), started, labels)
}

func mustAtoi(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// orphanOf reports whether a process whose command line mentions dir is alive.
func orphanOf(dir string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("llama-bench")) && bytes.Contains(b, []byte("kill-study")) {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if !bytes.Contains(st, []byte(") Z ")) {
				return true
			}
		}
	}
	return false
}

// TestDemoRunsEndToEnd: the embedded demo writes its models, registers once, and runs in well
// under a minute with its band HIT, its fork firing an arm and its question ANSWERED.
func TestDemoRunsEndToEnd(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	start := time.Now()
	code, out, errOut := runCLI("demo", "--run", "--data-dir", dir, "--notebook", nb, "--llama-dir", loc.Dir)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("demo --run: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("demo --run (models written, registered, 6 legs + canary baseline) took %s", took.Round(time.Millisecond))
	if took > time.Minute {
		t.Errorf("the demo took %s, more than a minute", took)
	}
	id := registeredID(t, out)
	rep := showJSON(t, id, nb)
	for _, sc := range rep.Scoreboard {
		t.Logf("%s %s: %s (%s)", sc.Prediction, sc.Kind, sc.Word, sc.Verdict.Detail)
		switch sc.Kind {
		case study.KindBand:
			if sc.Verdict.Outcome != study.Hit {
				t.Errorf("band %s: %s", sc.Prediction, sc.Word)
			}
		case study.KindFork:
			if sc.Verdict.Outcome != study.Hit || sc.Verdict.Arm == "" {
				t.Errorf("fork %s fired no arm: %s (%s)", sc.Prediction, sc.Word, sc.Verdict.Detail)
			}
		case study.KindQuestion:
			if sc.Verdict.Outcome != study.Answered {
				t.Errorf("question %s: %s %s", sc.Prediction, sc.Word, sc.Verdict.Problem)
			}
		}
	}
	if rep.Study.Status != "complete" || len(rep.Scoreboard) != 3 {
		t.Errorf("demo study %+v", rep.Study)
	}
	// Idempotent: found again by the plan's SHA-256, nothing rewritten or re-registered.
	code, out2, _ := runCLI("demo", "--data-dir", dir, "--notebook", nb)
	if code != 0 || !strings.Contains(out2, "demo study "+id+" found (registered before)") {
		t.Errorf("second demo: %d %s", code, out2)
	}
	for _, f := range []string{"tiny-llama-f32.gguf", "tiny-moe-f32.gguf", "demo-study.json"} {
		if _, err := os.Stat(filepath.Join(dir, "demo", f)); err != nil {
			t.Errorf("demo file: %v", err)
		}
	}
}

func TestStudyCommandsUsage(t *testing.T) {
	nb := filepath.Join(t.TempDir(), "nb.db")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"study", "frob"}, "unknown verb"},
		{[]string{"study", "run"}, "want one study id"},
		{[]string{"study", "run", "42", "--notebook", nb}, `no study has ID 42`},
		{[]string{"study", "show", "1", "--notebook", nb}, `no study has ID 1`},
		{[]string{"verdict", "1", "--prediction", "P1", "--human", "PASS", "--notebook", nb}, "--why is required"},
		{[]string{"verdict", "1", "--prediction", "P1", "--human", "MAYBE", "--why", "x", "--notebook", nb}, "want PASS, FAIL or NOTE"},
		{[]string{"finding", "add", "1", "--notebook", nb}, "--text is required"},
		{[]string{"finding", "list"}, "finding add ID"},
		{[]string{"amend", "1", "--prediction", "P1", "--reason", "r", "--notebook", nb}, "nothing to change"},
		{[]string{"amend", "1", "--prediction", "P1", "--set-lo", "x", "--reason", "r"}, "is not a number"},
		{[]string{"amend", "1", "--prediction", "P2", "--set-arm", "steep", "--reason", "r"}, "NAME=LO:HI"},
		{[]string{"demo", "extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.args, code, errOut, c.want)
		}
	}
}

// On a terminal the run shows one progress line redrawn in place (legs done/total, current
// leg, ETA) with finished legs and verdicts printed above it.
func TestStudyRunPrinterTerminal(t *testing.T) {
	var b bytes.Buffer
	p := &runPrinter{w: &b, tty: true}
	pr := study.Progress{LegsDone: 1, LegsTotal: 4, Current: "tiny/d128", LegTest: 0, LegTests: 2, Elapsed: 3 * time.Second, ETA: 9 * time.Second}
	p.event(study.Event{Kind: study.EventLegStarted, Leg: "tiny/d128", Role: study.RoleLeg, Progress: pr})
	v := 1.0
	p.event(study.Event{Kind: study.EventVerdict, Verdict: &study.Verdict{Prediction: "P1", Outcome: study.Hit, Value: &v}, Progress: pr})
	pr.LegsDone, pr.Current = 4, ""
	p.event(study.Event{Kind: study.EventDone, Progress: pr})
	out := b.String()
	for _, want := range []string{"\r\033[K[######..................] 1/4 legs · tiny/d128 (test 1/2) · 3s · ETA 9s", "\r\033[Kverdict P1: HIT\n", "[########################] 4/4 legs"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "started:") {
		t.Errorf("a terminal gets the bar, not a line per start: %q", out)
	}
}

func TestNotebookLibrarySourceAndHashesSurviveEachOther(t *testing.T) {
	nb, err := store.Open(filepath.Join(t.TempDir(), "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	lib := notebookLibrary{nb}
	ctx := context.Background()
	model, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "models", "tiny-llama-f32.gguf"))
	const sum = "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"
	if _, err := lib.SetSource(ctx, model, "sparkbench/cmd/mkmodel", "seed 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.SetExpected(ctx, model, sum); err != nil {
		t.Fatal(err)
	}
	st, err := lib.Hash(ctx, model, nil)
	if err != nil || st.Status != "VERIFIED" || st.Source != "sparkbench/cmd/mkmodel" || st.Revision != "seed 1" {
		t.Fatalf("after hashing: %+v %v", st, err)
	}
	st, err = lib.Status(ctx, model)
	if err != nil || !st.FromCache || st.SHA256 != sum || st.Source != "sparkbench/cmd/mkmodel" {
		t.Fatalf("status: %+v %v", st, err)
	}
}
