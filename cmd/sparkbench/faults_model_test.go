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

// swapPlan writes a two-depth plan of model whose legs start under wrapper.
func swapPlan(t *testing.T, dir, name, model, wrapper string) string {
	t.Helper()
	plan := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": %q,
  "models": [{"id": "m", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 16], "n_prompt": [16], "n_gen": [8], "reps": 2, "threads": [1]},
  "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1},
  "build": {"launch_wrapper": [%q]}}`, name, model, capacitySHA(t, model), wrapper)
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFaultsModelSwappedDuringRun (issue 30 item 5): the registered model is replaced by
// another GGUF while a study runs, by the plan's launch wrapper (so at a known moment, with
// the real llama-bench). Swapped as leg 2 starts: llama-bench loads the other file, the leg's
// rows are flagged model:changed (its model_size and the file's identity say so) and the run
// halts; swapped by leg 1's wrapper after its llama-bench ended: the leg's process group was
// still running, so which file it read cannot be told from the file, and the leg is flagged
// too (a swap between two legs, outside any leg's process, halts before the next leg starts:
// app/study/studyrun TestModelReplacedBetweenLegsHaltsBeforeTheLeg). Either way the study is
// not complete; while the other file is there a run refuses it (MISMATCH), and with the
// registered file put back `study run` finishes it.
func TestFaultsModelSwappedDuringRun(t *testing.T) {
	loc := llamatest.Binaries(t)
	for _, tc := range []struct {
		name  string
		swap  string // the wrapper's script: $1.. is the leg's command line
		legs  int    // legs recorded by the halted run
		class string // the last leg's class in the halted run
	}{
		{"as leg 2 starts", `if [ "$n" = 2 ]; then cp "$D/other.gguf" "$D/m.new" && mv "$D/m.new" "$D/m.gguf"; fi
exec "$@"`, 2, "flagged"},
		{"after leg 1 ended", `"$@"; rc=$?
if [ "$n" = 1 ]; then cp "$D/other.gguf" "$D/m.new" && mv "$D/m.new" "$D/m.gguf"; fi
exit $rc`, 1, "flagged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			nb := filepath.Join(dir, "notebook.db")
			copyTo := func(src, dst string) {
				b, err := os.ReadFile(llamatest.Model(t, src))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			copyTo("tiny-llama-f32.gguf", "m.gguf")
			copyTo("tiny-moe-f32.gguf", "other.gguf")
			wrapper := filepath.Join(dir, "swap.sh")
			script := "#!/bin/sh\nD=" + dir + "\nn=$(cat \"$D/count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$D/count\"\n" + tc.swap + "\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			model := filepath.Join(dir, "m.gguf")
			id := registerAndRun(t, nb, swapPlan(t, dir, "swap", model, wrapper), loc.Dir, false)
			code, out, errOut := runCLIWithin(t, 3*time.Minute, "study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir)
			if code != 1 || !strings.Contains(out+errOut, "model:changed") || !strings.Contains(out+errOut, "put the registered file back") {
				t.Fatalf("run with the model swapped %s: exit %d (want 1, model:changed)\n%s%s", tc.name, code, out, errOut)
			}
			n, err := store.OpenWith(nb, store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			legs, err := n.LegTimeline(context.Background(), 1)
			n.Close()
			if err != nil || len(legs) != tc.legs || legs[len(legs)-1].Class != tc.class {
				t.Fatalf("legs after the halted run: %d (want %d, the last %s) %v\n%+v", len(legs), tc.legs, tc.class, err, legs)
			}
			if code, out, _ := runCLI("study", "show", id, "--notebook", nb); code != 0 || strings.Contains(out, ": complete") || !strings.Contains(out, "model:changed") {
				t.Errorf("show of the halted study: %d\n%s", code, out)
			}
			// While the other file is there, a run refuses it (MISMATCH) before any leg.
			if code, _, errOut := runCLIWithin(t, 3*time.Minute, "study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir); code != 2 || !strings.Contains(errOut, "MISMATCH") {
				t.Errorf("run with the other file in place: exit %d %q", code, errOut)
			}
			copyTo("tiny-llama-f32.gguf", "m.gguf")
			if code, out, errOut := runCLIWithin(t, 3*time.Minute, "study", "run", id, "--notebook", nb, "--llama-dir", loc.Dir); code != 0 || !strings.Contains(out, "complete") {
				t.Errorf("run with the registered file back: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// TestFaultsQuantCandidateSwappedDuringBench (issue 30 item 5, the ladder): the candidate's
// quantized file is replaced after its first bench leg (the run's own progress line is the
// moment, with the real llama-quantize, llama-perplexity and llama-bench): the next leg is not
// run, the candidate is incomplete with model:changed, and the ladder selects nothing.
func TestFaultsQuantCandidateSwappedDuringBench(t *testing.T) {
	llamatest.Binaries(t)
	ref := llamatest.Model(t, "medium-llama-f16.gguf")
	other, err := os.ReadFile(llamatest.Model(t, "tiny-llama-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	t.Setenv("XDG_DATA_HOME", data)
	nbPath := filepath.Join(dir, "notebook.db")
	plan := writeLadderPlan(t, dir, ref, mediumSHA, corpusPath(), corpusSHA, []string{"Q4_0"}, 4)
	editPlan(t, plan, map[string]any{
		"speed":       map[string]any{"depths": []int{0, 16}, "n_prompt": 64, "n_gen": 16, "reps": 3, "threads": 1, "gates": map[string]any{"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}},
		"rule":        map[string]any{"maximize": "tg@0", "limits": map[string]any{"kld_mean_max": 0.5}, "tolerance": 0.01},
		"predictions": []map[string]any{}})
	if code, out, errOut := runCLI("study", "register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	swapped := ""
	var lines []string
	done, err := workbench.RunQuantLadder(context.Background(), nb, workbench.QuantRunRequest{ID: 1, Event: func(line string) {
		lines = append(lines, line)
		if swapped != "" || !strings.HasPrefix(line, "bench/Q4_0/d0") {
			return
		}
		_ = filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gguf") && swapped == "" {
				if werr := os.WriteFile(p+".new", other, 0o644); werr != nil {
					t.Error(werr)
				} else if rerr := os.Rename(p+".new", p); rerr != nil {
					t.Error(rerr)
				}
				swapped = p
			}
			return err
		})
	}})
	nb.Close()
	if swapped == "" {
		t.Fatalf("no bench line came to swap the file at (%v):\n%s", err, strings.Join(lines, "\n"))
	}
	if err != nil || done == nil || done.Complete {
		t.Fatalf("the ladder whose candidate changed: %+v %v\n%s", done, err, strings.Join(lines, "\n"))
	}
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "model:changed: "+swapped+" changed since this run hashed it") {
		t.Errorf("the run does not say the candidate's file changed:\n%s", all)
	}
	if code, out, errOut := runCLI("study", "show", "1", "--notebook", nbPath); code != 0 || !strings.Contains(out, "incomplete") || !strings.Contains(out, "model:changed") || strings.Contains(out, "selected Q4_0") {
		t.Errorf("show: %d\n%s%s", code, out, errOut)
	}
}
