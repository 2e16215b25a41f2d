package workbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReceiptBatchedNeedsCapacityRun: --batched is for a capacity run folder; for a notebook
// study (whose run folder already holds batched/CAND.txt) it is refused before anything is
// read, and a bad batched file for a run folder is a RequestError with nothing written.
func TestReceiptBatchedNeedsCapacityRun(t *testing.T) {
	dir := t.TempDir()
	req := ReceiptRequest{Study: "1", Out: filepath.Join(dir, "r"), Batched: map[string]string{"a": "b.md"}}
	err := req.Check()
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "--batched applies to --capacity-run only") {
		t.Errorf("%v; want a RequestError for --batched without --capacity-run", err)
	}
	junk := filepath.Join(dir, "junk.md")
	if err := os.WriteFile(junk, []byte("no table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bundle")
	req = ReceiptRequest{CapacityRun: filepath.Join("..", "capacity", "testdata", "seed"), Out: out, Batched: map[string]string{"q8-generic": junk}}
	_, err = ExportReceipt(context.Background(), nil, req)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "--batched q8-generic: batched/q8-generic.txt:1: no llama-batched-bench table") {
		t.Errorf("a bad batched file: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a bundle was written for a refused batched file")
	}
}
