package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
	"sparkbench/app/receipt/receipttest"
	"sparkbench/runner/llamatest"
	"sparkbench/store"
)

// TestCapacityStudyReceiptAndPlots: a capacity study registered and run through the notebook
// gets its receipt from the journaled run folder (verify passes), with the prompt plan it ran
// with (a changed or missing prompt plan file is refused), and its charts from `plot STUDY`.
func TestCapacityStudyReceiptAndPlots(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := capacityStudyPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("run", "1", "--notebook", nbPath); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	bundleDir := filepath.Join(dir, "receipt")
	code, out, errOut := runCLI("receipt", "1", "--out", bundleDir, "--notebook", nbPath)
	if code != 0 || !strings.Contains(out, "check it anywhere with `sparkbench verify") {
		t.Fatalf("receipt: %d\n%s\n%s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundleDir, "receipt.md"))
	if err != nil || !strings.Contains(string(md), "Capacity envelope") {
		t.Fatalf("receipt.md: %v\n%.400s", err, md)
	}
	code, out, errOut = runCLI("verify", bundleDir)
	if code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
	// The prompt plan the study ran with (read from the registered plan's folder) is in the
	// bundle, byte for byte, and verify holds it to the plan's prompt_plan.sha256.
	promptFile := filepath.Join(dir, "prompt-plan.json")
	wantSHA := capacitySHA(t, promptFile)
	files, err := bundle.ReadDir(bundleDir, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if pp, ok := files["prompt-plan.json"]; !ok || canonSHA(pp) != wantSHA ||
		!bytes.Contains(files[receipt.FileIndex], []byte(`"prompt_plan":"prompt-plan.json"`)) {
		t.Errorf("the bundle's prompt plan: present %v, sha256 %s, want %s; bundle.json %s", ok, canonSHA(pp), wantSHA, files[receipt.FileIndex])
	}
	if !bytes.Contains(md, []byte("| Prompt plan SHA-256 | `"+wantSHA+"` · matches `prompt-plan.json` |")) || bytes.Contains(md, []byte("prompt plan file is not in the bundle")) {
		t.Errorf("receipt.md's prompt plan row: %s", rowOf(md, "| Prompt plan SHA-256"))
	}
	if !strings.Contains(out, "prompt plan prompt-plan.json against plan.json's prompt_plan.sha256 "+wantSHA[:12]) {
		t.Errorf("verify did not check the prompt plan:\n%s", out)
	}
	// A prompt plan changed after the run, or gone: the export refuses (exit 2) rather than
	// bundle a file the study did not use, and writes nothing.
	orig, err := os.ReadFile(promptFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func() error
		want string
	}{
		{"changed", func() error { return os.WriteFile(promptFile, append(orig, ' '), 0o644) }, "but the plan's prompt_plan.sha256 is " + wantSHA},
		{"missing", func() error { return os.Remove(promptFile) }, "(the plan's prompt_plan.sha256 is " + wantSHA + "; restore the file the study ran with)"},
	} {
		if err := c.edit(); err != nil {
			t.Fatal(err)
		}
		refused := filepath.Join(dir, "refused-"+c.name)
		code, out, errOut := runCLI("receipt", "1", "--out", refused, "--notebook", nbPath)
		if code != 2 || !strings.Contains(errOut, "sparkbench receipt: study 1 (") || !strings.Contains(errOut, c.want) {
			t.Errorf("prompt plan %s: exit %d, want 2 naming %q\n%s%s", c.name, code, c.want, out, errOut)
		}
		if _, err := os.Stat(refused); err == nil {
			t.Errorf("prompt plan %s: the refused export wrote %s", c.name, refused)
		}
	}
	if err := os.WriteFile(promptFile, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"plot", "1", "--kind", "envelope", "--out", filepath.Join(dir, "env.png")},
		{"plot", "1", "--kind", "envelope", "--candidate", "moe", "--out", filepath.Join(dir, "env-moe.svg")},
		{"plot", "1", "--kind", "latency", "--out", filepath.Join(dir, "lat.png")},
		{"plot", "1", "--kind", "slots", "--out", filepath.Join(dir, "slots.pdf")},
	} {
		if code, out, errOut := runCLI(append(c, "--notebook", nbPath)...); code != 0 {
			t.Errorf("%v: %d %s %s", c, code, out, errOut)
		}
	}
	if code, _, errOut := runCLI("plot", "1", "--kind", "depth", "--out", filepath.Join(dir, "d.png"), "--notebook", nbPath); code != 2 || !strings.Contains(errOut, "envelope, latency or slots") {
		t.Errorf("depth of a capacity study: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI("plot", "1", "--kind", "envelope", "--candidate", "nope", "--out", filepath.Join(dir, "x.png"), "--notebook", nbPath); code != 2 || !strings.Contains(errOut, `no candidate "nope"`) {
		t.Errorf("unknown candidate: %d %s", code, errOut)
	}
}

// TestCapacityStudyReceiptJournal: a capacity study's receipt from the notebook carries the
// study's journal entries with their chain hashes, exactly as the notebook holds them; the
// receipt prints the chain head and the registration before the first server lifetime;
// verify re-walks the chain; a second export (after the first's receipt.exported entry) is
// byte-identical; one changed journal entry fails verify naming journal.jsonl.
func TestCapacityStudyReceiptJournal(t *testing.T) {
	llamatest.Binaries(t)
	capacityTag(t)
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	plan := capacityStudyPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCapacity("run", "1", "--notebook", nbPath); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	out := filepath.Join(dir, "receipt")
	if code, stdout, errOut := runCLI("receipt", "1", "--out", out, "--notebook", nbPath); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, stdout, errOut)
	}
	files, err := bundle.ReadDir(out, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	jb := files[receipt.FileJournal]
	if jb == nil || !bytes.Contains(files[receipt.FileIndex], []byte(`"journal":"journal.jsonl"`)) || !bytes.Contains(files[receipt.FileIndex], []byte(`"study_id":1`)) {
		t.Fatalf("no journal excerpt: bundle.json %s", files[receipt.FileIndex])
	}
	// The excerpt is the notebook's entries, hashes included, from the study's first to its
	// last (the receipt.exported entry the export added is left out).
	entries, err := receipt.ParseJournal(jb)
	if err != nil {
		t.Fatal(err)
	}
	n, err := store.OpenWith(nbPath, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := n.Journal(context.Background(), 0, 0, 0)
	n.Close()
	if err != nil {
		t.Fatal(err)
	}
	var own []store.JournalEntry
	for _, e := range all {
		if e.StudyID == 1 && e.Kind != store.KindReceiptExported {
			own = append(own, e)
		}
	}
	// Entries of no study or another journaled in between (a model record hashed again) are
	// in the excerpt too, so that the chain can be walked.
	var span []store.JournalEntry
	for _, e := range all {
		if len(own) > 0 && e.Seq >= own[0].Seq && e.Seq <= own[len(own)-1].Seq {
			span = append(span, e)
		}
	}
	if len(own) < 10 || len(entries) != len(span) || entries[0].Seq != own[0].Seq {
		t.Fatalf("excerpt of %d entries from %d, the notebook has %d from the study's first %d to its last (%d of the study)", len(entries), entries[0].Seq, len(span), own[0].Seq, len(own))
	}
	for i, e := range span {
		j := entries[i]
		if j.Seq != e.Seq || j.Kind != e.Kind || j.Hash != e.Hash || j.PrevHash != e.PrevHash || !bytes.Equal(j.Payload, e.Payload) {
			t.Fatalf("line %d: %+v, the notebook's entry %d is %s %s", i+1, j, e.Seq, e.Kind, e.Hash)
		}
	}
	last := own[len(own)-1]
	var firstLeg int64 // the first server lifetime's leg.started (after the run's study.status entry)
	for _, e := range own {
		if e.Kind == store.KindLegStarted && firstLeg == 0 {
			firstLeg = e.Seq
		}
	}
	md := files[receipt.FileReceipt]
	for _, want := range []string{
		fmt.Sprintf("| Notebook chain head | `seq %d` · `%s`", last.Seq, last.Hash),
		"| Journal excerpt | `entries 1–" + fmt.Sprint(last.Seq) + "`",
		fmt.Sprintf("· plan SHA-256 matches `plan.json` · `4` predictions registered (`entry 4` to `entry 7`) · before the first server lifetime started (`entry %d` at", firstLeg),
		"· plan and selected points match this bundle's · journaled `study.json` SHA-256",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("not in this bundle")) {
		t.Error("receipt.md still says the chain head is not in the bundle")
	}
	if _, probs := receipttest.Tables(md); len(probs) > 0 {
		t.Errorf("tables: %v", probs)
	}
	if bad := receipttest.CrossCheck(md, files[receipt.FileStudy]); len(bad) > 0 {
		t.Errorf("numbers: %v", bad)
	}
	code, stdout, _ := runCLI("verify", out)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("journal chain: %d entries, seq 1 to %d", len(span), last.Seq)) {
		t.Fatalf("verify: %d\n%s", code, stdout)
	}

	// Same study, same bytes: a second export (the notebook has grown by the first's
	// receipt.exported entry) writes every file identically.
	again := filepath.Join(dir, "again")
	if code, stdout, errOut := runCLI("receipt", "1", "--out", again, "--notebook", nbPath); code != 0 {
		t.Fatalf("second receipt: %d %s %s", code, stdout, errOut)
	}
	second, err := bundle.ReadDir(again, bundle.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != len(files) {
		t.Errorf("%d files, then %d", len(files), len(second))
	}
	for _, name := range files.Names() {
		if !bytes.Equal(files[name], second[name]) {
			t.Errorf("%s differs between two exports of the same study", name)
		}
	}

	// One entry changed (its time, a byte of the chain's input; the line stays valid
	// canonical JSON): verify fails naming journal.jsonl and the entry, with the sums as they
	// were and with SHA256SUMS re-made to match.
	lines := bytes.SplitAfter(jb, []byte("\n"))
	k := 2 // entry 3, study.plan_source
	at := []byte(`"at":"` + entries[k].At + `"`)
	if !bytes.Contains(lines[k], at) {
		t.Fatalf("line %d has no %s", k+1, at)
	}
	changed := []byte(entries[k].At)
	changed[len(changed)-2] = "0123456789"[(changed[len(changed)-2]-'0'+1)%10]
	lines[k] = bytes.Replace(lines[k], at, []byte(`"at":"`+string(changed)+`"`), 1)
	for _, fresh := range []bool{false, true} {
		bad := files.Clone()
		bad[receipt.FileJournal] = bytes.Join(lines, nil)
		if fresh {
			bad[receipt.FileSums] = receipt.Sums(bad)
		}
		d := filepath.Join(dir, fmt.Sprintf("tampered-%v", fresh))
		if err := bundle.WriteDir(d, bad); err != nil {
			t.Fatal(err)
		}
		code, stdout, _ := runCLI("verify", d, "--hash-plots")
		if code != 1 || !strings.Contains(stdout, "DIFFERS journal.jsonl: line 3: entry 3 (study.plan_source): hash does not match") {
			t.Errorf("one journal entry changed (SHA256SUMS re-made: %v): %d\n%s", fresh, code, stdout)
		}
	}
}

// rowOf is the receipt line starting with prefix (for messages).
func rowOf(md []byte, prefix string) string {
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "(no such row)"
}
