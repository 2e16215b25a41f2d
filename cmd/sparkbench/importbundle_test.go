package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
	"sparkbench/store"
)

// importPlan registers a small throughput study (tiny and MoE models, three depths, -t 1, two
// predictions) in nb and returns its id.
func importPlan(t *testing.T, dir, nb string) string {
	t.Helper()
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	file := writePlan(t, dir, "bundle import", tiny, moe, 3, 8, `,
  "predictions": [
    {"id": "P1", "text": "tiny tg above 1 t/s at d0", "kind": "band", "about": {"figure": "cell", "model": "tiny", "test": "tg", "depth": 0}, "lo": 1},
    {"id": "P2", "text": "where does moe tg cross 10000?", "kind": "question", "about": {"figure": "crossing_depth", "model": "moe", "test": "tg", "line": 10000}}
  ]`)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	return registeredID(t, out)
}

// sameStudyRows compares study a of notebook pa with study b of notebook pb: every leg (label,
// kind, plan leg, state, class, reason, times, row counts) and every row with its status.
func sameStudyRows(t *testing.T, pa string, a int64, pb string, b int64) (legs, rows int) {
	t.Helper()
	na, err := store.OpenWith(pa, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer na.Close()
	nbb, err := store.OpenWith(pb, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nbb.Close()
	ctx := context.Background()
	la, err1 := store.StudyRecorder{N: na}.Legs(ctx, a)
	lb, err2 := store.StudyRecorder{N: nbb}.Legs(ctx, b)
	if err1 != nil || err2 != nil || len(la) != len(lb) || len(la) == 0 {
		t.Fatalf("legs: %d %v, %d %v", len(la), err1, len(lb), err2)
	}
	for i := range la {
		x, y := la[i], lb[i]
		x.ID, y.ID = 0, 0
		if (x.ExitCode == nil) != (y.ExitCode == nil) || x.ExitCode != nil && *x.ExitCode != *y.ExitCode {
			t.Errorf("leg %d: exit codes differ", i)
		}
		x.ExitCode, y.ExitCode = nil, nil
		if !reflect.DeepEqual(x, y) {
			t.Errorf("leg %d differs:\n%+v\n%+v", i, x, y)
		}
	}
	ra, err1 := store.StudyRecorder{N: na}.Rows(ctx, a)
	rb, err2 := store.StudyRecorder{N: nbb}.Rows(ctx, b)
	if err1 != nil || err2 != nil || len(ra) != len(rb) || len(ra) == 0 {
		t.Fatalf("rows: %d %v, %d %v", len(ra), err1, len(rb), err2)
	}
	for i := range ra {
		if ra[i].Seq != rb[i].Seq || ra[i].Status != rb[i].Status || !reflect.DeepEqual(ra[i].Result, rb[i].Result) {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, ra[i], rb[i])
		}
	}
	return len(la), len(ra)
}

// sameReports compares the parts of two `study show --json` reports an import keeps:
// results, figures, the scoreboard's outcomes, findings and legs (ids and times aside).
func sameReports(t *testing.T, a, b *study.Report) {
	t.Helper()
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	if js(a.Results) != js(b.Results) || js(a.Figures) != js(b.Figures) {
		t.Errorf("results or figures differ:\n%s\n%s", js(a.Results), js(b.Results))
	}
	if len(a.Scoreboard) != len(b.Scoreboard) || len(a.Findings) != len(b.Findings) || len(a.Legs) != len(b.Legs) {
		t.Fatalf("scoreboard %d/%d, findings %d/%d, legs %d/%d", len(a.Scoreboard), len(b.Scoreboard), len(a.Findings), len(b.Findings), len(a.Legs), len(b.Legs))
	}
	for i := range a.Scoreboard {
		if x, y := js(a.Scoreboard[i]), js(b.Scoreboard[i]); stripAt(x) != stripAt(y) {
			t.Errorf("score %d differs:\n%s\n%s", i, x, y)
		}
	}
}

// stripAt drops the "at" times of verdicts (the import journals them at its own time; the
// origin's are in the kept excerpt).
func stripAt(s string) string {
	for {
		i := strings.Index(s, `"at":"`)
		if i < 0 {
			return s
		}
		j := strings.Index(s[i+6:], `"`)
		s = s[:i] + s[i+6+j+1:]
	}
}

// TestImportBundleEndToEndRealBench: a study run on the real llama-bench (-t 1) with a human
// verdict and a finding, exported as a .tar.gz and as a folder, imported into another notebook:
// every leg and row equal, the same report, the home chain intact with the imported legs
// re-hashed, shown and listed as imported, comparable with a local study; a copy with one
// byte changed (a transcript, a rows.jsonl) is refused naming the file, nothing written; the
// same bundle twice is refused as already imported.
func TestImportBundleEndToEndRealBench(t *testing.T) {
	loc := llamatest.Binaries(t)
	t.Setenv("SPARKBENCH_LLAMA_DIR", loc.Dir)
	dir := t.TempDir()
	nbA := filepath.Join(dir, "origin.db")
	id := importPlan(t, dir, nbA)
	if code, out, errOut := runStudy(t, id, "--notebook", nbA); code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI("verdict", id, "--prediction", "P2", "--human", "NOTE", "--why", "read off the chart", "--notebook", nbA); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI("finding", "add", id, "--text", "tg falls with depth", "--leg", "tiny/d256", "--prediction", "P1", "--notebook", nbA); code != 0 {
		t.Fatal(errOut)
	}
	tgz, folder := filepath.Join(dir, "out", "bundle.tar.gz"), filepath.Join(dir, "out", "bundle")
	if err := os.MkdirAll(filepath.Dir(tgz), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{tgz, folder} { // paths kept as recorded: the legs' argv compare equal
		if code, o, errOut := runCLI("receipt", id, "--out", out, "--no-redact", "--notebook", nbA); code != 0 {
			t.Fatalf("receipt: %d %s %s", code, o, errOut)
		}
	}

	nbB := filepath.Join(dir, "home.db")
	start := time.Now()
	code, out, errOut := runCLI("import", tgz, "--notebook", nbB)
	if code != 0 || !strings.Contains(out, "imported "+tgz) || !strings.Contains(out, "origin: study "+id) {
		t.Fatalf("import: %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("import of %s in %v: %s", filepath.Base(tgz), time.Since(start), out)
	newID := registeredID(t, out)
	legs, rows := sameStudyRows(t, nbA, mustAtoi(t, id), nbB, mustAtoi(t, newID))
	t.Logf("%d legs, %d rows equal", legs, rows)
	sameReports(t, showJSON(t, id, nbA), showJSON(t, newID, nbB))
	if code, out, _ := runCLI("notebook", "verify", "--notebook", nbB); code != 0 || !strings.Contains(out, "intact") || !strings.Contains(out, fmt.Sprintf("%d legs' samples re-hashed", legs)) {
		t.Fatalf("notebook verify after import: %d %s", code, out)
	}
	if code, out, _ := runCLI("study", "show", newID, "--notebook", nbB); code != 0 || !strings.HasPrefix(out, "imported from "+tgz) || !strings.Contains(out, "re-walks from prev_hash") {
		t.Fatalf("show: %d %s", code, out)
	}
	if code, out, _ := runCLI("study", "list", "--notebook", nbB); code != 0 || !strings.Contains(out, "imported from "+tgz) {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out, errOut := runCLI("study", "run", newID, "--notebook", nbB); code != 2 || !strings.Contains(errOut, "imported from a receipt bundle") {
		t.Fatalf("run of an imported study: %d %s %s", code, out, errOut)
	}

	// Twice: refused by its SHA-256; the folder (another export of the same study: other
	// bytes, the same journal excerpt) too. Nothing added.
	_, headBefore := journalHeadOf(t, nbB)
	for again, why := range map[string]string{tgz: "this bundle (SHA-256 of its SHA256SUMS", folder: "another bundle of the same study"} {
		code, out, errOut = runCLI("import", again, "--notebook", nbB)
		if code != 2 || !strings.Contains(errOut, "already imported") || !strings.Contains(errOut, why) || !strings.Contains(errOut, "as study "+newID) {
			t.Fatalf("second import of %s: %d %s %s", again, code, out, errOut)
		}
	}
	if _, headAfter := journalHeadOf(t, nbB); headAfter != headBefore {
		t.Fatalf("a refused import journaled something: head %s -> %s", headBefore, headAfter)
	}

	// One changed byte in a file: refused naming it; nothing written.
	for _, file := range []string{"legs/002-tiny-d0/transcript.txt", "legs/004-tiny-d256/rows.jsonl", "journal.jsonl"} {
		bad := filepath.Join(dir, "bad", strings.ReplaceAll(file, "/", "_"))
		copyTree(t, folder, bad)
		p := filepath.Join(bad, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		i := len(b) / 2
		b[i] ^= 0x01
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fresh := filepath.Join(dir, "bad", strings.ReplaceAll(file, "/", "_")+".db")
		code, out, errOut := runCLI("import", bad, "--notebook", fresh)
		if code != 2 || !strings.Contains(errOut, "does not verify") || !strings.Contains(errOut, "DIFFERS "+file) || !strings.Contains(errOut, "nothing was imported") {
			t.Fatalf("tampered %s: %d %s %s", file, code, out, errOut)
		}
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Errorf("tampered %s: the notebook was created (%v)", file, err)
		}
	}

	// The imported study and a local one of the same plan compare side by side.
	code, out, errOut = runCLI("import", tgz, "--notebook", nbA)
	if code != 0 || !strings.Contains(out, "(imported ") {
		t.Fatalf("import into the origin notebook: %d %s %s", code, out, errOut)
	}
	local, imported := id, registeredID(t, out)
	if code, out, errOut := runCLI("study", "compare", local, imported, "--notebook", nbA); code != 0 || !strings.Contains(out, "(imported)") || !strings.Contains(out, "tg8") {
		t.Fatalf("compare local with imported: %d %s %s", code, out, errOut)
	}
}

func journalHeadOf(t *testing.T, path string) (int64, string) {
	t.Helper()
	n, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st, err := n.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Tables["journal"], st.JournalHead
}

// TestImportBundleFromLoopbackHost: the headless workflow on a bench host. On a loopback sshd
// host (this machine, so the test-built binary runs there), over ssh: study register, study
// run and receipt, with the host's own llama.cpp and model folders and notebook; the bundle
// comes back over the same ssh connection (ssh HOST cat FILE, the bytes streamed to a local
// file), and `import` adds it here, equal to the host's study row for row.
func TestImportBundleFromLoopbackHost(t *testing.T) {
	loc := llamatest.Binaries(t)
	bin := builtBinary(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	srv := sshdtest.Start(t, "bench-host")
	cfg := sshdtest.WriteConfig(t, "", srv)
	hostBin, hostModels := sshdtest.HostDirs(t, loc.Dir, tiny, moe)
	work := t.TempDir() // the host's working folder (the loopback host shares this file system)
	plan := writePlan(t, work, "headless on host", filepath.Join(hostModels, filepath.Base(tiny)), filepath.Join(hostModels, filepath.Base(moe)), 2, 8, "")
	hostNB := filepath.Join(work, "host-notebook.db")
	remoteBundle := filepath.Join(work, "headless.tar.gz")
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	script := fmt.Sprintf("set -e; export SPARKBENCH_LLAMA_DIR=%s SPARKBENCH_NOTEBOOK=%s; %s study register %s; %s study run 1; %s receipt 1 --out %s",
		q(hostBin), q(hostNB), q(bin), q(plan), q(bin), q(bin), q(remoteBundle))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	outb, err := exec.CommandContext(ctx, "ssh", "-F", cfg, srv.Alias, script).CombinedOutput()
	if err != nil {
		t.Fatalf("headless run on the host: %v\n%s\n%s", err, outb, srv.Log())
	}
	t.Logf("headless register+run+receipt over ssh in %v", time.Since(start))
	local := filepath.Join(t.TempDir(), "from-host.tar.gz")
	data, err := exec.CommandContext(ctx, "ssh", "-F", cfg, srv.Alias, "cat "+q(remoteBundle)).Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("copy back over ssh: %v (%d bytes)", err, len(data))
	}
	if err := os.WriteFile(local, data, 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "desktop.db")
	code, out, errOut := runCLI("import", local, "--notebook", home)
	if code != 0 || !strings.Contains(out, "as study 1 ") {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	legs, rows := sameStudyRows(t, hostNB, 1, home, 1)
	t.Logf("merged back: %d legs, %d rows; %s", legs, rows, out)
	if code, out, _ := runCLI("study", "show", "1", "--notebook", home); code != 0 || !strings.Contains(out, "imported from "+local) || !strings.Contains(out, "complete there") {
		t.Fatalf("show: %d %s", code, out)
	}
}

// syntheticBundle writes a throughput study of models × depths legs (one model and one
// depth a leg, a pp and a tg row each; every model ID names the tiny test model) straight
// into a new notebook through the study recorder, and exports its receipt bundle with the
// real export code (`sparkbench receipt`).
func syntheticBundle(tb testing.TB, models, depths int) string {
	tb.Helper()
	dir := tb.TempDir()
	tiny := llamatest.Model(tb, "tiny-llama-f32.gguf")
	ds := make([]string, depths)
	for i := range ds {
		ds[i] = fmt.Sprint(i * 16)
	}
	ms := make([]string, models)
	for i := range ms {
		ms[i] = fmt.Sprintf(`{"id": "m%d", "path": %q, "sha256": %q}`, i, tiny, tinySHA)
	}
	planJSON := fmt.Sprintf(`{"schema": "sparkbench.throughput/v1", "name": "synthetic %dx%d legs",
  "models": [%s],
  "axes": {"depths": [%s], "n_prompt": [64], "n_gen": [32], "reps": 2, "threads": [1]},
  "split": "per_depth", "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}}`, models, depths, strings.Join(ms, ", "), strings.Join(ds, ", "))
	p, err := study.Decode("plan.json", []byte(planJSON))
	if err != nil {
		tb.Fatal(err)
	}
	p.Defaults()
	sum, canon, err := p.SHA256()
	if err != nil {
		tb.Fatal(err)
	}
	lp, err := study.Expand(p, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := templateRow(tb)
	nbPath := filepath.Join(dir, "synthetic.db")
	nb, err := store.Open(nbPath)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	rec := store.StudyRecorder{N: nb}
	id, _, err := rec.Register(ctx, study.NewStudy{Name: p.Name, PlanSHA256: sum, PlanJSON: canon, PlanDir: dir, PlanFile: "plan.json"})
	if err != nil {
		tb.Fatal(err)
	}
	for i, l := range lp {
		legID, sink, err := rec.StartLeg(ctx, study.LegStart{StudyID: id, Label: l.ID, Kind: "bench", PlanLeg: l.ID, Role: study.RoleLeg, Attempt: 1,
			Argv: append([]string{"llama-bench"}, l.Args...)})
		if err != nil {
			tb.Fatal(err)
		}
		pp, tg := tmpl, tmpl
		pp.ModelFilename, tg.ModelFilename = tiny, tiny
		pp.NPrompt, pp.NGen, pp.NDepth, pp.AvgTs = 64, 0, int64(l.Depths[0]), 1000+float64(i%97)
		tg.NPrompt, tg.NGen, tg.NDepth, tg.AvgTs = 0, 32, int64(l.Depths[0]), 100+float64(i%89)
		if err := sink.AddBench(pp, tg); err != nil {
			tb.Fatal(err)
		}
		if err := rec.FinishLeg(ctx, legID, study.LegEnd{Class: "ok", Transcript: []byte("| model | test | t/s |\n"), RowStatus: []string{"result", "result"}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := rec.SetStatus(ctx, id, study.StatusComplete); err != nil {
		tb.Fatal(err)
	}
	nb.Close()
	out := filepath.Join(dir, "bundle")
	if code, o, errOut := runCLI("receipt", fmt.Sprint(id), "--out", out, "--notebook", nbPath); code != 0 {
		tb.Fatalf("receipt: %d %s %s", code, o, errOut)
	}
	return out
}

// templateRow is the first llama-bench row of benchfmt's jsonl test output.
func templateRow(tb testing.TB) benchfmt.Result {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(llamatest.RepoRoot(), "runner", "benchfmt", "testdata", "bench-jsonl.stdout"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "{") {
			r, err := benchfmt.ParseJSONLLine([]byte(l))
			if err != nil {
				tb.Fatal(err)
			}
			return r
		}
	}
	tb.Fatal("no jsonl row")
	return benchfmt.Result{}
}

// BenchmarkImportBundle1000Legs: the merge time of a 1,000-leg bundle (2,000 rows), written
// by the real export code from a synthetic notebook study: `sparkbench import` (read, the
// whole verification with the plots re-rendered, the one-transaction import) into a fresh
// notebook each time; two shapes: ten models × 100 depths, and one model × 1,000 depths.
func BenchmarkImportBundle1000Legs(b *testing.B) {
	for _, shape := range []struct{ models, depths int }{{10, 100}, {1, 1000}} {
		b.Run(fmt.Sprintf("models=%d,depths=%d", shape.models, shape.depths), func(b *testing.B) {
			bundleDir := syntheticBundle(b, shape.models, shape.depths)
			dir := b.TempDir()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				nb := filepath.Join(dir, fmt.Sprintf("home-%d.db", i))
				if code, out, errOut := runCLI("import", bundleDir, "--notebook", nb); code != 0 || !strings.Contains(out, "1000 legs, 2000 rows") {
					b.Fatalf("import: %d %s %s", code, out, errOut)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/import")
			// CPU time (user + system, the whole process) per import: less at the mercy of
			// other work on a shared machine than the wall time.
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/import")
		})
	}
}

// TestImportBundleKeepsTelemetry: a study sampled by a (fake, 100 W) GPU sampler, run on the
// real llama-bench, exported and imported: every sampled leg's telemetry comes along (its
// samples hash to the bundle's telemetry.jsonl again), so the imported study's energy section
// equals the origin's; the home chain verifies.
func TestImportBundleKeepsTelemetry(t *testing.T) {
	llamatest.Binaries(t)
	tiny, moe := llamatest.Model(t, "tiny-llama-f32.gguf"), llamatest.Model(t, "tiny-moe-f32.gguf")
	dir := t.TempDir()
	nbA := filepath.Join(dir, "origin.db")
	file := writePlan(t, dir, "energy import", tiny, moe, 2, 8, `, "telemetry": {"interval_ms": 20}`)
	code, out, errOut := runCLI("study", "register", file, "--notebook", nbA)
	if code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	id := registeredID(t, out)
	nb, err := store.Open(nbA)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := workbench.RunThroughput(context.Background(), nb, workbench.ThroughputRunRequest{ID: mustAtoi(t, id), Telemetry: fakeGPU(t)})
	nb.Close()
	if err != nil || sum.Status != study.StatusComplete {
		t.Fatalf("run: %+v %v", sum, err)
	}
	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--no-redact", "--notebook", nbA); code != 0 {
		t.Fatalf("receipt: %d %s %s", code, out, errOut)
	}
	tel, _ := filepath.Glob(filepath.Join(bundle, "legs", "*", "telemetry.jsonl"))
	nbB := filepath.Join(dir, "home.db")
	code, out, errOut = runCLI("import", bundle, "--notebook", nbB)
	if code != 0 || len(tel) == 0 {
		t.Fatalf("import (%d telemetry files): %d %s %s", len(tel), code, out, errOut)
	}
	newID := registeredID(t, out)
	sameStudyRows(t, nbA, mustAtoi(t, id), nbB, mustAtoi(t, newID))
	a, b := showJSON(t, id, nbA), showJSON(t, newID, nbB)
	ja, _ := json.Marshal(a.Energy)
	jb, _ := json.Marshal(b.Energy)
	if a.Energy == nil || len(a.Energy.Legs) != len(tel) || string(ja) != string(jb) {
		t.Fatalf("energy differs (%d telemetry files):\n%s\n%s", len(tel), ja, jb)
	}
	if code, out, _ := runCLI("notebook", "verify", "--notebook", nbB); code != 0 || !strings.Contains(out, "intact") {
		t.Fatalf("notebook verify: %d %s", code, out)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
