package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/runner/sharedtest"
)

// sharedWild is the shared reference folder of published outputs (../shared/wild beside the
// checkout, or $SPARKBENCH_SHARED/wild), read in place: required under make test
// (sharedtest.Dir; CI has the folder, so a missing one is a broken checkout, not a pass).
func sharedWild(t *testing.T) string {
	t.Helper()
	return sharedtest.Dir(t, "wild")
}

// TestImportReportKeepsItsBatchedTables: the published report with llama-bench and
// llama-batched-bench tables imports both: its 60 llama-bench rows and the 108 rows of its 6
// batched-bench tables (18 each, counted in the file), each batched row with its section's
// heading (the model) and settings line, in one leg whose digest covers both; nothing dropped.
func TestImportReportKeepsItsBatchedTables(t *testing.T) {
	name := filepath.Join(sharedWild(t), "doc-bench-cuda-gb10-dgxspark-full-report-b7941-2026.md")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseImport(name, data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Format != "md" || len(p.Bench) != 60 || len(p.Batched) != 108 {
		t.Fatalf("format %s, %d llama-bench rows, %d batched-bench rows; want md, 60 and 108", p.Format, len(p.Bench), len(p.Batched))
	}
	var headings []string
	for _, r := range p.Batched {
		h := r.Extra["md_heading"]
		if len(headings) == 0 || headings[len(headings)-1] != h {
			headings = append(headings, h)
		}
		if r.NKVMax == nil || *r.NKVMax != 270336 || r.NThreads == nil || *r.NThreads != 20 {
			t.Errorf("line %d: settings %+v, want the section's main: line", r.Line, r.BatchedSettings)
		}
	}
	if len(headings) != 6 || headings[0] != "ggml-org/gpt-oss-20b-GGUF" || headings[1] != "ggml-org/gpt-oss-120b-GGUF" || slices.Contains(headings, "") {
		t.Errorf("sections %q: want the 6 model headings, in order", headings)
	}
	first := p.Batched[0]
	if first.Line != 36 || first.PP != 512 || first.TG != 32 || first.B != 1 || first.STG != 80.13 || first.S != 812.60 {
		t.Errorf("first batched row %+v, want line 36: 512 32 1 … 80.13 … 812.60", first)
	}

	n, _ := openTemp(t)
	res, err := n.ImportBenchOutput(ctx, ImportRequest{Study: "report", Files: []ImportFile{{Name: name, Data: data}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Rows != 168 || r.Batched != 108 || len(r.BatchedTests) == 0 || !strings.HasPrefix(r.BatchedTests[0], "pp512+tg32 B=1,2,4,8,16,32") {
		t.Errorf("import result %+v", r)
	}
	stored, err := n.BatchedRows(ctx, r.LegID)
	if err != nil || len(stored) != 108 || stored[0].Extra["md_heading"] != "ggml-org/gpt-oss-20b-GGUF" {
		t.Fatalf("stored batched rows: %d (%v)", len(stored), err)
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("notebook verify: %+v %v", rep, err)
	}
}
