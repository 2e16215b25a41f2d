package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultsOldNotebookStillVerifies: a notebook written before verify held every record to
// the journal (testdata/old-notebook, written by the code of commit 5d21b8e) verifies intact,
// saying how many legs were recorded under the older rule; it still does after this
// sparkbench wrote to it; and a receipt bundle written by the same old code still
// verifies and imports into a new notebook that verifies.
func TestFaultsOldNotebookStillVerifies(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	copyNotebook(t, filepath.Join("testdata", "old-notebook", "notebook.db"), nb)
	const head = "565ce3e4ae9b7439a269cbe410761f10d3c5faf4ab976ac248fc0421ff9d3cc6"
	older := "7 legs were recorded before the journal held legs.detail_json, legs.temp_before_c: those columns are not held to an entry (the older rule)\n" +
		"8 legs were recorded before the journal held legs.peak_rss_bytes, legs.temp_after_c: those columns are not held to an entry (the older rule)\n" +
		"2 model records were recorded before the journal held artefacts' columns (the model's path, size, times, hashes, header and source): those columns are not held to an entry (the older rule)\n"
	want := fmt.Sprintf("notebook %s: intact: 36 journal entries, 8 legs' samples re-hashed (16 rows), 24 records held to their entries, SQLite integrity check ok; head entry 36 %s\n", nb, head) + older
	code, out, errOut := runCLI("notebook", "verify", "--notebook", nb)
	if code != 0 || out != want || errOut != "" {
		t.Fatalf("old notebook: exit %d, want 0\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}

	// Written to by this sparkbench: the new entries hold the new keys, the old legs stay under the older rule.
	if code, out, errOut := runCLI("finding", "add", "1", "--text", "a finding written by the new code", "--leg", "2", "--notebook", nb); code != 0 {
		t.Fatalf("finding add: %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI("notebook", "verify", "--notebook", nb)
	if code != 0 || !strings.Contains(out, ": intact: 37 journal entries, 8 legs' samples re-hashed (16 rows), 26 records held to their entries") ||
		!strings.Contains(out, "\n"+older) || !strings.HasSuffix(out, " saw entry 37: the chain still holds it (it is the head)\n") {
		t.Fatalf("old notebook after a new entry: exit %d\n%s\n%s", code, out, errOut)
	}

	// An old bundle: verifies, imports, and the notebook it was imported into verifies.
	bundle := filepath.Join("testdata", "old-notebook", "receipt-5d21b8e.tar.gz")
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify old bundle: %d\n%s\n%s", code, out, errOut)
	}
	nb2 := filepath.Join(dir, "fresh.db")
	if code, out, errOut := runCLI("import", bundle, "--notebook", nb2); code != 0 {
		t.Fatalf("import old bundle: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("notebook", "verify", "--notebook", nb2)
	if code != 0 || !strings.Contains(out, ": intact: ") || strings.Contains(out, "older rule") {
		t.Fatalf("notebook of an imported old bundle: exit %d\n%s\n%s", code, out, errOut)
	}
}
