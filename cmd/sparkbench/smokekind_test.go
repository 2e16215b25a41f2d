package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// A study kind written in one file, registered with the kind registries (workbench.Kind for
// the service layer and the CLI's shared verbs, receipt.BundleKind for its bundles), and
// nothing else: the "smoke" kind runs one llama-bench leg of one model. The test below takes
// it through the same CLI verbs as a throughput study — study register, study run, study
// show, receipt, verify — on the real llama-bench and a real notebook.

const (
	smokeKind   = "smoke-test"
	smokeSchema = "sparkbench.smoke-test/v1"
)

type smokePlan struct {
	Schema      string `json:"schema"`
	Name        string `json:"name"`
	Model       string `json:"model"`
	ModelSHA256 string `json:"model_sha256"`
	NPrompt     int    `json:"n_prompt"`
	NGen        int    `json:"n_gen"`
}

type smokeRow struct {
	Test  string  `json:"test"`
	AvgTs float64 `json:"avg_ts"`
}

type smokeReport struct {
	Study int64      `json:"study"`
	Name  string     `json:"name"`
	Rows  []smokeRow `json:"rows"`
}

func registerSmokeKind(t *testing.T) {
	t.Cleanup(receipt.RegisterBundleKind(receipt.BundleKind{
		Kind:     smokeKind,
		Excerpt:  func(receipt.Files, *receipt.Index) (int64, bool) { return 0, false },
		Assemble: smokeAssemble,
		Charts:   func([]byte) ([]receipt.NamedChart, error) { return nil, nil },
	}))
	t.Cleanup(workbench.RegisterKind(workbench.Kind{Names: []string{smokeKind}, PlanSchema: smokeSchema,
		Validate: func(ctx context.Context, req workbench.PlanCheck) (*workbench.Validated, error) {
			return smokeValidate(ctx, req.File, req.Data, req.Hash)
		}, Register: smokeRegister, Run: smokeRun, Show: smokeShow, Receipt: smokeReceipt}))
}

// smokeCheck decodes a smoke plan through the one strict decoder (FILE:LINE:COL), checks its
// fields (problems with their paths and ranges) and compares its model with its SHA-256
// (hash nil: not).
func smokeCheck(file string, data []byte, hash study.HashFunc) (*smokePlan, []study.Problem, error) {
	p, probs, err := decodeSmokePlanFile(file, data)
	if err != nil || len(study.Errors(probs)) > 0 {
		return p, probs, err
	}
	p.Model = study.ResolvePath(filepath.Dir(file), p.Model)
	if hash == nil {
		return p, nil, nil
	}
	sum, err := hash(p.Model)
	if err != nil {
		return nil, nil, err
	}
	if sum != p.ModelSHA256 {
		return p, []study.Problem{{Path: "model_sha256", Severity: study.SevError, Msg: fmt.Sprintf("MISMATCH: the file hashes to %s", sum)}}, nil
	}
	return p, nil, nil
}

func smokeValidate(_ context.Context, file string, data []byte, hash study.HashFunc) (*workbench.Validated, error) {
	p, probs, err := smokeCheck(file, data, hash)
	if err != nil {
		return nil, err
	}
	valid := len(study.Errors(probs)) == 0
	out := &workbench.Validated{Problems: probs, Valid: valid, Report: map[string]any{"file": file, "valid": valid}}
	if valid {
		out.Lines = []string{fmt.Sprintf("%s: valid smoke plan %q: 1 leg, llama-bench -p %d -n %d", file, p.Name, p.NPrompt, p.NGen)}
	}
	return out, nil
}

// decodeSmokePlanFile is the smoke kind's plan read as every kind reads one: the one strict
// decoder worded for the file, then each field's rule as a problem with its path.
func decodeSmokePlanFile(file string, data []byte) (*smokePlan, []study.Problem, error) {
	var p smokePlan
	if err := study.DecodeFileStrict(file, data, &p, "a smoke plan is one JSON object", "cmd/sparkbench/smokekind_test.go", jsonlex.Input); err != nil {
		return nil, nil, err
	}
	var probs []study.Problem
	bad := func(path, msg string) {
		probs = append(probs, study.Problem{Path: path, Severity: study.SevError, Msg: msg})
	}
	if p.Schema != smokeSchema {
		bad("schema", fmt.Sprintf("%q: want %q", p.Schema, smokeSchema))
	}
	if p.Name == "" {
		bad("name", "want a name")
	}
	if p.Model == "" {
		bad("model", "want a GGUF file")
	}
	if p.NPrompt < 1 {
		bad("n_prompt", fmt.Sprintf("%d: want at least 1 token", p.NPrompt))
	}
	if p.NGen < 1 {
		bad("n_gen", fmt.Sprintf("%d: want at least 1 token", p.NGen))
	}
	return &p, probs, nil
}

// decodeSmokePlan reads a frozen smoke plan (from the notebook or a bundle).
func decodeSmokePlan(data []byte) (*smokePlan, error) {
	p, probs, err := decodeSmokePlanFile("plan.json", data)
	if err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, &study.RefusedError{Problems: probs}
	}
	return p, nil
}

func smokeRegister(ctx context.Context, nb *store.Notebook, file string, data []byte, hash study.HashFunc) (*workbench.Registered, error) {
	p, probs, err := smokeCheck(file, data, hash)
	if err != nil {
		return nil, err
	}
	if len(study.Errors(probs)) > 0 {
		return nil, &study.RefusedError{Problems: probs}
	}
	canonical, err := store.CanonicalJSON(p)
	if err != nil {
		return nil, err
	}
	sum := store.SHA256Hex(canonical)
	id, existing, err := nb.RegisterStudy(ctx, store.Registration{Kind: smokeKind, Name: p.Name, PlanJSON: canonical, PlanSHA256: sum,
		PlanDir: filepath.Dir(file), PlanFile: filepath.Base(file)})
	if err != nil {
		return nil, err
	}
	st, err := nb.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	if existing {
		return &workbench.Registered{StudyID: st.ID, Name: st.Name, PlanSHA256: sum,
			Lines: []string{fmt.Sprintf("study %d %q: already registered with this plan (sha256 %s)", st.ID, st.Name, sum)}}, nil
	}
	return &workbench.Registered{StudyID: st.ID, Name: st.Name, PlanSHA256: sum,
		Lines: []string{fmt.Sprintf("study %d %q registered: plan sha256 %s, 1 leg", st.ID, st.Name, sum)}}, nil
}

func smokeRun(ctx context.Context, nb *store.Notebook, s store.Study, req workbench.RunRequest) (*workbench.RunDone, error) {
	pl, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	p, err := decodeSmokePlan(pl.JSON)
	if err != nil {
		return nil, err
	}
	loc, err := llamacpp.Locate(req.LlamaDir)
	if err != nil {
		return nil, err
	}
	args := []string{"-m", p.Model, "-p", fmt.Sprint(p.NPrompt), "-n", fmt.Sprint(p.NGen), "-r", "1", "-t", llamatest.Threads}
	leg := runner.StartLeg(ctx, runner.LegSpec{Bench: loc.Bench, Args: args, NoFingerprint: true})
	for ev := range leg.Events() {
		if ev.Type == runner.EventSample {
			req.Event(fmt.Sprintf("row %s %.2f t/s", ev.Sample.Test, ev.Sample.AvgTs))
		}
	}
	res := leg.Result()
	l, sw, err := nb.StartLeg(ctx, store.LegSpec{StudyID: s.ID, Label: "smoke", Kind: "bench", Argv: res.Argv})
	if err != nil {
		return nil, err
	}
	var rows []benchfmt.Result
	for _, r := range res.Results() {
		rows = append(rows, r.Result)
	}
	if err := sw.AddBench(rows...); err != nil {
		return nil, err
	}
	if err := sw.Flush(ctx); err != nil {
		return nil, err
	}
	class := string(res.Exit.Class)
	if _, _, err := nb.FinishLeg(ctx, l.ID, store.LegOutcome{Class: class, Reason: res.Exit.Reason}); err != nil {
		return nil, err
	}
	ok := res.Exit.Class == runner.ClassOK
	status := store.StatusComplete
	if !ok {
		status = store.StatusIncomplete
	}
	if err := nb.SetStudyStatus(ctx, s.ID, status); err != nil {
		return nil, err
	}
	return &workbench.RunDone{Status: status, Complete: ok,
		Lines: []string{fmt.Sprintf("study %d %s: 1 leg (%s), %d rows", s.ID, status, class, len(rows))}}, nil
}

func smokeRows(ctx context.Context, nb *store.Notebook, id int64) ([]smokeRow, error) {
	legs, err := nb.LegTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	out := []smokeRow{}
	for _, l := range legs {
		rows, err := nb.BenchRows(ctx, l.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, smokeRow{Test: r.TestName(), AvgTs: r.AvgTs})
		}
	}
	return out, nil
}

func smokeShow(ctx context.Context, nb *store.Notebook, s store.Study) (*workbench.Shown, error) {
	rows, err := smokeRows(ctx, nb, s.ID)
	if err != nil {
		return nil, err
	}
	rep := smokeReport{Study: s.ID, Name: s.Name, Rows: rows}
	return &workbench.Shown{Report: rep, Print: func(w io.Writer) {
		fmt.Fprintf(w, "study %d %q (%s, %s)\n", s.ID, s.Name, s.Kind, s.Status)
		for _, r := range rows {
			fmt.Fprintf(w, "  %-12s %10.2f t/s\n", r.Test, r.AvgTs)
		}
	}}, nil
}

func smokeReceipt(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error) {
	if s.Status != store.StatusComplete {
		return nil, fmt.Errorf("study %d (%s) is %s: a smoke receipt is written for a complete run only; run it again", s.ID, s.Name, s.Status)
	}
	pl, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	rows, err := smokeRows(ctx, nb, s.ID)
	if err != nil {
		return nil, err
	}
	ix, err := canon.Marshal(receipt.Index{Schema: receipt.SchemaBundle, Kind: smokeKind, Sparkbench: opt.Version})
	if err != nil {
		return nil, err
	}
	rj, err := canon.Marshal(rows)
	if err != nil {
		return nil, err
	}
	files := receipt.Files{receipt.FileIndex: ix, "plan.json": pl.JSON, "rows.json": rj}
	return files, receipt.Finish(files)
}

// smokeAssemble re-makes study.json and receipt.md from plan.json and rows.json alone.
func smokeAssemble(files receipt.Files, _ *receipt.Index) ([]byte, []byte, error) {
	p, err := decodeSmokePlan(files["plan.json"])
	if err != nil {
		return nil, nil, err
	}
	var rows []smokeRow
	if err := json.Unmarshal(files["rows.json"], &rows); err != nil {
		return nil, nil, fmt.Errorf("rows.json: %w", err)
	}
	js, err := canon.Marshal(map[string]any{"name": p.Name, "rows": rows})
	if err != nil {
		return nil, nil, err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# %s — smoke receipt\n\n| test | t/s |\n| --- | ---: |\n", p.Name)
	for _, r := range rows {
		fmt.Fprintf(&md, "| %s | %.2f |\n", r.Test, r.AvgTs)
	}
	return js, []byte(md.String()), nil
}

func TestASmokeKindThroughTheSharedVerbs(t *testing.T) {
	loc := llamatest.Binaries(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	registerSmokeKind(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	writeSmoke := func(name, sha string) string {
		b, _ := json.Marshal(smokePlan{Schema: smokeSchema, Name: name, Model: tiny, ModelSHA256: sha, NPrompt: 16, NGen: 8})
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	good := writeSmoke("smoke one", tinySHA)
	if code, out, errOut := runCLI("study", "validate", good); code != 0 || !strings.Contains(out, `valid smoke plan "smoke one": 1 leg, llama-bench -p 16 -n 8`) {
		t.Errorf("validate: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLI("study", "validate", writeSmoke("smoke wrong hash", strings.Repeat("1", 64))); code != 2 || !strings.Contains(errOut, "model_sha256: MISMATCH") {
		t.Errorf("validate of a wrong hash: %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI("study", "register", good, "--notebook", nb)
	if code != 0 || !strings.Contains(out, `"smoke one" registered: plan sha256 `) {
		t.Fatalf("register: %d %q %q", code, out, errOut)
	}
	id := registeredID(t, out)
	if code, out, errOut := runCLI("study", "register", writeSmoke("smoke bad hash", strings.Repeat("0", 64)), "--notebook", nb); code != 2 ||
		!strings.Contains(errOut, "refused: model_sha256: MISMATCH: the file hashes to "+tinySHA) {
		t.Errorf("a plan whose hash differs: %d %q %q", code, out, errOut)
	}

	code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 || !strings.Contains(out, "row pp16 ") || !strings.Contains(out, "row tg8 ") || !strings.Contains(out, "study "+id+" complete: 1 leg (ok), 2 rows") {
		t.Fatalf("run: %d %q %q", code, out, errOut)
	}

	code, out, errOut = runCLI("study", "show", id, "--json", "--notebook", nb)
	var rep smokeReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Rows) != 2 {
		t.Fatalf("show --json: %d %q %q", code, out, errOut)
	}
	// The report is the notebook's rows: read them back directly.
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := smokeRows(context.Background(), n, mustAtoi(t, id))
	n.Close()
	if err != nil || len(stored) != 2 || stored[0] != rep.Rows[0] || stored[1] != rep.Rows[1] || !(rep.Rows[0].AvgTs > 0) || rep.Rows[0].Test != "pp16" || rep.Rows[1].Test != "tg8" {
		t.Fatalf("shown rows %+v, stored %+v (%v)", rep.Rows, stored, err)
	}
	if code, out, _ := runCLI("study", "show", id, "--notebook", nb); code != 0 || !strings.Contains(out, "(smoke-test, complete)") ||
		!strings.Contains(out, fmt.Sprintf("%10.2f t/s", rep.Rows[1].AvgTs)) {
		t.Errorf("show: %d %q", code, out)
	}

	bundleDir := filepath.Join(dir, "smoke-receipt")
	if code, out, errOut := runCLI("receipt", id, "--out", bundleDir, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %q %q", code, out, errOut)
	}
	md, _ := os.ReadFile(filepath.Join(bundleDir, "receipt.md"))
	if !strings.Contains(string(md), fmt.Sprintf("| tg8 | %.2f |", rep.Rows[1].AvgTs)) {
		t.Errorf("receipt.md: %q", md)
	}
	if code, out, errOut := runCLI("verify", bundleDir); code != 0 || !strings.Contains(out, "smoke-test bundle") || !strings.Contains(out, "OK: every file matches") {
		t.Fatalf("verify: %d %q %q", code, out, errOut)
	}
	// A changed row is caught by the same verify.
	rows := filepath.Join(bundleDir, "rows.json")
	b, _ := os.ReadFile(rows)
	if err := os.WriteFile(rows, bytes.Replace(b, []byte(`"tg8"`), []byte(`"tg9"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI("verify", bundleDir); code != 1 || !strings.Contains(out, "DIFFERS rows.json") {
		t.Errorf("verify of a changed row: %d %q", code, out)
	}
}
