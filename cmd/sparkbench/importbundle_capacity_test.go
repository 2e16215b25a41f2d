package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// capacityBundleForImport registers and runs a capacity study against the real llama-server
// (a tiny model, seconds) in its own notebook, and exports its receipt bundle as a folder.
func capacityBundleForImport(t *testing.T, dir string) (plan, nb, bundleDir string) {
	t.Helper()
	llamatest.Binaries(t)
	capacityTag(t)
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan = capacityStudyPlan(t, dir)
	nb = filepath.Join(dir, "origin.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nb); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("run", "1", "--notebook", nb); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	bundleDir = filepath.Join(dir, "receipt")
	if code, out, errOut := runCLI("receipt", "1", "--out", bundleDir, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	return plan, nb, bundleDir
}

// sameBundleFiles compares two bundles file by file, byte for byte.
func sameBundleFiles(t *testing.T, a, b string) int {
	t.Helper()
	fa, err := bundle.ReadDir(a, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := bundle.ReadDir(b, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for n := range fa {
		names[n] = true
	}
	for n := range fb {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		x, inA := fa[n]
		y, inB := fb[n]
		switch {
		case !inA || !inB:
			t.Errorf("%s: in the original %v, in the re-export %v", n, inA, inB)
		case !bytes.Equal(x, y):
			t.Errorf("%s differs between the original bundle and the imported study's receipt", n)
		}
	}
	return len(sorted)
}

// TestImportCapacityBundleReExportsSameBytes: a capacity study's receipt bundle imported into
// another notebook is a capacity study there (imported, its origin shown) whose own receipt is
// the same bundle byte for byte (study.json, receipt.md, plots, SHA256SUMS, every raw file);
// the capacity show verb and study show read it; a second import is refused, nothing written.
func TestImportCapacityBundleReExportsSameBytes(t *testing.T) {
	dir := t.TempDir()
	plan, nbA, orig := capacityBundleForImport(t, dir)
	nbB := filepath.Join(dir, "home.db")
	code, out, errOut := runCLI("import", orig, "--notebook", nbB)
	if code != 0 || !strings.Contains(out, "(capacity bundle") || !strings.Contains(out, "origin: study 1 ") || !strings.Contains(out, "run folder "+nbB+".imported"+string(filepath.Separator)) {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
	newID := registeredID(t, out)
	again := filepath.Join(dir, "again")
	if code, out, errOut := runCLI("receipt", newID, "--out", again, "--notebook", nbB); code != 0 {
		t.Fatalf("receipt of the imported study: %d %s %s", code, out, errOut)
	}
	n := sameBundleFiles(t, orig, again)
	t.Logf("%d files equal", n)
	if code, out, errOut := runCLI("verify", again); code != 0 {
		t.Errorf("verify of the re-export: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("show", newID, "--notebook", nbB); code != 0 || !strings.HasPrefix(out, "imported from "+orig) || !strings.Contains(out, "re-walks from prev_hash") {
		t.Errorf("capacity show: %d %s %s", code, out, errOut)
	}
	_, jsA, _ := runCapacity("show", "1", "--json", "--notebook", nbA)
	code, jsB, errOut := runCapacity("show", newID, "--json", "--notebook", nbB)
	if a, b := showForCompare(t, jsA), showForCompare(t, jsB); code != 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("capacity show --json: %d %s\norigin:\n%s\nimported:\n%s", code, errOut, jsA, jsB)
	}
	// Its server legs' request rows are the origin's, to the hash each leg.finished recorded.
	if a, b := legSampleHashes(t, nbA, 1), legSampleHashes(t, nbB, mustAtoi(t, newID)); len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("legs' samples_sha256: origin %v, imported %v", a, b)
	}
	if code, out, _ := runCLI("study", "list", "--notebook", nbB); code != 0 || !strings.Contains(out, "\tcapacity\t") || !strings.Contains(out, "imported from "+orig) {
		t.Errorf("study list: %d %s", code, out)
	}
	if code, out, _ := runCLI("notebook", "verify", "--notebook", nbB); code != 0 || !strings.Contains(out, "intact") {
		t.Errorf("notebook verify after import: %d %s", code, out)
	}
	if code, out, errOut := runCapacity("run", newID, "--notebook", nbB); code == 0 {
		t.Errorf("run of an imported capacity study: %d %s %s", code, out, errOut)
	}
	// Its plan registered here is a new study, to run here (not the imported one).
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbB); code != 0 || registeredID(t, out) == newID {
		t.Errorf("register of the imported study's plan: %d %s %s", code, out, errOut)
	}

	// Twice: refused, nothing journaled, no second run folder.
	_, headBefore := journalHeadOf(t, nbB)
	code, out, errOut = runCLI("import", orig, "--notebook", nbB)
	if code != 2 || !strings.Contains(errOut, "already imported") || !strings.Contains(errOut, "as study "+newID) {
		t.Fatalf("second import: %d %s %s", code, out, errOut)
	}
	if _, headAfter := journalHeadOf(t, nbB); headAfter != headBefore {
		t.Errorf("a refused import journaled something: head %s -> %s", headBefore, headAfter)
	}
	if ents, err := os.ReadDir(nbB + ".imported"); err != nil || len(ents) != 1 {
		t.Errorf("run folders beside the notebook after a refused import: %v %v", ents, err)
	}

	// The same study exported as a .tar.gz: refused here too (the same journal excerpt), and
	// imported into a third notebook, whose receipt is that bundle again.
	tgz := filepath.Join(dir, "receipt.tar.gz")
	if code, out, errOut := runCLI("receipt", "1", "--out", tgz, "--notebook", nbA); code != 0 {
		t.Fatalf("receipt .tar.gz: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI("import", tgz, "--notebook", nbB); code != 2 || !strings.Contains(errOut, "already imported") {
		t.Errorf("import of the .tar.gz export: %d %s %s", code, out, errOut)
	}
	nbC := filepath.Join(dir, "third.db")
	code, out, errOut = runCLI("import", tgz, "--notebook", nbC)
	if code != 0 {
		t.Fatalf("import .tar.gz: %d %s %s", code, out, errOut)
	}
	third := filepath.Join(dir, "third")
	if code, out, errOut := runCLI("receipt", registeredID(t, out), "--out", third, "--notebook", nbC); code != 0 {
		t.Fatalf("receipt of the .tar.gz import: %d %s %s", code, out, errOut)
	}
	sameBundleFiles(t, orig, third)
}

// TestImportCapacityBundleTampered: one changed byte in any file of a capacity bundle (a
// request record, the journal excerpt, study.json, receipt.md) is refused naming the file;
// the notebook is not even created. A bundle of the run folder alone is refused too.
func TestImportCapacityBundleTampered(t *testing.T) {
	dir := t.TempDir()
	_, _, orig := capacityBundleForImport(t, dir)
	files, err := bundle.ReadDir(orig, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := receipt.ReadIndex(files)
	if err != nil {
		t.Fatal(err)
	}
	var requests string
	for _, rel := range ix.Capacity.Requests {
		requests = rel
		break
	}
	// A bundle of the run folder alone (no journal excerpt: no notebook study) is refused.
	runOnly := filepath.Join(dir, "run-only")
	if code, out, errOut := runCLI("receipt", "--capacity-run", filepath.Join(dir, "data", "sparkbench", "runs", "1"), "--out", runOnly); code != 0 {
		t.Fatalf("receipt --capacity-run: %d %s %s", code, out, errOut)
	}
	fresh := filepath.Join(dir, "run-only.db")
	if code, out, errOut := runCLI("import", runOnly, "--notebook", fresh); code != 2 || !strings.Contains(errOut, "a run folder alone") || !strings.Contains(errOut, "nothing was imported") {
		t.Errorf("import of a run-folder bundle: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("import of a run-folder bundle created the notebook (%v)", err)
	}
	for _, file := range []string{requests, receipt.FileJournal, receipt.FileStudy, receipt.FileReceipt} {
		name := strings.ReplaceAll(file, "/", "_")
		bad := filepath.Join(dir, "bad", name)
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
		fresh := filepath.Join(dir, "bad", name+".db")
		code, out, errOut := runCLI("import", bad, "--notebook", fresh)
		if code != 2 || !strings.Contains(errOut, "does not verify") || !strings.Contains(errOut, "DIFFERS "+file) || !strings.Contains(errOut, "nothing was imported") {
			t.Errorf("tampered %s: %d %s %s", file, code, out, errOut)
		}
		for _, p := range []string{fresh, fresh + ".imported"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("tampered %s: %s was created (%v)", file, p, err)
			}
		}
	}
}

// showForCompare is `capacity show --json` without what differs by design between a study and
// its import: the status (imported), where the run folder and its study.json are (the
// imported study's is laid out from the bundle, which re-assembled study.json from its
// redacted raw files), when verdicts were journaled, and the size of each leg's transcript
// (its server log as bundled: redacted).
func showForCompare(t *testing.T, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	var drop func(any)
	drop = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, k := range []string{"status", "run_dir", "study_sha256", "path", "file_sha256", "at", "transcript_bytes"} {
				delete(x, k)
			}
			for _, y := range x {
				drop(y)
			}
		case []any:
			for _, y := range x {
				drop(y)
			}
		}
	}
	drop(v)
	return v
}

// legSampleHashes are the samples_sha256 and request_rows of a study's leg.finished entries.
func legSampleHashes(t *testing.T, path string, study int64) []string {
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
			Rows int64  `json:"request_rows"`
			SHA  string `json:"samples_sha256"`
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s", p.Rows, p.SHA))
	}
	return out
}

// TestImportSampledCapacityBundle: a capacity study with telemetry (a fake 100 W GPU sampler,
// both passes) imports like any other: its receipt here is the origin's bundle byte for byte
// (the telemetry.jsonl files and the energy tables included) and its legs' request rows hash
// to the origin's.
func TestImportSampledCapacityBundle(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := sampledCapacityPlan(t, dir, "capacity energy import")
	nbA := filepath.Join(dir, "origin.db")
	if code, stdout, stderr := runCapacity("register", plan, "--notebook", nbA); code != 0 {
		t.Fatalf("register: exit %d\n%s%s", code, stdout, stderr)
	}
	nb, err := store.Open(nbA)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = workbench.RunCapacity(context.Background(), nb, workbench.CapacityRunRequest{ID: 1, Telemetry: fakeGPU(t)})
	nb.Close()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	orig := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", "1", "--out", orig, "--notebook", nbA); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	nbB := filepath.Join(dir, "home.db")
	code, out, errOut := runCLI("import", orig, "--notebook", nbB)
	if code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	newID := registeredID(t, out)
	again := filepath.Join(dir, "again")
	if code, out, errOut := runCLI("receipt", newID, "--out", again, "--notebook", nbB); code != 0 {
		t.Fatalf("receipt of the import: %d %s %s", code, out, errOut)
	}
	files, err := bundle.ReadDir(again, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	tel := 0
	for name := range files {
		if strings.HasSuffix(name, "/telemetry.jsonl") {
			tel++
		}
	}
	if tel == 0 {
		t.Errorf("the re-export holds no telemetry.jsonl")
	}
	sameBundleFiles(t, orig, again)
	if a, b := legSampleHashes(t, nbA, 1), legSampleHashes(t, nbB, mustAtoi(t, newID)); len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("legs' samples_sha256: origin %v, imported %v", a, b)
	}
}
