package workbench

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"sparkbench/app/overview"
	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// rowsCounter is the notebook's overview Source, its stored summaries included, counting the
// studies whose rows were read.
type rowsCounter struct {
	overview.Source
	sums overview.SummaryStore
	rows atomic.Int64
}

func (c *rowsCounter) Rows(ctx context.Context, id int64) ([]study.StoredRow, error) {
	c.rows.Add(1)
	return c.Source.Rows(ctx, id)
}

func (c *rowsCounter) Summaries(ctx context.Context) (map[int64][]store.Summary, error) {
	return c.sums.Summaries(ctx)
}

func (c *rowsCounter) PutSummaries(ctx context.Context, b map[int64]store.Summary) error {
	return c.sums.PutSummaries(ctx, b)
}

func (c *rowsCounter) Writable() bool { return c.sums.Writable() }

func countRows(nb *store.Notebook) *rowsCounter {
	src := overview.Notebook(nb)
	return &rowsCounter{Source: src, sums: src.(overview.SummaryStore)}
}

// TestStudyEndWritesOverviewSummary: a throughput study run end to end (the tiny model) ends
// with its overview summary in the notebook at the study's current version; a new overview
// Service then reads no row, and the overview receipt is still computed from the rows
// (ExportOverview reads them) into the same tables.
func TestStudyEndWritesOverviewSummary(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb, err := store.Open(filepath.Join(dir, "nb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	plan := []byte(fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": "summary",
  "models": [{"id": "tiny", "path": %q, "sha256": "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda"}],
  "axes": {"depths": [0, 16], "n_prompt": [16], "n_gen": [8], "reps": 2, "threads": [1]},
  "split": "per_depth", "bandwidth": {"gbs": 100}, "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}}`, tiny))
	ctx := context.Background()
	reg, err := RegisterThroughput(ctx, nb, ThroughputRegisterRequest{Data: plan, File: "summary.json", LlamaDir: loc.Dir, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunThroughput(ctx, nb, ThroughputRunRequest{ID: reg.StudyID, LlamaDir: loc.Dir}); err != nil {
		t.Fatal(err)
	}
	refs, err := overview.Notebook(nb).ThroughputStudies(ctx)
	if err != nil || len(refs) != 1 {
		t.Fatalf("studies %+v %v", refs, err)
	}
	sums, err := nb.StudySummaries(ctx, overview.SummaryKind)
	if err != nil {
		t.Fatal(err)
	}
	if s := sums[reg.StudyID]; len(s) != 1 || s[0].Version != refs[0].Version || len(s[0].Payload) == 0 {
		t.Fatalf("after the run: summaries %+v, want one at version %q", s, refs[0].Version)
	}
	opts := overview.Options{Line: 10, Test: "tg8", Deep: 16}
	src := countRows(nb)
	ov, err := overview.New(src).Open(ctx, opts)
	if err != nil || src.rows.Load() != 0 || ov.Studies[0].Series == 0 {
		t.Fatalf("overview from the summary read %d studies' rows: %+v %v", src.rows.Load(), ov, err)
	}
	rec, _, err := ExportOverview(ctx, overview.New(src), opts, "test machine", filepath.Join(dir, "receipt"))
	if err != nil {
		t.Fatal(err)
	}
	if src.rows.Load() != 1 {
		t.Errorf("the overview receipt read %d studies' rows, want 1: a receipt is computed from the rows", src.rows.Load())
	}
	rec.Overview.Options.FromRows = false
	if !reflect.DeepEqual(rec.Overview, ov) {
		t.Errorf("the receipt's overview differs from the summary's")
	}
}
