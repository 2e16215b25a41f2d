package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/llamatest"
)

// A plan whose CV gate counts (gates.on_cv "count") completes on the real llama-bench under a
// gate every real process is above (CV 0.0001%): each leg ends ok, every row is a result, and
// show (text and --json) and the receipt list each cell counted with its flag, re-derived from
// the rows; the receipt verifies. The same plan with the gate halting (on_cv left out, the
// default) ends incomplete, exit 1, its legs flagged: the rule decides, not the machine.
func TestCVGateCountsWithItsFlagRealBench(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	plan := func(name, onCV string) string {
		gates := `"cv_tg": 0.000001, "cv_pp_depth": 0.000001, "cv_pp_d0": 0.000001`
		if onCV != "" {
			gates += fmt.Sprintf(`, "on_cv": %q`, onCV)
		}
		text := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 32], "n_prompt": [32], "n_gen": [16], "reps": 3, "threads": [1]},
  "split": "per_depth", "retries": 0,
  "gates": {%s}
}`, name, tiny, tinySHA, gates)
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	code, out, errOut := runCLI("study", "run", plan("counts", study.OnCVCount), "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 || !strings.Contains(out, "counted with its flag (gates.on_cv: count); the leg goes on") {
		t.Fatalf("count: exit %d (want 0, every flag counted)\n%s\n%s", code, out, errOut)
	}
	id := registeredID(t, out)
	rep := showJSON(t, id, nb)
	if rep.Study.Status != study.StatusComplete {
		t.Fatalf("count: status %s", rep.Study.Status)
	}
	for _, l := range rep.Legs {
		if l.Role == study.RoleLeg && (l.Class != "ok" || l.Results != l.Rows || l.Flagged != 0) {
			t.Errorf("count: leg %s class %s, %d results of %d rows, %d flagged", l.Label, l.Class, l.Results, l.Rows, l.Flagged)
		}
		// The leg's end (journaled with leg.finished) says which rows were counted with a flag.
		if l.Role == study.RoleLeg && !strings.Contains(l.Reason, "counted with a CV flag: ") {
			t.Errorf("count: leg %s ended without saying its rows were flagged: %q", l.Label, l.Reason)
		}
	}
	// The list is the rule applied to the stored rows: each cell above its gate, no other.
	var want []string
	for _, c := range rep.Results {
		if c.Reps >= 2 && c.CV > 0.000001 {
			want = append(want, fmt.Sprintf("%s %s at depth %d (%s): CV %.1f%%", c.Model, c.Test, c.Depth, c.Source, 100*c.CV))
		}
	}
	if len(want) == 0 || len(rep.Results) != 4 {
		t.Fatalf("count: %d result cells, %d above the gate: %+v", len(rep.Results), len(want), rep.Results)
	}
	if len(rep.CountedFlags) != len(want) {
		t.Fatalf("count: show lists %d counted flags, the rows have %d:\n%s", len(rep.CountedFlags), len(want), strings.Join(rep.CountedFlags, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(rep.CountedFlags[i], w) {
			t.Errorf("count: flag %d is %q, want %q…", i, rep.CountedFlags[i], w)
		}
	}
	code, text, _ := runCLI("study", "show", id, "--notebook", nb)
	if code != 0 || !strings.Contains(text, "counted with a CV flag (the plan's gates.on_cv is count") || !strings.Contains(text, rep.CountedFlags[0]) {
		t.Errorf("count: show text does not list the counted flags:\n%s", text)
	}
	rdir := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", id, "--out", rdir, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(rdir, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "flagged and counted with its flag") || !strings.Contains(string(md), "- Counted with a CV flag: "+rep.CountedFlags[0]+".") {
		t.Errorf("the receipt does not say the flags were counted:\n%s", md)
	}
	if code, out, errOut := runCLI("verify", rdir); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	// The model's header fields survive the fresh hash the run made before its first leg.
	if !strings.Contains(string(md), " · `llama ") {
		t.Errorf("the receipt's model line lost its architecture and quant:\n%s", md)
	}

	code, out, errOut = runCLI("study", "run", plan("halts", ""), "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 1 || !strings.Contains(out+errOut, "incomplete") {
		t.Fatalf("halt: exit %d (want 1, incomplete)\n%s\n%s", code, out, errOut)
	}
	rep = showJSON(t, registeredID(t, out), nb)
	if rep.Study.Status != study.StatusIncomplete || len(rep.CountedFlags) != 0 {
		t.Fatalf("halt: status %s, counted flags %v", rep.Study.Status, rep.CountedFlags)
	}
	flagged := 0
	for _, l := range rep.Legs {
		if l.Class == "flagged" {
			flagged++
		}
	}
	if flagged == 0 {
		t.Errorf("halt: no leg flagged: %+v", rep.Legs)
	}
	// show's text and the receipt say why each flagged leg ended (the gate and its figures),
	// as --json does; the receipt verifies.
	hid := fmt.Sprint(rep.Study.ID)
	code, text, _ = runCLI("study", "show", hid, "--notebook", nb)
	if code != 0 || !strings.Contains(text, "why legs ended otherwise than ok") || !strings.Contains(text, "% gate (avg ") {
		t.Errorf("halt: show text does not say why the legs ended:\n%s", text)
	}
	hdir := filepath.Join(dir, "receipt-halt")
	if code, out, errOut := runCLI("receipt", hid, "--out", hdir, "--notebook", nb); code != 0 {
		t.Fatalf("halt receipt: %d %s %s", code, out, errOut)
	}
	md, err = os.ReadFile(filepath.Join(hdir, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Why legs ended otherwise than ok:") || !strings.Contains(string(md), ": `flagged`: ") {
		t.Errorf("halt: the receipt does not say why the legs ended:\n%s", md)
	}
	if code, out, errOut := runCLI("verify", hdir); code != 0 {
		t.Fatalf("halt verify: %d %s %s", code, out, errOut)
	}
}
