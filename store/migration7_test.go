package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/benchfmt"
)

func batchedTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "runner", "benchfmt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A notebook written at schema version 6 (with a finished llama-bench leg) is migrated to 7:
// its leg and its journal still verify, its leg.finished entry is unchanged (no batched_rows
// key), and it then stores llama-batched-bench rows: imported (kind imported) and run (the new
// leg kind batched), hashed into the leg's digest and append-only.
func TestMigration7BatchedSamples(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old, err := OpenWith(path, Options{migrateTo: 6})
	if err != nil {
		t.Fatal(err)
	}
	st, err := old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput, Status: StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	leg, sw, err := old.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "bench leg", Argv: []string{"llama-bench"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := benchfmt.ParseJSONLLine(firstLine(t, batchedTestdataBench(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.AddBench(r); err != nil {
		t.Fatal(err)
	}
	_, oldEntry, err := old.FinishLeg(ctx, leg.ID, LegOutcome{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "x", Kind: LegKindBatched}); err == nil {
		t.Fatal("schema 6 accepted the leg kind batched")
	}
	old.Close()

	n, err := OpenWith(path, Options{migrateTo: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	stats := must[Stats](t)(n.Stats(ctx))
	if stats.SchemaVersion != 7 {
		t.Fatalf("schema version %d after migration, want 7", stats.SchemaVersion)
	}
	if _, ok := stats.Tables["batched_samples"]; ok {
		t.Errorf("stats list batched_samples with no rows: %v", stats.Tables)
	}
	rep := must[VerifyReport](t)(n.Verify(ctx))
	if !rep.OK() {
		t.Fatalf("migrated notebook does not verify: %v", rep.Broken)
	}
	entries := must[[]JournalEntry](t)(n.Journal(ctx, st.ID, 0, 100))
	for _, e := range entries {
		if e.Seq == oldEntry.Seq && (string(e.Payload) != string(oldEntry.Payload) || strings.Contains(string(e.Payload), "batched")) {
			t.Errorf("the old leg's entry changed: %s", e.Payload)
		}
	}

	// import: a batched-bench table and a jsonl file, each one leg of kind imported
	res := must[[]ImportResult](t)(n.ImportBenchOutput(ctx, ImportRequest{Study: "imp", Files: []ImportFile{
		{Name: "bb.md", Data: batchedTestdata(t, "batched-md.stdout")},
		{Name: "bb.jsonl", Data: batchedTestdata(t, "batched-jsonl.stdout")},
	}}))
	for i, want := range []benchfmt.Format{benchfmt.FormatBatchedMD, benchfmt.FormatBatchedJSONL} {
		if res[i].Format != want || res[i].Rows != 3 || len(res[i].Tests) != 1 || res[i].Tests[0] != "pp32+tg8 B=1,2,4" {
			t.Errorf("import %d: %+v", i, res[i])
		}
		rows := must[[]BatchedRow](t)(n.BatchedRows(ctx, res[i].LegID))
		if len(rows) != 3 || rows[2].B != 4 || rows[2].NThreads == nil || *rows[2].NThreads != 1 || rows[0].LegState != LegImported || rows[0].Line == 0 {
			t.Errorf("import %d rows: %+v", i, rows)
		}
		if b := must[[]benchfmt.Result](t)(n.BenchRows(ctx, res[i].LegID)); len(b) != 0 {
			t.Errorf("import %d left %d llama-bench rows", i, len(b))
		}
	}
	parsed := must[ParsedImport](t)(ParseImport("bb.jsonl", batchedTestdata(t, "batched-jsonl.stdout")))
	got := must[[]BatchedRow](t)(n.BatchedRows(ctx, res[1].LegID))
	for i := range parsed.Batched {
		if got[i].BatchedResult.S != parsed.Batched[i].S || got[i].TPP != parsed.Batched[i].TPP || *got[i].NKVMax != *parsed.Batched[i].NKVMax {
			t.Errorf("row %d stored %+v, parsed %+v", i, got[i].BatchedResult, parsed.Batched[i])
		}
	}

	// a run leg of kind batched: rows while it runs, none after
	bl, _, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "batched", Kind: LegKindBatched, Argv: []string{"llama-batched-bench"}})
	if err != nil {
		t.Fatalf("the leg kind batched after migration: %v", err)
	}
	model := BatchedModel{Filename: "models/tiny.gguf", SHA256: strings.Repeat("AB", 32)}
	if err := n.AddBatched(ctx, bl.ID, model, parsed.Batched[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := n.AddBatched(ctx, bl.ID, model, parsed.Batched[2]); err != nil {
		t.Fatal(err)
	}
	bad := parsed.Batched[0]
	bad.NKV++
	if err := n.AddBatched(ctx, bl.ID, model, parsed.Batched[0], bad); err == nil || !strings.Contains(err.Error(), "N_KV") {
		t.Errorf("a row failing Check was accepted: %v", err)
	}
	_, entry, err := n.FinishLeg(ctx, bl.ID, LegOutcome{})
	if err != nil {
		t.Fatal(err)
	}
	var payload legFinishedPayload
	if err := json.Unmarshal(entry.Payload, &payload); err != nil || payload.BatchedRows != 3 {
		t.Errorf("leg.finished records %d batched rows (%v), want 3: %s", payload.BatchedRows, err, entry.Payload)
	}
	if err := n.AddBatched(ctx, bl.ID, model, parsed.Batched[0]); err == nil {
		t.Error("rows added to a finished leg")
	}
	for _, q := range []BatchedQuery{{Model: "models/tiny.gguf"}, {Model: "tiny.gguf"}, {Model: strings.Repeat("ab", 32)}, {Model: "tiny.gguf", StudyID: st.ID}} {
		rows := must[[]BatchedRow](t)(n.BatchedRowsFor(ctx, q))
		if len(rows) != 3 || rows[0].LegID != bl.ID || rows[2].Seq != 2 || rows[0].Model != (BatchedModel{"models/tiny.gguf", strings.Repeat("ab", 32)}) || rows[0].LegClass != ClassOK {
			t.Errorf("query %+v: %+v", q, rows)
		}
	}
	if rows := must[[]BatchedRow](t)(n.BatchedRowsFor(ctx, BatchedQuery{Model: "iny.gguf"})); len(rows) != 0 {
		t.Errorf("a partial base name matched %d rows", len(rows))
	}
	if rows := must[[]BatchedRow](t)(n.BatchedRowsFor(ctx, BatchedQuery{})); len(rows) != 9 {
		t.Errorf("all rows: %d, want 9", len(rows))
	}

	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("verify after batched rows: %v", rep.Broken)
	}
	if st := must[Stats](t)(n.Stats(ctx)); st.Tables["batched_samples"] != 9 {
		t.Errorf("stats: %v", st.Tables)
	}
	for _, q := range []string{"UPDATE batched_samples SET s = 1", "DELETE FROM batched_samples"} {
		if _, err := n.w.db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	var ok string
	if err := n.rdb.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check %q %v", ok, err)
	}

	// the digest covers the batched rows: one rate changed behind the triggers breaks the chain check
	db := rawDB(t, path)
	if _, err := db.Exec("DROP TRIGGER batched_samples_no_update"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE batched_samples SET s_tg = s_tg * 1.01 WHERE leg_id = ? AND seq = 1", bl.ID); err != nil {
		t.Fatal(err)
	}
	rep = must[VerifyReport](t)(n.Verify(ctx))
	if rep.OK() || !strings.Contains(rep.Broken.String(), "samples no longer hash") {
		t.Errorf("a changed batched row went unnoticed: %v", rep.Broken)
	}
}

func batchedTestdataBench(t *testing.T) []byte {
	t.Helper()
	return batchedTestdata(t, "bench-jsonl.stdout")
}

func firstLine(t *testing.T, b []byte) []byte {
	t.Helper()
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "{") {
			return []byte(l)
		}
	}
	t.Fatal("no jsonl line")
	return nil
}
