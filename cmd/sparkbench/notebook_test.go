package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/store"
)

func benchSample(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "runner", "benchfmt", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func call(f func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := f(args, &o, &e)
	return code, o.String(), e.String()
}

func cmdN(args []string, o, e *bytes.Buffer) int { return cmdNotebook(args, o, e) }
func cmdI(args []string, o, e *bytes.Buffer) int { return cmdImport(args, o, e) }
func cmdE(args []string, o, e *bytes.Buffer) int { return cmdExport(args, o, e) }

func TestNotebookImportExportVerify(t *testing.T) {
	nb := filepath.Join(t.TempDir(), "nb", "notebook.db")
	t.Setenv(store.EnvNotebook, nb)

	code, out, errOut := call(cmdN, "path")
	if code != 0 || !strings.Contains(out, nb) || !strings.Contains(out, "not created yet") {
		t.Fatalf("path: %d %q %q", code, out, errOut)
	}
	// verify of a notebook that does not exist is bad input
	if code, _, errOut := call(cmdN, "verify"); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("verify missing: %d %q", code, errOut)
	}

	jsonl, md := benchSample(t, "bench-depth-jsonl.stdout"), benchSample(t, "seed-style-llama-bench.md")
	code, out, errOut = call(cmdI, "--study", "step6", jsonl, md)
	if code != 0 || errOut != "" {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "imported "+jsonl+": jsonl, 4 rows (pp64, tg32, pp64 @ d128, tg32 @ d128) as leg 1 of study \"step6\"") ||
		!strings.Contains(out, "md, 8 rows (pp512, tg128, pp512 @ d8192, tg128 @ d8192) as leg 2") || !strings.Contains(out, "lack fields") {
		t.Fatalf("import output:\n%s", out)
	}
	// the same file again is skipped
	if code, out, _ := call(cmdI, "--study", "step6", jsonl); code != 0 || !strings.Contains(out, "skipped") || !strings.Contains(out, "already leg 1") {
		t.Fatalf("re-import: %d %q", code, out)
	}
	// a malformed file: refused with file and line, nothing imported
	bad := filepath.Join(t.TempDir(), "bad.md")
	os.WriteFile(bad, []byte("| model | test | t/s |\n|---|---|---|\n| m | pp512 | 1.0 ± 0.1 |\n| m | tg128 | n/a fast |\n"), 0o644)
	code, out, errOut = call(cmdI, "--study", "other", jsonl, bad)
	if code != 2 || out != "" || !strings.Contains(errOut, bad+":4:") || !strings.Contains(errOut, "nothing was imported") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("bad import: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := call(cmdI, filepath.Join(t.TempDir(), "missing.jsonl")); code != 2 || !strings.Contains(errOut, "cannot read") {
		t.Fatalf("missing file: %d %q", code, errOut)
	}
	if code, _, _ := call(cmdI); code != 2 {
		t.Fatal("import without files")
	}

	code, out, errOut = call(cmdN, "verify")
	if code != 0 || !strings.Contains(out, "intact: 3 journal entries, 2 legs' samples re-hashed (12 rows)") {
		t.Fatalf("verify: %d %q %q", code, out, errOut)
	}
	code, out, _ = call(cmdN, "stats")
	if code != 0 || !strings.Contains(out, "bench_samples      12") || !strings.Contains(out, "journal head: entry 3") {
		t.Fatalf("stats: %d %q", code, out)
	}

	// export: study first, flags after it
	code, out, errOut = call(cmdE, "step6", "--format", "csv")
	if code != 0 {
		t.Fatalf("export csv: %d %q", code, errOut)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 13 || strings.Join(recs[0], ",") != strings.Join(store.BenchExportColumns, ",") {
		t.Fatalf("csv: %v %d rows", err, len(recs))
	}
	outFile := filepath.Join(t.TempDir(), "step6.json")
	code, out, errOut = call(cmdE, "--format", "json", "--out", outFile, "step6")
	if code != 0 || out != "" || !strings.Contains(errOut, "exported 12 bench rows") {
		t.Fatalf("export json: %d %q %q", code, out, errOut)
	}
	var rows []map[string]any
	b, _ := os.ReadFile(outFile)
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != 12 || rows[6]["test"] != "pp512 @ d8192" || rows[6]["avg_ts"] != 561.1 {
		t.Fatalf("json export: %v %v", err, rows)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "no study named \"nosuch\""},
		{[]string{"step6", "--format", "xml"}, "use csv or json"},
		{[]string{"step6", "--rows", "cells"}, "use bench or requests"},
		{[]string{}, "exactly one study"},
	} {
		if code, _, errOut := call(cmdE, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("export %v: %d %q", c.args, code, errOut)
		}
	}

	// tamper with one journal row: verify names it and exits 1
	db, err := sql.Open("sqlite3", "file:"+nb+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TRIGGER journal_no_update"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE journal SET payload = replace(payload, 'step6', 'step7') WHERE seq = 1"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = call(cmdN, "verify")
	if code != 1 || !strings.Contains(out, "BROKEN at journal entry 1 (study.created)") || strings.Count(out, "\n") != 1 {
		t.Fatalf("tampered verify: %d %q", code, out)
	}
}

func TestNotebookRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "contacts.db")
	db, err := sql.Open("sqlite3", "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("CREATE TABLE contacts (name TEXT)")
	db.Close()
	for _, args := range [][]string{{"verify", "--notebook", foreign}, {"stats", "--notebook", foreign}} {
		code, _, errOut := call(cmdN, args...)
		if code != 2 || !strings.Contains(errOut, "another application's SQLite file") {
			t.Errorf("%v: %d %q", args, code, errOut)
		}
	}
	code, _, errOut := call(cmdI, "--notebook", foreign, benchSample(t, "bench-jsonl.stdout"))
	if code != 2 || !strings.Contains(errOut, "will not touch it") {
		t.Errorf("import into foreign: %d %q", code, errOut)
	}
	if code, _, errOut := call(cmdN, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown sub-command") {
		t.Errorf("unknown sub-command: %d %q", code, errOut)
	}
	if code, _, _ := call(cmdN); code != 2 {
		t.Error("no sub-command")
	}
}
