package studyrun

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/hashing"
)

// copiedModels points the plan's tiny model at a copy in a temporary folder (same SHA-256),
// which the test may then replace; it returns the copy's path.
func copiedModels(t *testing.T, p *study.Plan) string {
	t.Helper()
	dir := t.TempDir()
	for i := range p.Models {
		if p.Models[i].ID != "tiny" {
			p.Models[i].Path, _ = filepath.Abs(filepath.Join(planDir, p.Models[i].Path))
			continue
		}
		b, err := os.ReadFile(filepath.Join(planDir, p.Models[i].Path))
		if err != nil {
			t.Fatal(err)
		}
		p.Models[i].Path = filepath.Join(dir, "tiny.gguf")
		if err := os.WriteFile(p.Models[i].Path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tiny.gguf")
}

// replaceWith puts another file's bytes at path (a new file renamed over it).
func replaceWith(t *testing.T, path, from string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Error(err)
		return
	}
	if err := os.WriteFile(path+".new", b, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Error(err)
	}
}

// A model replaced between two legs: the next leg of it is not started, the run halts with
// model:changed naming what moved, and the study is not complete.
func TestModelReplacedBetweenLegsHaltsBeforeTheLeg(t *testing.T) {
	var tiny string
	h := newHarness(t, func(p *study.Plan) { tiny = copiedModels(t, p) })
	e := h.engine()
	on := e.OnEvent
	e.OnEvent = func(ev study.Event) {
		on(ev)
		if ev.Kind == study.EventLegFinished && ev.Leg == "tiny/d0" {
			replaceWith(t, tiny, filepath.Join(planDir, "../../../testdata/models/tiny-moe-f32.gguf"))
		}
	}
	sum, err := e.Run(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Halted || !strings.Contains(sum.Reason, "model tiny: "+tiny+" changed since this run read it") ||
		!strings.Contains(sum.Reason, "(another file)") || !strings.Contains(sum.Reason, "put the registered file back") {
		t.Fatalf("summary %+v", sum)
	}
	if slices.Contains(h.bench.ran, "tiny/d128") {
		t.Errorf("the leg of the replaced model ran: %q", h.bench.ran)
	}
	if st := h.rec.studies[h.id].Status; st == study.StatusComplete {
		t.Errorf("status %s", st)
	}
	if h.journalCount("study.halted") != 1 {
		t.Errorf("journal %q", h.rec.journal)
	}
}

// A model replaced while its leg runs: the leg's rows are flagged (model:changed), the run
// halts after it.
func TestModelReplacedDuringALegFlagsIt(t *testing.T) {
	var tiny string
	h := newHarness(t, func(p *study.Plan) { tiny = copiedModels(t, p) })
	h.bench.onLeg = func(id string) {
		if id == "tiny/d128" {
			replaceWith(t, tiny, filepath.Join(planDir, "../../../testdata/models/tiny-moe-f32.gguf"))
		}
	}
	sum, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Halted || !strings.Contains(sum.Reason, "model tiny:") {
		t.Fatalf("summary %+v", sum)
	}
	tr := h.trail()
	if !slices.Contains(tr, "finished tiny/d128 flagged") || slices.Contains(h.bench.ran, "tiny/d256") {
		t.Errorf("trail %q, ran %q", tr, h.bench.ran)
	}
}

// What llama-bench reports decides too: a row whose model_size is not the registered file's
// tensor bytes, or whose model_type differs from the first leg's, flags the leg.
func TestModelGateReadsTheRows(t *testing.T) {
	const size = 658176
	for _, tc := range []struct {
		name      string
		rows      []benchfmt.Result
		changed   bool
		firstType string
	}{
		{"the registered size", []benchfmt.Result{{ModelFilename: "/m/a.gguf", ModelSize: size, ModelType: "llama ?B all F32"}}, false, "llama ?B all F32"},
		{"another size", []benchfmt.Result{{ModelFilename: "/m/a.gguf", ModelSize: size + 1}}, true, ""},
		{"another type than the first leg", []benchfmt.Result{{ModelFilename: "/m/a.gguf", ModelSize: size, ModelType: "llama ?B Q4_0"}}, true, "llama ?B all F32"},
		{"no size reported (md output)", []benchfmt.Result{{ModelFilename: "/m/a.gguf"}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newMemRecorder()
			r := &run{e: &Engine{Rec: rec}, l: &study.Loaded{Legs: []study.LegPlan{{ID: "a/d0", Models: []string{"a"}}}}}
			f := &modelFile{id: "a", path: "/m/a.gguf", tensorBytes: size}
			if tc.changed && tc.firstType != "" {
				f.modelType = tc.firstType
			}
			r.files = map[string]*modelFile{"a": f}
			res := &runner.LegResult{}
			status := []string{}
			for _, row := range tc.rows {
				res.Rows = append(res.Rows, runner.Row{Sample: runner.Sample{Result: row}, Status: runner.RowResult})
				status = append(status, string(runner.RowResult))
			}
			end := &study.LegEnd{Class: string(runner.ClassOK), RowStatus: status}
			if err := r.modelGate(context.Background(), res, study.LegStart{Role: study.RoleLeg, PlanLeg: "a/d0"}, 1, end); err != nil {
				t.Fatal(err)
			}
			flagged := end.Class == string(runner.ClassFlagged) && strings.HasPrefix(end.Reason, study.CodeModelChanged) &&
				end.RowStatus[0] == string(runner.RowFlagged) && r.modelHalted != nil
			if flagged != tc.changed {
				t.Errorf("flagged %v, want %v: %+v", flagged, tc.changed, end)
			}
			if !tc.changed && f.modelType != tc.firstType {
				t.Errorf("first type kept %q, want %q", f.modelType, tc.firstType)
			}
		})
	}
	if d := hashing.Diff(hashing.Key{Size: 1}, hashing.Key{Size: 1}); d != "" {
		t.Errorf("same key differs: %q", d)
	}
}
