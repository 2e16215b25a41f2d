package overview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/store"
)

// The benchmark notebook: 1,000 throughput studies of 4 legs (depths 0, 2048, 4096, 8192),
// 250 llama-bench rows per leg (5 ubatch values × 25 pp and 25 tg lengths), 1,000,000 rows in
// all, over 10 model files; written through the store's normal API (StudyRecorder.Register,
// StartLeg, the leg's row sink, FinishLeg with every row's status).
const (
	benchStudies   = 1000
	benchLegRows   = 250
	benchModels    = 10
	benchDepthsLen = 4
)

var benchDepths = [benchDepthsLen]int64{0, 2048, 4096, 8192}

// BenchmarkOverviewOpen1000Studies1MRows times Service.Open on that notebook: "cold" with a
// new Service each time reading every study's rows (Options.FromRows, as the receipt does),
// "cold-summaries" a new Service reading the stored summaries Summarize wrote, "warm" the
// window's reopening (one Service, nothing changed since). The notebook is built once per benchmark run in a
// temporary folder, removed at the end (generation takes minutes on a busy machine).
func BenchmarkOverviewOpen1000Studies1MRows(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "notebook.db")
	start := time.Now()
	buildBenchNotebook(b, path)
	b.Logf("notebook of %d studies, %d rows built in %s", benchStudies, benchStudies*benchDepthsLen*benchLegRows, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	summarizeBenchNotebook(b, path)
	b.Logf("summaries of %d studies written (overview.Summarize, as a run does at the study's end) in %s", benchStudies, time.Since(start).Round(time.Millisecond))
	nb, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	opts := Options{Line: 60, Test: "tg128", Deep: 8192}
	rowsOpts := opts
	rowsOpts.FromRows = true
	check := func(b *testing.B, ov *Overview) {
		if len(ov.Studies) != benchStudies || len(ov.Badges.Rows) != benchModels*5 || len(ov.Ladder.Constants) != 1 || ov.Ladder.Constants[0].N != benchModels*5 {
			b.Fatalf("overview: %d studies, %d badge rows, %d constants", len(ov.Studies), len(ov.Badges.Rows), len(ov.Ladder.Constants))
		}
	}
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := New(Notebook(nb))
			s.ReadHeader = benchHeader
			ov, err := s.Open(ctx, rowsOpts)
			if err != nil {
				b.Fatal(err)
			}
			check(b, ov)
		}
	})
	b.Run("cold-4-readers", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := New(Notebook(nb))
			s.ReadHeader, s.Readers = benchHeader, 4
			ov, err := s.Open(ctx, rowsOpts)
			if err != nil {
				b.Fatal(err)
			}
			check(b, ov)
		}
	})
	b.Run("cold-summaries", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := New(Notebook(nb))
			s.ReadHeader = benchHeader
			ov, err := s.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			check(b, ov)
		}
	})
	b.Run("warm", func(b *testing.B) {
		s := New(Notebook(nb))
		s.ReadHeader = benchHeader
		if _, err := s.Open(ctx, opts); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ov, err := s.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			check(b, ov)
		}
	})
}

func benchHeader(string) (*gguf.File, error) { return fakeHeader("llama", "MOSTLY_Q4_K_M"), nil }

func buildBenchNotebook(b testing.TB, path string) {
	b.Helper()
	nb, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	addBenchStudies(b, nb, benchStudies)
}

// summarizeBenchNotebook writes each study's overview summary as a run does when it ends.
func summarizeBenchNotebook(b testing.TB, path string) {
	b.Helper()
	nb, err := store.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	for id := int64(1); id <= benchStudies; id++ {
		if err := Summarize(context.Background(), nb, id); err != nil {
			b.Fatal(err)
		}
	}
}

// addBenchStudies writes n synthetic studies into nb.
func addBenchStudies(b testing.TB, nb *store.Notebook, n int) { addBenchStudiesFrom(b, nb, 0, n) }

// addBenchStudiesFrom adds studies "bench FROM" to "bench FROM+n-1" (a plan registered again
// is the study it already is, so a later call starts where the last one ended).
func addBenchStudiesFrom(b testing.TB, nb *store.Notebook, from, n int) {
	ctx := context.Background()
	rec := store.StudyRecorder{N: nb}
	tmpl := benchTemplate(b)
	statuses := make([]string, benchLegRows)
	for i := range statuses {
		statuses[i] = "result"
	}
	rows := make([]benchfmt.Result, benchLegRows)
	for s := from; s < from+n; s++ {
		model := s % benchModels
		sha := fmt.Sprintf("%064x", model+1)
		plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": "bench %d",
  "models": [{"id": "m%d", "path": "m%d.gguf", "sha256": %q}],
  "axes": {"depths": [0, 2048, 4096, 8192], "n_prompt": [512], "n_gen": [128], "reps": 5, "threads": [8]},
  "split": "per_depth", "bandwidth": {"gbs": 100}}`, s, model, model, sha)
		p, err := study.Decode("bench plan", []byte(plan))
		if err != nil {
			b.Fatal(err)
		}
		p.Defaults()
		sum, canonical, err := p.SHA256()
		if err != nil {
			b.Fatal(err)
		}
		id, _, err := rec.Register(ctx, study.NewStudy{Name: fmt.Sprintf("bench %d", s), PlanJSON: canonical, PlanSHA256: sum,
			PlanDir: "/nonexistent", PlanFile: "plan.json"})
		if err != nil {
			b.Fatal(err)
		}
		for d, depth := range benchDepths {
			label := fmt.Sprintf("m%d/d%d", model, depth)
			leg, sink, err := rec.StartLeg(ctx, study.LegStart{StudyID: id, Label: label, Kind: "bench", PlanLeg: label, Role: study.RoleLeg, Attempt: 1})
			if err != nil {
				b.Fatal(err)
			}
			for i := range rows {
				rows[i] = benchRow(tmpl, s, d, i)
			}
			if err := sink.AddBench(rows...); err != nil {
				b.Fatal(err)
			}
			if err := rec.FinishLeg(ctx, leg, study.LegEnd{Class: "ok", RowStatus: statuses}); err != nil {
				b.Fatal(err)
			}
		}
		if err := rec.SetStatus(ctx, id, study.StatusComplete); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTemplate is a complete llama-bench row (every field) from the runner's test data.
func benchTemplate(b testing.TB) benchfmt.Result {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "runner", "benchfmt", "testdata", "tput-t2.stdout"))
	if err != nil {
		b.Fatal(err)
	}
	for i, c := range data {
		if c == '\n' {
			data = data[:i]
			break
		}
	}
	r, err := benchfmt.ParseJSONLLine(data)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchRow is row i of a leg: ubatch 128 << (i/50), then 25 pp lengths and 25 tg lengths
// (tg128 among them), t/s falling with depth.
func benchRow(tmpl benchfmt.Result, study, depth, i int) benchfmt.Result {
	r := tmpl
	r.NUbatch = 128 << (i / 50)
	r.NDepth = benchDepths[depth]
	k := int64(i%50%25+1) * 16
	if i%50 < 25 {
		r.NPrompt, r.NGen = k*4, 0
	} else {
		r.NPrompt, r.NGen = 0, k
	}
	r.AvgTs = float64(100-10*depth) + float64(study%7)
	r.StddevTs = r.AvgTs / 100
	r.SamplesTs = []float64{r.AvgTs * 0.99, r.AvgTs * 1.01, r.AvgTs, r.AvgTs * 0.995, r.AvgTs * 1.005}
	return r
}
