package batchedrun

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// Run from Go with the real tool (-t 1, B in 1,2): the caller sees every row as an event, the
// notebook holds the same rows under the model's SHA-256 (what BatchedRowsFor finds a model
// by), and a study of another kind is refused before anything runs.
func TestRunRealBinary(t *testing.T) {
	tool := llamatest.BatchedBench(t)
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	nb, err := store.Open(filepath.Join(t.TempDir(), "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seen []runner.BatchedSample
	res, err := Run(ctx, Request{Notebook: nb, Tool: tool, Study: "engine",
		Args:   []string{"-m", model, "-t", llamatest.Threads, "-npp", "16", "-ntg", "4", "-npl", "1,2", "-c", "256"},
		Limits: runner.Limits{Start: time.Minute, Idle: time.Minute, Total: 2 * time.Minute},
		OnEvent: func(ev runner.Event) {
			if ev.Batched != nil {
				seen = append(seen, *ev.Batched)
			}
		},
	})
	if err != nil || res.Leg.Exit.Class != runner.ClassOK || res.Stored != 2 || len(seen) != 2 || len(res.Model.SHA256) != 64 {
		exit, transcript := runner.Exit{}, ""
		if res.Leg != nil {
			exit = res.Leg.Exit
			if res.Leg.Transcript != nil {
				transcript = string(res.Leg.Transcript.Bytes())
			}
		}
		t.Fatalf("run: %+v, exit %+v, %d events, %v\ntranscript:\n%s", res, exit, len(seen), err, transcript)
	}
	rows, err := nb.BatchedRowsFor(ctx, store.BatchedQuery{Model: res.Model.SHA256, StudyID: res.StudyID})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		if r.BatchedResult.S != seen[i].Result.S || r.STG != seen[i].Result.STG || r.B != int64(i+1) || r.LegID != res.LegID {
			t.Errorf("row %d stored %+v, seen %+v", i, r.BatchedResult, seen[i].Result)
		}
	}
	if _, err := nb.CreateStudy(ctx, store.Study{Name: "cap", Kind: store.StudyCapacity, Status: store.StatusRegistered}); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, Request{Notebook: nb, Tool: tool, Study: "cap", Args: []string{"-m", model, "-t", llamatest.Threads}})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("a capacity study was accepted: %v", err)
	}
}
