package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultsNotebookBackup: `notebook backup DEST` writes a copy with SQLite's online backup
// that verifies and holds the same rows; it never overwrites a file (exit 2, the file
// untouched) and a missing notebook is refused without creating one.
func TestFaultsNotebookBackup(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	copyNotebook(t, filepath.Join("testdata", "old-notebook", "notebook.db"), nb)
	dest := filepath.Join(dir, "backup.db")
	code, out, errOut := runCLI("notebook", "backup", dest, "--notebook", nb)
	fi, _ := os.Stat(dest)
	want := fmt.Sprintf("notebook %s backed up to %s (%s): the copy verifies intact (36 journal entries, head entry 36 565ce3e4ae9b7439a269cbe410761f10d3c5faf4ab976ac248fc0421ff9d3cc6), the same rows in every table as the notebook\n",
		nb, dest, humanBytes(fi.Size()))
	if code != 0 || out != want || errOut != "" {
		t.Fatalf("backup: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}
	src, cp := notebookCounts(t, nb), notebookCounts(t, dest)
	if fmt.Sprint(src.Tables) != fmt.Sprint(cp.Tables) || src.JournalHead != cp.JournalHead {
		t.Fatalf("backup holds other rows: %v %s, notebook %v %s", cp.Tables, cp.JournalHead, src.Tables, src.JournalHead)
	}
	if code, out, _ := runCLI("notebook", "verify", "--notebook", dest); code != 0 || !strings.Contains(out, ": intact: 36 journal entries, 8 legs' samples re-hashed (16 rows), 24 records held") {
		t.Fatalf("verify of the backup: %d %s", code, out)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".partial-") {
			t.Fatalf("a temporary file was left behind: %s", e.Name())
		}
	}

	// Never over an existing file.
	before, _ := os.ReadFile(dest)
	code, out, errOut = runCLI("notebook", "backup", dest, "--notebook", nb)
	wantErr := "sparkbench notebook backup: " + dest + " exists already: a backup never overwrites a file; give a new file name\n"
	if after, _ := os.ReadFile(dest); code != 2 || out != "" || errOut != wantErr || !bytes.Equal(before, after) {
		t.Fatalf("backup over an existing file: exit %d, want 2\nstdout %q\nstderr %q\nwant   %q", code, out, errOut, wantErr)
	}
	// A notebook that does not exist is not created.
	missing := filepath.Join(dir, "absent.db")
	if code, _, errOut := runCLI("notebook", "backup", filepath.Join(dir, "b2.db"), "--notebook", missing); code != 2 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("backup of a missing notebook: %d %s", code, errOut)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("backup created the missing notebook")
	}
	if _, err := os.Stat(filepath.Join(dir, "b2.db")); err == nil {
		t.Fatal("backup of a missing notebook wrote a file")
	}
}

// TestFaultsNotebookDamagedFile: a notebook whose schema text or pages are damaged is named
// with what SQLite said, what its integrity check found and how to recover; nothing writes to it.
func TestFaultsNotebookDamagedFile(t *testing.T) {
	dir := t.TempDir()
	const advice = "recover from a copy made by `sparkbench notebook backup`, or import the studies' last receipt bundles (`sparkbench import BUNDLE --notebook NEW`) into a new notebook"

	// The "malformed database schema (studies) - near "DEFA"": the table's SQL text cut.
	schema := filepath.Join(dir, "schema.db")
	copyNotebook(t, filepath.Join("testdata", "old-notebook", "notebook.db"), schema)
	db := tamperDB(t, schema)
	for _, q := range []string{"PRAGMA writable_schema = ON",
		"UPDATE sqlite_schema SET sql = substr(sql, 1, instr(sql, 'DEFA') + 3) WHERE name = 'studies'", "PRAGMA writable_schema = OFF"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	before, _ := os.ReadFile(schema)
	for _, args := range [][]string{{"notebook", "verify"}, {"study", "show", "1"}, {"finding", "add", "1", "--text", "x"}} {
		code, out, errOut := runCLI(append(args, "--notebook", schema)...)
		want := "sparkbench " + strings.Join(args[:2], " ") + ": notebook " + schema + ` is damaged: SQLite says "malformed database schema (studies) - near \"DEFA\": syntax error"; `
		if args[0] == "finding" {
			want = "sparkbench finding add: notebook " + schema + ` is damaged: SQLite says "malformed database schema (studies) - near \"DEFA\": syntax error"; `
		}
		if code != 1 || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "nothing was written. Keep this file as evidence; "+advice+"\n") {
			t.Errorf("%v on a damaged schema: exit %d\nstdout %q\nstderr %q\nwant prefix %q", args, code, out, errOut, want)
		}
		if after, _ := os.ReadFile(schema); !bytes.Equal(before, after) {
			t.Fatalf("%v wrote to the damaged notebook", args)
		}
	}

	// "database disk image is malformed": a page of bench_samples overwritten.
	pages := filepath.Join(dir, "pages.db")
	copyNotebook(t, filepath.Join("testdata", "old-notebook", "notebook.db"), pages)
	db = tamperDB(t, pages)
	var root, size int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'bench_samples'").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&size); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(pages, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 64), (root-1)*size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before, _ = os.ReadFile(pages)
	code, out, errOut := runCLI("notebook", "verify", "--notebook", pages)
	want := "sparkbench notebook verify: notebook " + pages + ` is damaged: SQLite says "database disk image is malformed"; its integrity check found: Tree ` +
		fmt.Sprint(root) + " page " + fmt.Sprint(root) + ": btreeInitPage() returns error code 11; nothing was written. Keep this file as evidence; " + advice + "\n"
	if after, _ := os.ReadFile(pages); code != 1 || out != "" || errOut != want || !bytes.Equal(before, after) {
		t.Fatalf("verify of a damaged page: exit %d\nstdout %q\nstderr %q\nwant   %q", code, out, errOut, want)
	}

	// A value no constraint allows, written past the CHECK (as a byte edit would): the file
	// opens, SQLite's integrity check finds it, verify says so.
	check := filepath.Join(dir, "check.db")
	copyNotebook(t, filepath.Join("testdata", "old-notebook", "notebook.db"), check)
	db = tamperDB(t, check)
	if err := withoutTriggers(t, db, "legs", func() error {
		_, err := db.Exec("UPDATE legs SET state = 'bogus' WHERE id = 2")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, errOut = runCLI("notebook", "verify", "--notebook", check)
	wantOut := "notebook " + check + ": DAMAGED: SQLite's integrity check found the file damaged: CHECK constraint failed in legs; " +
		"keep this file as evidence; recover from a copy made by `sparkbench notebook backup`, or import the studies' last receipt bundles (`sparkbench import BUNDLE`) into a new notebook (--notebook NEW)\n"
	if code != 1 || out != wantOut || errOut != "" {
		t.Fatalf("verify of a CHECK violation: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, wantOut, errOut)
	}
}
