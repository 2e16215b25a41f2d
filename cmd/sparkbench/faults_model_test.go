package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/app/workbench"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// flipInPlace changes one byte of path at offset and puts its access and modification times
// back, as `touch -r` would: only the change time (and the content) tell the file changed.
func flipInPlace(t *testing.T, path string, offset int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, offset); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("the flip did not keep size and mtime: %v %v", after, err)
	}
}

// TestFaultsModelChangedInPlace (issue 30 item 4): a registered model that a study ran is
// written in place (one byte at offset 300000) and its mtime restored. `model verify` reads it
// again (its cache key moved with the ctime) and says MISMATCH, naming the new hash; a plan
// naming the registered hash is refused; the notebook still verifies intact (the legs' artefact
// row keeps the hash their leg.started recorded); and the study's receipt still names the file
// the legs ran, never the new hash.
func TestFaultsModelChangedInPlace(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	src, err := os.ReadFile(llamatest.Model(t, "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "tiny.gguf")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := capacitySHA(t, model)
	plan := writeSmallPlan(t, dir, "in place", model, sum, "0", 2)
	registerAndRun(t, nb, plan, loc.Dir, true)
	code, out, errOut := runCLIWithin(t, 2*time.Minute, "model", "verify", model, "--expect", sum, "--notebook", nb)
	if code != 0 || !strings.Contains(out, "VERIFIED") || !strings.Contains(out, "cache") {
		t.Fatalf("model verify of the registered file: %d %q %q", code, out, errOut)
	}

	flipInPlace(t, model, 300000)
	changed := capacitySHA(t, model)
	code, out, errOut = runCLIWithin(t, 2*time.Minute, "model", "verify", model, "--expect", sum, "--notebook", nb)
	if code == 0 || strings.Contains(out, "VERIFIED") || !strings.Contains(out+errOut, "MISMATCH") ||
		!strings.Contains(out+errOut, changed) || strings.Contains(out+errOut, "cache") {
		t.Errorf("model verify of the file changed in place: exit %d %q %q (want MISMATCH naming %s, read from the file)", code, out, errOut, changed)
	}
	if code, out, errOut := runCLIWithin(t, 2*time.Minute, "notebook", "verify", "--notebook", nb); code != 0 || !strings.Contains(out, "intact") {
		t.Errorf("notebook verify after the model changed on disk: exit %d %q %q", code, out, errOut)
	}
	again := writeSmallPlan(t, dir, "in place again", model, sum, "0", 2)
	if code, out, errOut := runCLIWithin(t, 2*time.Minute, "study", "register", again, "--notebook", nb); code != 2 || !strings.Contains(errOut, "MISMATCH") {
		t.Errorf("register a plan naming the old hash of the changed file: exit %d %q %q", code, out, errOut)
	}
	rdir := filepath.Join(dir, "receipt")
	if code, out, errOut := runCLIWithin(t, 2*time.Minute, "receipt", "1", "--out", rdir, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %q %q", code, out, errOut)
	}
	var all strings.Builder
	err = filepath.WalkDir(rdir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".gguf") {
			return err
		}
		b, err := os.ReadFile(p)
		all.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(all.String(), sum) || strings.Contains(all.String(), changed) {
		t.Errorf("the receipt names the changed file's hash %s or not the hash the legs ran (%s)", changed, sum)
	}
	if code, out, errOut := runCLIWithin(t, 2*time.Minute, "verify", rdir); code != 0 {
		t.Errorf("verify the receipt: %d %q %q", code, out, errOut)
	}
}

// TestFaultsRunReadsModelsAgain (issue 30 item 4): a run reads its models again before the
// first leg, whatever the hash cache says. The cache is fooled here as no user-level tool can
// (its row is given the changed file's inode and ctime), so `model verify` believes it; `study
// run` still refuses the changed file (MISMATCH, no leg); `--trust-cache` takes the cache's
// word, runs, and journals that it did.
func TestFaultsRunReadsModelsAgain(t *testing.T) {
	loc := llamatest.Binaries(t)
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	src, err := os.ReadFile(llamatest.Model(t, "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "tiny.gguf")
	if err := os.WriteFile(model, src, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := capacitySHA(t, model)
	trusting := registerAndRun(t, nb, writeSmallPlan(t, dir, "trusting", model, sum, "0", 2), loc.Dir, false)
	reading := registerAndRun(t, nb, writeSmallPlan(t, dir, "reading", model, sum, "0", 2), loc.Dir, false)

	flipInPlace(t, model, 300000)
	k, err := hashing.KeyOf(model)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", nb)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec("UPDATE artefacts SET dev = ?, inode = ?, ctime_ns = ? WHERE path = ?", int64(k.Dev), int64(k.Inode), k.CTime.UnixNano(), model)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("fool the cache: %v (%d rows)", err, n)
	}
	db.Close()
	if code, out, errOut := runCLIWithin(t, 2*time.Minute, "model", "verify", model, "--expect", sum, "--notebook", nb); code != 0 || !strings.Contains(out, "VERIFIED") {
		t.Fatalf("the fooled cache should say VERIFIED (the premise of this test): %d %q %q", code, out, errOut)
	}

	// First the trusting run (the cache still fooled), then one that reads the file (its hash
	// then lands in the cache, which no longer vouches for the changed file).
	code, out, errOut := runCLIWithin(t, 2*time.Minute, "study", "run", trusting, "--trust-cache", "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 0 {
		t.Fatalf("study run --trust-cache: %d %q %q", code, out, errOut)
	}
	legs := notebookCounts(t, nb).Tables["legs"]
	code, out, errOut = runCLIWithin(t, 2*time.Minute, "study", "run", reading, "--notebook", nb, "--llama-dir", loc.Dir)
	if code != 2 || !strings.Contains(errOut, "MISMATCH") || !strings.Contains(errOut, capacitySHA(t, model)) {
		t.Errorf("study run of a changed model the cache vouches for: exit %d %q %q (want 2, MISMATCH naming the file's hash)", code, out, errOut)
	}
	if st := notebookCounts(t, nb); st.Tables["legs"] != legs {
		t.Errorf("the refused run recorded %d legs", st.Tables["legs"]-legs)
	}
	n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	trusted, err := n.JournalOfKind(context.Background(), workbench.KindTrustCache)
	if err != nil || len(trusted) != 1 || fmt.Sprint(trusted[0].StudyID) != trusting {
		t.Fatalf("the trusting run's journal: %+v %v", trusted, err)
	}
	if s := workbench.JournalSentence(trusted[0].Kind, trusted[0].Payload); !strings.Contains(s, "not from the files") {
		t.Errorf("its sentence: %q", s)
	}
}
