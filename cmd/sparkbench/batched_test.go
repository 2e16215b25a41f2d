package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/app/batchedrun"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// `sparkbench batched run` with the real llama-batched-bench on the tiny model (-t 1, B in
// 1,2,4): exit 0, one printed line per row, and the notebook holds exactly what the tool
// printed: the stored rows equal the jsonl rows of the stored transcript (read with
// encoding/json), under the model's path and SHA-256, in a leg of kind batched that verifies.
func TestBatchedRunRealBinary(t *testing.T) {
	tool := llamatest.BatchedBench(t)
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	nb := filepath.Join(t.TempDir(), "notebook.db")
	code, out, errOut := runCLIWithin(t, 2*time.Minute, "batched", "run", "--notebook", nb, "--llama-dir", filepath.Dir(tool), "--",
		"-m", model, "-t", llamatest.Threads, "-npp", "32", "-ntg", "8", "-npl", "1,2,4", "-c", "512")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// llama-batched-bench loses its last rows at exit now and then; such an attempt runs again
	// as a leg of its own, said on stderr, and its rows stay printed above the final attempt's.
	retries := strings.Count(errOut, ": again (attempt ")
	summary := regexp.MustCompile(`(?m)^batched class=ok rows=3/3 duration=\S+ leg=(\d+) study="batched-bench"$`).FindStringSubmatch(out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if summary == nil || len(lines) < 4 || lines[len(lines)-1] != summary[0] || retries >= batchedrun.Attempts || (retries == 0) != (len(lines) == 4) {
		t.Fatalf("output:\n%s\nstderr:\n%s", out, errOut)
	}
	for _, l := range lines[:len(lines)-4] {
		if !strings.HasPrefix(l, "pp32+tg8 B") {
			t.Fatalf("line %q of an earlier attempt is not a row\noutput:\n%s\nstderr:\n%s", l, out, errOut)
		}
	}
	legID, _ := strconv.ParseInt(summary[1], 10, 64)
	if legID != int64(retries+1) {
		t.Fatalf("leg %d after %d retries\nstderr:\n%s", legID, retries, errOut)
	}
	lines = lines[len(lines)-4:]

	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	leg, err := n.Leg(ctx, legID)
	if err != nil || leg.Kind != store.LegKindBatched || leg.Class != "ok" || leg.State != store.LegFinished || leg.BuildID == 0 || leg.MachineID == 0 {
		t.Fatalf("leg %+v %v", leg, err)
	}
	rows, err := n.BatchedRows(ctx, legID)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	tr, err := n.Transcript(ctx, legID)
	if err != nil {
		t.Fatal(err)
	}
	var printed []map[string]json.Number
	for _, l := range strings.Split(string(tr), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			var m map[string]json.Number
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("transcript line %q: %v", l, err)
			}
			printed = append(printed, m)
		}
	}
	if len(printed) != 3 {
		t.Fatalf("the transcript holds %d jsonl rows:\n%s", len(printed), tr)
	}
	for i, r := range rows {
		p := printed[i]
		for k, got := range map[string]int64{"pp": r.PP, "tg": r.TG, "pl": r.B, "n_kv": r.NKV, "n_threads": *r.NThreads,
			"n_kv_max": *r.NKVMax, "n_batch": *r.NBatch, "n_ubatch": *r.NUbatch, "flash_attn": *r.FlashAttn} {
			if want, _ := p[k].Int64(); got != want {
				t.Errorf("row %d %s: stored %d, printed %d", i, k, got, want)
			}
		}
		for k, got := range map[string]float64{"t_pp": r.TPP, "speed_pp": r.SPP, "t_tg": r.TTG, "speed_tg": r.STG, "t": r.T, "speed": r.S} {
			if want, _ := p[k].Float64(); got != want {
				t.Errorf("row %d %s: stored %v, printed %v", i, k, got, want)
			}
		}
		if r.Model.Filename != model || len(r.Model.SHA256) != 64 || r.B != []int64{1, 2, 4}[i] {
			t.Errorf("row %d: model %+v, B %d", i, r.Model, r.B)
		}
		if !strings.HasPrefix(lines[i], r.Label()) || !strings.Contains(lines[i], strconv.FormatFloat(r.S, 'f', 2, 64)+" t/s") {
			t.Errorf("printed line %q for row %+v", lines[i], r.BatchedResult)
		}
	}
	byModel, err := n.BatchedRowsFor(ctx, store.BatchedQuery{Model: rows[0].Model.SHA256})
	if err != nil || len(byModel) != 3 {
		t.Errorf("rows by the model's SHA-256: %d, %v", len(byModel), err)
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Errorf("verify: %+v %v", rep.Broken, err)
	}
}

// A run the tool aborts (B=64 cannot be split into this build's batch: SIGABRT after the rows
// for B=1 and 2) exits 1; its rows are kept for the record in a crashed leg, and the default
// query (rows that count) leaves them out.
func TestBatchedRunRealCrash(t *testing.T) {
	tool := llamatest.BatchedBench(t)
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	nb := filepath.Join(t.TempDir(), "notebook.db")
	code, out, errOut := runCLIWithin(t, 2*time.Minute, "batched", "run", "--notebook", nb, "--llama-dir", filepath.Dir(tool), "--",
		"-m", model, "-t", llamatest.Threads, "-npp", "32", "-ntg", "8", "-npl", "1,2,64", "-c", "512")
	if code != 1 || !strings.Contains(out, "batched class=crashed rows=2/3") || !strings.Contains(out, "SIGABRT") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	all, err := n.BatchedRowsFor(ctx, store.BatchedQuery{Model: model, AllLegs: true})
	if err != nil || len(all) != 2 || all[0].LegClass != "crashed" {
		t.Fatalf("all rows: %+v %v", all, err)
	}
	if counted, err := n.BatchedRowsFor(ctx, store.BatchedQuery{Model: model}); err != nil || len(counted) != 0 {
		t.Errorf("rows of a crashed leg counted: %d %v", len(counted), err)
	}
}

// Bad input is refused with what to do, exit 2, and nothing is written (the notebook is not
// even created): a missing model, no model, a format the runner cannot read, text before --,
// and a folder without llama-batched-bench (named with the installer command).
func TestBatchedRunRefusals(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "m.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	stub := stubLlamaDir(t)
	nb := filepath.Join(tmp, "notebook.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "-m", filepath.Join(tmp, "none.gguf"), "-t", "1"}, "none.gguf: no such file or directory; pass the path of a GGUF file with -m; nothing was run or recorded"},
		{[]string{"--", "-t", "1", "-npl", "1"}, "no model: pass llama-batched-bench's -m MODEL.gguf"},
		{[]string{"--", "-m", model, "--output-format", "md"}, "--output-format md: sparkbench reads jsonl (it adds it itself); drop the flag"},
		{[]string{"--", "-m", model, "--log-jsonl"}, "--log-jsonl is not allowed"},
		{[]string{"extra", "--", "-m", model}, `unexpected "extra" before --`},
		{[]string{"--study", "s"}, "put llama-batched-bench's arguments after --"},
		{[]string{"--"}, "no llama-batched-bench arguments after --"},
		{[]string{"--llama-dir", stub, "--", "-m", model, "-t", "1"}, "has no executable llama-batched-bench; install a prefix that includes it with: make llama"},
	} {
		code, out, errOut := runCLI(append([]string{"batched", "run", "--notebook", nb}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
		if _, err := os.Stat(nb); err == nil {
			t.Fatalf("%v: the notebook was created", c.args)
		}
	}
	if code, _, errOut := runCLI("batched", "rn"); code != 2 || !strings.Contains(errOut, `did you mean "run"?`) {
		t.Errorf("unknown verb: exit %d, %q", code, errOut)
	}
}
