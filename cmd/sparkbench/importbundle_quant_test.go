package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/receipt"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// handLadder records a small ladder in a new notebook by hand, as quantrun journals one (no
// llama.cpp: the records are made up), its files under home: one quantize leg, the build and
// machine, one candidate's record, the rule's choice. A ladder run for real is
// TestImportLadderBundleRealLlamaCpp.
func handLadder(t *testing.T, path, home string) {
	t.Helper()
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	st, err := nb.CreateStudy(ctx, store.Study{Name: "hand ladder", Kind: kinds.Quant, Status: store.StatusRegistered, Description: "made by hand"})
	if err != nil {
		t.Fatal(err)
	}
	plan := map[string]any{"schema": "sparkbench.quant/v1", "name": "hand ladder", "quants": []string{"Q4_0"},
		"reference": map[string]string{"path": home + "/models/ref.gguf", "sha256": strings.Repeat("a", 64)},
		"speed":     map[string]any{"depths": []int{0}}, "rule": map[string]string{"maximize": "tg@0"}}
	pl, err := nb.RegisterPlan(ctx, st.ID, plan)
	if err != nil {
		t.Fatal(err)
	}
	journal := func(kind string, payload map[string]any) {
		t.Helper()
		payload["study"] = st.ID
		if _, err := nb.AppendJournal(ctx, kind, payload, store.ForStudy(st.ID)); err != nil {
			t.Fatal(err)
		}
	}
	journal("quant.started", map[string]any{"plan_sha256": pl.SHA256})
	journal("quant.provenance", map[string]any{"provenance": quant.Provenance{VersionLine: "version: 1 (abc)", Commit: "abc", BuildNumber: 1, Backends: []string{"CPU"}, Machine: "test machine"}})
	l, _, err := nb.StartLeg(ctx, store.LegSpec{StudyID: st.ID, Label: "Q4_0/quantize", Kind: "other", Argv: []string{home + "/llama/llama-quantize", home + "/models/ref.gguf", "Q4_0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := nb.FinishLeg(ctx, l.ID, store.LegOutcome{Class: "ok", Transcript: []byte("quantized\n")}); err != nil {
		t.Fatal(err)
	}
	rec := quant.Record{Type: "Q4_0", Key: strings.Repeat("b", 64), File: home + "/.local/share/sparkbench/quant/q4_0.gguf", SHA256: strings.Repeat("c", 64),
		Bytes: 1 << 20, Bits: 4.5, Quantize: []string{home + "/llama/llama-quantize", "Q4_0"}, PeakRSS: 1 << 22,
		Bench: []quant.BenchCell{{Test: "tg", Depth: 0, Mean: 12.5, SD: 0.25, N: 3, Leg: "Q4_0/bench"}}}
	journal("quant.record", map[string]any{"record": rec})
	journal("quant.assembled", map[string]any{"plan_sha256": pl.SHA256, "selected": "Q4_0"})
	if err := nb.SetStudyStatus(ctx, st.ID, store.StatusComplete); err != nil {
		t.Fatal(err)
	}
}

// handLadderBundle records handLadder in a new notebook (HOME set to a folder of the test) and
// writes its receipt: it returns the test's folder, the home folder, the receipt's folder and
// its files as read back.
func handLadderBundle(t *testing.T) (dir, home, out string, files receipt.Files) {
	t.Helper()
	dir = t.TempDir()
	home = filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	nb := filepath.Join(dir, "origin.db")
	handLadder(t, nb, home)
	out = filepath.Join(dir, "receipt")
	if code, o, e := runCLI("receipt", "1", "--notebook", nb, "--out", out); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, o, e)
	}
	files, err := bundle.ReadDir(out, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return dir, home, out, files
}

// TestLadderBundleCarriesItsJournal: a ladder's receipt carries its journal excerpt (named in
// bundle.json with the study's id), its raw files written with the home folder as ~, and
// verifies; its receipt names the excerpt's ends. Raw files changed and the bundle re-summed
// (study.json, receipt.md and SHA256SUMS made again) no longer hold to the excerpt: verify
// names the file.
func TestLadderBundleCarriesItsJournal(t *testing.T) {
	dir, home, out, files := handLadderBundle(t)
	ix, err := receipt.ReadIndex(files)
	if err != nil || ix.Quant == nil || ix.Quant.Journal != receipt.FileJournal || ix.Quant.StudyID != 1 {
		t.Fatalf("bundle.json: %+v %v", ix, err)
	}
	if strings.Contains(string(files["records.json"]), home) || !strings.Contains(string(files["records.json"]), `"~/.local/share/sparkbench/quant/q4_0.gguf"`) ||
		!strings.Contains(string(files[receipt.FileJournal]), home+"/.local") {
		t.Errorf("records.json is not redacted, or the journal excerpt is:\n%s", files["records.json"])
	}
	md := string(files[receipt.FileReceipt])
	if !strings.Contains(md, "## Notebook journal") || !strings.Contains(md, "chain re-walked, intact") || !strings.Contains(md, "the home folder written as ~") {
		t.Errorf("receipt.md:\n%s", md)
	}
	if code, o, e := runCLI("verify", out); code != 0 || !strings.Contains(o, "OK") || !strings.Contains(o, "journal chain") {
		t.Fatalf("verify: %d %s %s", code, o, e)
	}
	// Consistently changed raw files: the figure, then the build.
	for _, c := range []struct{ file, from, to string }{
		{"records.json", `"mean_ts":12.5`, `"mean_ts":13.5`},
		{"provenance.json", `"machine":"test machine"`, `"machine":"other machine"`},
	} {
		bad, remade := receipt.Files{}, receipt.Files{}
		for k, v := range files {
			bad[k], remade[k] = v, v
		}
		if !strings.Contains(string(bad[c.file]), c.from) {
			t.Fatalf("%s has no %s:\n%s", c.file, c.from, bad[c.file])
		}
		bad[c.file] = []byte(strings.Replace(string(bad[c.file]), c.from, c.to, 1))
		remade[c.file] = bad[c.file]
		if err := receipt.Finish(remade); err == nil || !strings.HasPrefix(err.Error(), c.file+": ") {
			t.Errorf("%s changed: the receipt was made again (%v)", c.file, err)
		}
		delete(bad, receipt.FileSums) // re-summed: verify must still find it
		bad[receipt.FileSums] = receipt.Sums(bad)
		p := filepath.Join(dir, "bad-"+c.file)
		if err := bundle.WriteDir(p, bad); err != nil {
			t.Fatal(err)
		}
		code, o, e := runCLI("verify", p)
		if code == 0 || !strings.Contains(o+e, c.file+": ") || !strings.Contains(o+e, "not what the journal excerpt's entries hold") {
			t.Errorf("verify of a changed %s: %d %s %s", c.file, code, o, e)
		}
	}
}

// TestImportLadderBundle: a ladder's bundle imported into another notebook is a ladder study
// there (imported, its origin and kept excerpt shown by study show and study list, its legs
// as the excerpt recorded them), its receipt is the bundle again byte for byte, a second
// import is refused, a changed file is refused naming it, and nothing is written either way.
func TestImportLadderBundle(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	nbA := filepath.Join(dir, "origin.db")
	handLadder(t, nbA, home)
	orig := filepath.Join(dir, "receipt")
	if code, o, e := runCLI("receipt", "1", "--notebook", nbA, "--out", orig); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, o, e)
	}
	nbB := filepath.Join(dir, "home.db")
	code, out, errOut := runCLI("import", orig, "--notebook", nbB)
	if code != 0 || !strings.Contains(out, "(quant bundle") || !strings.Contains(out, "1 candidate record, 1 leg") || !strings.Contains(out, "origin: study 1 \"hand ladder\" (complete)") {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
	newID := registeredID(t, out)
	ladderImportedLikeOrigin(t, nbA, "1", nbB, newID, orig)
	again := filepath.Join(dir, "again")
	if code, o, e := runCLI("receipt", newID, "--out", again, "--notebook", nbB); code != 0 {
		t.Fatalf("receipt of the imported ladder: %d %s %s", code, o, e)
	}
	if n := sameBundleFiles(t, orig, again); n < 8 {
		t.Errorf("%d files", n)
	}
	// Exported again here under another home folder: still the bundle it was imported from.
	t.Setenv("HOME", filepath.Join(dir, "elsewhere"))
	again2 := filepath.Join(dir, "again2")
	if code, o, e := runCLI("receipt", newID, "--out", again2, "--notebook", nbB); code != 0 {
		t.Fatalf("receipt under another home: %d %s %s", code, o, e)
	}
	sameBundleFiles(t, orig, again2)

	_, headBefore := journalHeadOf(t, nbB)
	code, out, errOut = runCLI("import", orig, "--notebook", nbB)
	if code != 2 || !strings.Contains(errOut, "already imported") || !strings.Contains(errOut, "as study "+newID) {
		t.Fatalf("second import: %d %s %s", code, out, errOut)
	}
	if _, headAfter := journalHeadOf(t, nbB); headAfter != headBefore {
		t.Errorf("a refused import journaled something: head %s -> %s", headBefore, headAfter)
	}
	for _, file := range []string{"records.json", receipt.FileJournal, receipt.FileStudy, receipt.FileReceipt, receipt.FileIndex} {
		bad := filepath.Join(dir, "bad", file)
		copyTree(t, orig, bad)
		p := filepath.Join(bad, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x01
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fresh := filepath.Join(dir, "bad", file+".db")
		code, out, errOut := runCLI("import", bad, "--notebook", fresh)
		if code != 2 || !strings.Contains(errOut, "does not verify") || !strings.Contains(errOut, "DIFFERS "+file) || !strings.Contains(errOut, "nothing was imported") {
			t.Errorf("tampered %s: %d %s %s", file, code, out, errOut)
		}
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Errorf("tampered %s: the notebook was created (%v)", file, err)
		}
	}
}

// ladderImportedLikeOrigin holds an imported ladder (study b of notebook pb, from bundle
// src) to its origin (study a of pa): study show --json the same result, study show and study
// list naming the origin, its legs the origin's by label, the notebook's chain intact, and
// study run refused.
func ladderImportedLikeOrigin(t *testing.T, pa, a, pb, b, src string) {
	t.Helper()
	_, jsA, _ := runCLI("study", "show", a, "--json", "--notebook", pa)
	code, jsB, errOut := runCLI("study", "show", b, "--json", "--notebook", pb)
	var ra, rb quant.Result
	if code != 0 || json.Unmarshal([]byte(jsA), &ra) != nil || json.Unmarshal([]byte(jsB), &rb) != nil {
		t.Fatalf("study show --json: %d %s\n%s\n%s", code, errOut, jsA, jsB)
	}
	// The imported ladder's paths are as its bundle's records.json holds them (~ for the home).
	ca, _ := canon.Marshal(ra.Candidates)
	cb, _ := canon.Marshal(rb.Candidates)
	if home, ok := os.LookupEnv("HOME"); ok {
		ca = []byte(strings.ReplaceAll(string(ca), home+"/", "~/"))
	}
	if string(ca) != string(cb) || ra.Selection.Selected != rb.Selection.Selected || ra.PlanSHA256 != rb.PlanSHA256 || len(rb.Candidates) == 0 {
		t.Errorf("imported ladder's result differs:\norigin   %s\nimported %s", ca, cb)
	}
	if code, out, _ := runCLI("study", "show", b, "--notebook", pb); code != 0 || !strings.HasPrefix(out, "imported from "+src) || !strings.Contains(out, "re-walks from prev_hash") || !strings.Contains(out, "quantization ladder receipt") {
		t.Errorf("study show: %d %s", code, out)
	}
	if code, out, _ := runCLI("study", "list", "--notebook", pb); code != 0 || !strings.Contains(out, "\tquant\timported\t") || !strings.Contains(out, "imported from "+src) {
		t.Errorf("study list: %d %s", code, out)
	}
	if la, lb := legLabels(t, pa, mustAtoi(t, a)), legLabels(t, pb, mustAtoi(t, b)); len(la) == 0 || strings.Join(la, ",") != strings.Join(lb, ",") {
		t.Errorf("legs: origin %v, imported %v", la, lb)
	}
	if code, out, _ := runCLI("notebook", "verify", "--notebook", pb); code != 0 || !strings.Contains(out, "intact") {
		t.Errorf("notebook verify after import: %d %s", code, out)
	}
	if code, out, errOut := runCLI("study", "run", b, "--notebook", pb); code == 0 || !strings.Contains(out+errOut, "imported") {
		t.Errorf("run of an imported ladder: %d %s %s", code, out, errOut)
	}
}

// legLabels are a study's legs as its leg.finished entries record them (label, kind, state,
// class), in order.
func legLabels(t *testing.T, path string, study int64) []string {
	t.Helper()
	n, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	entries, err := n.Journal(context.Background(), study, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Kind != store.KindLegFinished {
			continue
		}
		var p struct {
			Label, Kind, State, Class string
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Label+" "+p.Kind+" "+p.State+" "+p.Class)
	}
	return out
}

// TestImportRefusesLadderBundleWithoutExcerpt: a ladder bundle written before ladder receipts
// carried a journal excerpt still verifies, and its import is refused saying why and what to
// do, nothing written.
func TestImportRefusesLadderBundleWithoutExcerpt(t *testing.T) {
	dir, _, _, files := handLadderBundle(t)
	// The bundle as it was written before: no excerpt, bundle.json without its quant map.
	delete(files, receipt.FileJournal)
	files[receipt.FileIndex], _ = canon.Marshal(receipt.Index{Schema: receipt.SchemaBundle, Kind: kinds.Quant, Sparkbench: "old"})
	if err := receipt.Finish(files); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(files[receipt.FileReceipt]), "Notebook journal") {
		t.Error("a bundle without an excerpt has the journal section in its receipt")
	}
	old := filepath.Join(dir, "old")
	if err := bundle.WriteDir(old, files); err != nil {
		t.Fatal(err)
	}
	if code, o, e := runCLI("verify", old); code != 0 || !strings.Contains(o, "OK") {
		t.Fatalf("verify of an old ladder bundle: %d %s %s", code, o, e)
	}
	fresh := filepath.Join(dir, "home.db")
	code, o, e := runCLI("import", old, "--notebook", fresh)
	if code != 2 || !strings.Contains(e, "predates journal excerpts") || !strings.Contains(e, "sparkbench receipt ID") || !strings.Contains(e, "origin machine") || !strings.Contains(e, "nothing was imported") {
		t.Errorf("import of an old ladder bundle: %d %s %s", code, o, e)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the notebook was created (%v)", err)
	}
}

// TestImportLadderBundleRealLlamaCpp: a ladder (Q8_0 and Q4_0 of the medium model, one thread)
// run on the real llama-quantize, llama-perplexity and llama-bench, its receipt exported with
// its journal excerpt (the derived models' paths under the home folder written as ~) and
// verified, then imported into another notebook: the same result there, its legs the
// origin's, its receipt the bundle again byte for byte; a changed records.json is refused.
func TestImportLadderBundleRealLlamaCpp(t *testing.T) {
	loc := llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q8_0", "Q4_0"}, 2)
	// On a shared machine under the race detector three short repetitions spread widely: the
	// CV gates are opened all the way (the import is tested here, not the gates).
	editPlan(t, plan, map[string]any{"speed": map[string]any{"depths": []int{0, 512}, "n_prompt": 64, "n_gen": 16, "reps": 3, "threads": 1,
		"gates": map[string]float64{"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}}})
	nbA := filepath.Join(dir, "origin.db")
	// A speed leg still flagged after its third attempt leaves the ladder incomplete (exit 1):
	// its bundle imports all the same.
	if code, out, errOut := runCLI("study", "run", plan, "--notebook", nbA, "--llama-dir", loc.Dir); !(code == 0 && strings.Contains(out, "study 1 complete")) && !(code == 1 && strings.Contains(out, "study 1 incomplete")) {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	orig := filepath.Join(dir, "receipt.tar.gz")
	if code, out, errOut := runCLI("receipt", "1", "--notebook", nbA, "--out", orig); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	files, err := bundle.Read(orig, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if rj := string(files["records.json"]); !strings.Contains(rj, `"~/data/sparkbench/`) || strings.Contains(rj, dir+"/data") {
		t.Errorf("records.json does not name the derived models under ~:\n%s", rj)
	}
	if code, out, errOut := runCLI("verify", orig); code != 0 || !strings.Contains(out, "journal chain") {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
	nbB := filepath.Join(dir, "home.db")
	code, out, errOut := runCLI("import", orig, "--notebook", nbB)
	if code != 0 || !strings.Contains(out, "(quant bundle") || !strings.Contains(out, "2 candidate records") {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
	newID := registeredID(t, out)
	ladderImportedLikeOrigin(t, nbA, "1", nbB, newID, orig)
	again := filepath.Join(dir, "again")
	if code, out, errOut := runCLI("receipt", newID, "--out", again, "--notebook", nbB); code != 0 {
		t.Fatalf("receipt of the imported ladder: %d %s %s", code, out, errOut)
	}
	origDir := filepath.Join(dir, "orig")
	if err := bundle.WriteDir(origDir, files); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files equal", sameBundleFiles(t, origDir, again))
	if code, out, errOut := runCLI("import", orig, "--notebook", nbB); code != 2 || !strings.Contains(errOut, "already imported") {
		t.Errorf("second import: %d %s %s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad")
	copyTree(t, origDir, bad)
	rj := []byte(strings.Replace(string(files["records.json"]), `"type":"Q4_0"`, `"type":"Q4_1"`, 1))
	if err := os.WriteFile(filepath.Join(bad, "records.json"), rj, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "bad.db")
	if code, out, errOut := runCLI("import", bad, "--notebook", fresh); code != 2 || !strings.Contains(errOut, "DIFFERS records.json") {
		t.Errorf("import of a changed records.json: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the notebook was created (%v)", err)
	}
}
