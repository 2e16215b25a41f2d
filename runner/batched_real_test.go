package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamatest"
)

// transcriptBatchedRows reads the jsonl rows out of the verbatim pty bytes with encoding/json,
// independently of benchfmt's parser.
func transcriptBatchedRows(t *testing.T, tr *Transcript) []map[string]json.Number {
	t.Helper()
	var out []map[string]json.Number
	for _, l := range strings.Split(string(tr.Bytes()), "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(l, "\r"))
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]json.Number
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// The real llama-batched-bench through the pty runner: class ok, one row per B, each equal to
// what the tool printed (read back from the transcript), the settings on every row, events in
// order, the process group gone.
func TestRealBatchedLeg(t *testing.T) {
	tool := llamatest.BatchedBench(t)
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var evs []Event
	var res *BatchedLegResult
	var leg *BatchedLeg
	// A run that ended incomplete (its last rows lost at exit: seen once in a clean-clone CI
	// run under load, not reproduced in 120 runs here) is run again, at most twice, logged.
	for attempt := 1; attempt <= 3; attempt++ {
		leg = StartBatched(ctx, BatchedSpec{Tool: tool, Args: []string{"-m", model, "-t", llamatest.Threads,
			"-npp", "32", "-ntg", "8", "-npl", "1,2,4", "-c", "512"}, Limits: Limits{Start: time.Minute, Idle: time.Minute, Total: 2 * time.Minute}})
		evs = collect(t, leg.Events(), 2*time.Minute)
		res = leg.Result()
		if res.Exit.Class != ClassIncomplete {
			break
		}
		t.Logf("attempt %d ended incomplete (%s); running it again", attempt, res.Exit.Reason)
	}
	if res.Exit.Class != ClassOK || res.Exit.Rows != 3 || res.Exit.Expected != 3 || res.Exit.Code != 0 {
		t.Fatalf("exit %+v\n%s", res.Exit, res.Transcript.Bytes())
	}
	if got := res.Argv[len(res.Argv)-2:]; got[0] != "--output-format" || got[1] != "jsonl" {
		t.Errorf("argv %v lacks --output-format jsonl", res.Argv)
	}
	printed := transcriptBatchedRows(t, res.Transcript)
	rows := res.Results()
	if len(printed) != 3 || len(rows) != 3 || len(ofType(evs, EventBatched)) != 3 {
		t.Fatalf("%d printed rows, %d results, %d batched events", len(printed), len(rows), len(ofType(evs, EventBatched)))
	}
	for i, r := range rows {
		p := printed[i]
		for k, got := range map[string]int64{"pp": r.PP, "tg": r.TG, "pl": r.B, "n_kv": r.NKV, "n_threads": *r.NThreads, "n_kv_max": *r.NKVMax} {
			if want, _ := p[k].Int64(); got != want {
				t.Errorf("row %d %s: %d, printed %d", i, k, got, want)
			}
		}
		for k, got := range map[string]float64{"t_pp": r.TPP, "speed_pp": r.SPP, "t_tg": r.TTG, "speed_tg": r.STG, "t": r.T, "speed": r.S} {
			if want, _ := p[k].Float64(); got != want {
				t.Errorf("row %d %s: %v, printed %v", i, k, got, want)
			}
		}
		if r.B != []int64{1, 2, 4}[i] || *r.NThreads != 1 {
			t.Errorf("row %d: B %d threads %d", i, r.B, *r.NThreads)
		}
	}
	if last := evs[len(evs)-1]; last.Type != EventExit {
		t.Errorf("last event %s", last.Type)
	}
	if res.Fingerprint == nil || res.Fingerprint.BuildNumber == 0 {
		t.Errorf("no fingerprint of the tool: %+v", res.Fingerprint)
	}
	assertGone(t, leg.Pid())
}

// Failures of the real tool are classified, and their rows never count: a model that is not a
// GGUF file is load_failed; a B whose batch the tool cannot split aborts it (SIGABRT) after
// the rows before it: crashed, those rows discarded. Refused arguments never start it.
func TestRealBatchedFailures(t *testing.T) {
	tool := llamatest.BatchedBench(t)
	model := llamatest.Model(t, "tiny-llama-f16.gguf")
	lim := Limits{Start: time.Minute, Idle: time.Minute, Total: 2 * time.Minute}
	for _, c := range []struct {
		name  string
		args  []string
		class Class
		rows  int
		quote string
	}{
		// llama.cpp's asynchronous log can lose the "invalid magic" line when the tool exits at
		// once (its last line, "unable to load model", then names the class alone)
		{"not a model", []string{"-m", "/etc/hosts", "-t", llamatest.Threads, "-npp", "32", "-ntg", "8", "-npl", "1"}, ClassLoadFailed, 0, "invalid magic|unable to load model"},
		{"abort at B=64", []string{"-m", model, "-t", llamatest.Threads, "-npp", "32", "-ntg", "8", "-npl", "1,2,64", "-c", "512"}, ClassCrashed, 2, "SIGABRT"},
		{"refused format", []string{"-m", model, "--output-format", "md"}, ClassBadArgs, 0, "sparkbench reads jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			leg := StartBatched(ctx, BatchedSpec{Tool: tool, Args: c.args, Limits: lim, NoFingerprint: true})
			collect(t, leg.Events(), 2*time.Minute)
			res := leg.Result()
			quoted := false
			for _, q := range strings.Split(c.quote, "|") {
				quoted = quoted || strings.Contains(res.Exit.Reason, q)
			}
			if res.Exit.Class != c.class || len(res.Rows) != c.rows || len(res.Results()) != 0 || !quoted {
				t.Fatalf("exit %+v, %d rows, %d results; want %s with %d rows quoting %q\n%s", res.Exit, len(res.Rows), len(res.Results()), c.class, c.rows, c.quote, res.Transcript.Bytes())
			}
			for _, r := range res.Rows {
				if r.Status != RowDiscarded {
					t.Errorf("row %s: status %s", r.Sample.Test, r.Status)
				}
			}
			if pid := leg.Pid(); pid > 0 {
				assertGone(t, pid)
			}
		})
	}
}

// The expected row count follows the tool: every (PP, TG, B) of the lists (its defaults where
// a list is not given) whose KV need fits n_kv_max; unknown lists give 0 (no count).
func TestBatchedExpected(t *testing.T) {
	for _, c := range []struct {
		args   []string
		nKVMax int64
		want   int
	}{
		{nil, 0, 36},
		{[]string{"-npp", "32", "-ntg", "8", "-npl", "1,2,4"}, 0, 3},
		{[]string{"-npp", "32", "-ntg", "8", "-npl", "1,2,4"}, 100, 2},
		{[]string{"-npp", "32", "-ntg", "8", "-npl", "1,2,4", "-pps"}, 100, 3},
		{[]string{"-npp", "128,256", "-ntg", "x"}, 0, 0},
	} {
		if got := parseBatchedPlan(c.args).expected(c.nKVMax); got != c.want {
			t.Errorf("%v n_kv_max %d: %d, want %d", c.args, c.nKVMax, got, c.want)
		}
	}
	if _, err := benchfmt.ParseBatchedJSONLLine([]byte(`{}`)); err == nil {
		t.Error("an empty object parsed as a row")
	}
}
