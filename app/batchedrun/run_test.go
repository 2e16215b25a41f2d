package batchedrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
		OnRetry: func(line string) { t.Log(line); seen = nil }, // the tool lost rows at exit: the next leg's count
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

// A run that ends without all its rows (llama-batched-bench loses its last lines at exit now
// and then) runs again as a leg of its own, and the notebook's rows are the complete leg's: a
// fake tool prints one of its two rows the first time, both the second.
func TestRunRetriesALegThatLostRows(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	row := func(b int) string { // consistent figures: n_kv = B(PP+TG), S_PP = B·PP/T_PP, …
		tpp, ttg := 0.002*float64(b), 0.001*float64(b)
		return fmt.Sprintf(`{"n_kv_max": 512, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1, "is_pp_shared": 0, "n_gpu_layers": -1, "n_threads": 1, "n_threads_batch": 1, "pp": 16, "tg": 8, "pl": %d, "n_kv": %d, "t_pp": %g, "speed_pp": %g, "t_tg": %g, "speed_tg": %g, "t": %g, "speed": %g}`,
			b, 24*b, tpp, float64(16*b)/tpp, ttg, float64(8*b)/ttg, tpp+ttg, float64(24*b)/(tpp+ttg))
	}
	count := filepath.Join(dir, "runs")
	tool := filepath.Join(dir, "llama-batched-bench")
	script := "#!/bin/sh\ncase \"$1\" in --version|--list-devices) echo 'version: 1 (fake)'; exit 0;; esac\n" +
		"echo x >> " + count + "\n" +
		"echo '" + row(1) + "'\n" +
		"if [ $(wc -l < " + count + ") -ge 2 ]; then echo '" + row(2) + "'; fi\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	nb, err := store.Open(filepath.Join(dir, "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var retries []string
	res, err := Run(context.Background(), Request{Notebook: nb, Tool: tool, Study: "engine", Label: "fake",
		Args:    []string{"-m", model, "-npp", "16", "-ntg", "8", "-npl", "1,2"},
		Limits:  runner.Limits{Start: time.Minute, Idle: time.Minute, Total: time.Minute},
		OnRetry: func(line string) { retries = append(retries, line) }})
	if err != nil || res.Attempts != 2 || res.Leg.Exit.Class != runner.ClassOK || res.Stored != 2 || len(retries) != 1 || !strings.HasPrefix(retries[0], "fake#2: again (attempt 2 of 3)") {
		t.Fatalf("res %+v, exit %+v, retries %q, %v\n%s", res, res.Leg.Exit, retries, err, res.Leg.Transcript.Bytes())
	}
	rows, err := nb.BatchedRowsFor(context.Background(), store.BatchedQuery{StudyID: res.StudyID})
	if err != nil || len(rows) != 2 || rows[0].LegID != res.LegID {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	all, err := nb.BatchedRowsFor(context.Background(), store.BatchedQuery{StudyID: res.StudyID, AllLegs: true})
	if err != nil || len(all) != 3 || all[0].LegClass != string(runner.ClassIncomplete) {
		t.Fatalf("every leg's rows %+v, %v", all, err)
	}
}
