package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/receipt/receipttest"
)

// seedStudyID is the notebook study the synthetic excerpt is of; 8 is another study whose
// entry falls in between (the excerpt carries it so that the chain can be re-walked).
const seedStudyID = 7

// seedExcerpt is a chained journal excerpt for the seed fixture as the notebook would hold it:
// the study created and its plan and a prediction registered, another study's entry, a server
// lifetime started, the assembled result (plan SHA-256 and selected points of res) and a
// verdict. edit may change a payload before it is hashed (a consistent forgery).
func seedExcerpt(t *testing.T, res *capacity.Result, studySHA string, edit func(kind string, p map[string]any)) []receipt.JournalLine {
	t.Helper()
	var sel []any
	b, _ := json.Marshal(capacity.SelectedPoints(res))
	if err := json.Unmarshal(b, &sel); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		kind  string
		study int64
		p     map[string]any
	}
	es := []entry{
		{"study.created", seedStudyID, map[string]any{"study": seedStudyID, "kind": "capacity", "name": "seed study", "description": ""}},
		{"plan.registered", seedStudyID, map[string]any{"study": seedStudyID, "plan_sha256": res.PlanSHA256}},
		{"prediction.registered", seedStudyID, map[string]any{"study": seedStudyID, "key": "P1"}},
		{"study.created", 8, map[string]any{"study": 8, "kind": "throughput", "name": "another study", "description": ""}},
		{"leg.started", seedStudyID, map[string]any{"study": seedStudyID, "label": "forward/q8-generic/p1", "kind": "server"}},
		{capacity.NoteAssembled, seedStudyID, map[string]any{"study": seedStudyID, "plan_sha256": res.PlanSHA256, "selected": sel,
			"run_dir": "/home/someone/runs/1", "study_file": "study.json", "study_sha256": studySHA}},
		{"verdict", seedStudyID, map[string]any{"study": seedStudyID, "key": "P1", "outcome": "HIT"}},
	}
	prev := canon.SHA256Hex([]byte("the entries before the excerpt"))
	var out []receipt.JournalLine
	for i, e := range es {
		if edit != nil {
			edit(e.kind, e.p)
		}
		payload, err := canon.Marshal(e.p)
		if err != nil {
			t.Fatal(err)
		}
		seq := int64(41 + i)
		at := fmt.Sprintf("2026-01-02T03:04:%02d.000000001Z", i)
		h, err := receipt.ChainHash(prev, receipt.EntryBytes(seq, e.kind, e.study, at, payload))
		if err != nil {
			t.Fatal(err)
		}
		id := e.study
		out = append(out, receipt.JournalLine{Seq: seq, Kind: e.kind, Study: &id, At: at, Payload: payload, PrevHash: prev, Hash: h})
		prev = h
	}
	return out
}

// seedWithJournal is the seed fixture's bundle with a journal excerpt (edit: see seedExcerpt).
func seedWithJournal(t *testing.T, edit func(kind string, p map[string]any)) (receipt.Files, []receipt.JournalLine, error) {
	t.Helper()
	plain := seedBundle(t, seedDir, "/nonexistent-home")
	var res capacity.Result
	if err := json.Unmarshal(plain[receipt.FileStudy], &res); err != nil {
		t.Fatal(err)
	}
	j := seedExcerpt(t, &res, canon.SHA256Hex(plain[receipt.FileStudy]), edit)
	files, err := Capacity(seedDir, CapacityOptions{Options: Options{Redact: true, Home: "/nonexistent-home", Version: "sparkbench test"},
		BenchTG: map[string]float64{"q8-generic": 41.2}, Journal: j, StudyID: seedStudyID})
	return files, j, err
}

// A capacity bundle written with the study's journal excerpt carries it verbatim as
// journal.jsonl, with its chain hashes, as a throughput bundle does; verify re-walks it; the
// receipt prints the chain head and the registration before the first server lifetime; the
// same study gives the same bytes.
func TestCapacityBundleJournalExcerptVerifies(t *testing.T) {
	files, j, err := seedWithJournal(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := receipt.MarshalJournal(j)
	if !bytes.Equal(files[receipt.FileJournal], want) {
		t.Fatal("journal.jsonl is not the excerpt, verbatim")
	}
	if !bytes.Contains(files[receipt.FileIndex], []byte(`"journal":"journal.jsonl"`)) || !bytes.Contains(files[receipt.FileIndex], []byte(`"study_id":7`)) {
		t.Errorf("bundle.json: %s", files[receipt.FileIndex])
	}
	if !bytes.Contains(files[receipt.FileRedaction], []byte(`"journal.jsonl"`)) {
		t.Errorf("journal.jsonl is not listed verbatim: %s", files[receipt.FileRedaction])
	}
	rep := receipt.Verify(files, receipt.VerifyOptions{})
	if !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
	last := j[len(j)-1]
	if rep.Chain.Entries != 7 || rep.Chain.StudyEntries != 6 || rep.Chain.FirstSeq != 41 || rep.Chain.LastHash != last.Hash {
		t.Errorf("chain: %+v", rep.Chain)
	}
	found := false
	for _, c := range rep.Checked {
		found = found || strings.HasPrefix(c, "journal chain: 7 entries, seq 41 to 47")
	}
	if !found {
		t.Errorf("verify did not check the chain: %v", rep.Checked)
	}
	md := files[receipt.FileReceipt]
	for _, s := range []string{
		"| Notebook chain head | `seq 47` · `" + last.Hash + "`",
		"| Journal excerpt | `entries 41–47` · `7 entries, 6 of this study` · chain re-walked, intact |",
		"| Notebook study | `7` · seed study |",
		"| Plan and predictions registered | `entry 42` at `2026-01-02T03:04:01.000000001Z` · plan SHA-256 matches `plan.json` · `1` predictions registered (`entry 43` to `entry 43`) · before the first server lifetime started (`entry 45` at",
		"`entry 46` at `2026-01-02T03:04:05.000000001Z` · plan and selected points match this bundle's · journaled `study.json` SHA-256 `" + canon.SHA256Hex(files[receipt.FileStudy]) + "`, the same as this bundle's |",
	} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("receipt.md lacks %q", s)
		}
	}
	if _, probs := receipttest.Tables(md); len(probs) > 0 {
		t.Errorf("tables: %v", probs)
	}
	if bad := receipttest.CrossCheck(md, files[receipt.FileStudy]); len(bad) > 0 {
		t.Errorf("numbers: %v", bad)
	}
	// study.json is still exactly capacity assemble's: the journal adds nothing to it.
	plain := seedBundle(t, seedDir, "/nonexistent-home")
	if !bytes.Equal(files[receipt.FileStudy], plain[receipt.FileStudy]) {
		t.Error("the journal changed study.json")
	}
	if bytes.Contains(plain[receipt.FileReceipt], []byte("| Journal excerpt |")) || !bytes.Contains(plain[receipt.FileReceipt], []byte("| Notebook chain head | not in this bundle")) {
		t.Error("a bundle without the journal claims an excerpt")
	}
	again, _, err := seedWithJournal(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range files.Names() {
		if !bytes.Equal(files[n], again[n]) {
			t.Errorf("%s differs between two bundles of the same study", n)
		}
	}
}

// One journal entry changed in the bundle fails verify naming journal.jsonl: with the sums
// as they were, and with SHA256SUMS re-made to match (only the chain can tell then). A
// forgery re-chained consistently is caught by the assembly: a registered plan that is not
// the bundle's, or selected points the raw files do not give.
func TestCapacityBundleJournalTampering(t *testing.T) {
	files, _, err := seedWithJournal(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(files[receipt.FileJournal], []byte("\n"))
	lines[2] = bytes.Replace(lines[2], []byte(`"key":"P1"`), []byte(`"key":"P9"`), 1) // entry 43, prediction.registered
	tampered := bytes.Join(lines, nil)
	if bytes.Equal(tampered, files[receipt.FileJournal]) {
		t.Fatal("nothing changed")
	}
	for _, fresh := range []bool{false, true} {
		bad := files.Clone()
		bad[receipt.FileJournal] = tampered
		if fresh {
			bad[receipt.FileSums] = receipt.Sums(bad)
		}
		rep := receipt.Verify(bad, receipt.VerifyOptions{HashPlots: true})
		ok := false
		for _, p := range rep.Problems {
			ok = ok || p.File == receipt.FileJournal && p.Line == 3 && strings.Contains(p.What, "entry 43 (prediction.registered): hash does not match")
		}
		if rep.OK() || !ok {
			t.Errorf("one entry changed (SHA256SUMS re-made: %v): %v", fresh, rep.Problems)
		}
		if err := receipt.Finish(bad.Clone()); err == nil || !strings.Contains(err.Error(), receipt.FileJournal) {
			t.Errorf("the derived files were re-made from a broken chain: %v", err)
		}
	}
	// Two entries swapped.
	swapped := bytes.SplitAfter(files[receipt.FileJournal], []byte("\n"))
	swapped[3], swapped[4] = swapped[4], swapped[3]
	bad := files.Clone()
	bad[receipt.FileJournal] = bytes.Join(swapped, nil)
	bad[receipt.FileSums] = receipt.Sums(bad)
	if rep := receipt.Verify(bad, receipt.VerifyOptions{HashPlots: true}); rep.OK() || rep.Problems[0].File != receipt.FileJournal || rep.Problems[0].Line != 4 {
		t.Errorf("swapped entries: %v", rep.Problems)
	}
	// The journal file dropped (bundle.json still names it).
	bad = files.Clone()
	delete(bad, receipt.FileJournal)
	bad[receipt.FileSums] = receipt.Sums(bad)
	if rep := receipt.Verify(bad, receipt.VerifyOptions{HashPlots: true}); rep.OK() || rep.Problems[0].File != receipt.FileJournal {
		t.Errorf("journal removed: %v", rep.Problems)
	}

	// Consistent forgeries: a valid chain that registered another plan, or journaled other
	// selected points, is refused by the assembly, naming the file.
	for _, c := range []struct {
		name string
		edit func(kind string, p map[string]any)
		want string
	}{
		{"another plan registered", func(kind string, p map[string]any) {
			if kind == "plan.registered" {
				p["plan_sha256"] = strings.Repeat("ab", 32)
			}
		}, "plan.json: its canonical SHA-256 is"},
		{"other selected points", func(kind string, p map[string]any) {
			if kind == capacity.NoteAssembled {
				p["selected"].([]any)[0].(map[string]any)["generation_rate"] = 99.5
			}
		}, "journal.jsonl: entry 46 (capacity.assembled) journaled the selected points"},
		{"a throughput study", func(kind string, p map[string]any) {
			if kind == "study.created" && p["study"] == seedStudyID {
				p["kind"] = "throughput"
			}
		}, "journal.jsonl: entry 41 (study.created): study 7 is a throughput study"},
	} {
		_, _, err := seedWithJournal(t, c.edit)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
