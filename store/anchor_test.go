package store

import (
	"os"
	"strings"
	"testing"
)

// TestFaultsAnchorCatchesATruncatedJournal: deleting the journal's last entries leaves a chain that
// still verifies; the anchor written when the notebook was closed still names the deleted
// head, so CheckAnchor reports the truncation. A writable close after it does not move the
// anchor (the evidence stays), and entries journaled in the deleted ones' place are reported
// as a rewrite.
func TestFaultsAnchorCatchesATruncatedJournal(t *testing.T) {
	n, path := openTemp(t)
	fillStudy(t, n, "anchored")
	before := must[VerifyReport](t)(n.Verify(ctx))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	a, found, err := ReadAnchor(AnchorPath(path))
	if err != nil || !found || a.Seq != before.HeadSeq || a.Head != before.Head || a.By != "close" || a.Schema != AnchorSchema {
		t.Fatalf("anchor after close: %+v %v %v (head %d %s)", a, found, err, before.HeadSeq, before.Head)
	}
	if before.HeadSeq != 5 {
		t.Fatalf("head %d, the test deletes entries 4 and 5", before.HeadSeq)
	}

	// Intact: the anchor holds.
	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	rep := must[VerifyReport](t)(ro.Verify(ctx))
	if c := must[*AnchorCheck](t)(ro.CheckAnchor(ctx, rep)); c == nil || c.Problem != "" {
		t.Fatalf("intact notebook: %+v", c)
	}
	ro.Close()

	db := rawDB(t, path)
	if _, err := db.Exec("DROP TRIGGER journal_no_delete"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM journal WHERE seq >= 4"); err != nil {
		t.Fatal(err)
	}
	ro = must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	rep = must[VerifyReport](t)(ro.Verify(ctx))
	// The chain itself still walks to entry 3; only the leg whose leg.started and leg.finished
	// were deleted betrays the truncation (a tail of entries without rows would not: the
	// anchor is for that).
	if rep.HeadSeq != 3 || rep.Broken == nil || rep.Broken.Table != "legs" || rep.Broken.Column != "id" {
		t.Fatalf("the truncated chain should still walk, its orphaned leg reported: %+v", rep)
	}
	c := must[*AnchorCheck](t)(ro.CheckAnchor(ctx, rep))
	if c == nil || c.Problem != AnchorTruncated || c.Anchor.Seq != 5 || c.Anchor.Head != before.Head {
		t.Fatalf("truncated journal: %+v", c)
	}
	ro.Close()

	// A writing command's close leaves the contradicted anchor alone.
	anchorBytes, _ := os.ReadFile(AnchorPath(path))
	w := must[*Notebook](t)(Open(path))
	w.Close()
	if b, _ := os.ReadFile(AnchorPath(path)); string(b) != string(anchorBytes) {
		t.Fatalf("close moved a contradicted anchor: %s -> %s", anchorBytes, b)
	}
	// Two new entries take seq 4 and 5: the anchor's entry 5 now has another hash.
	w = must[*Notebook](t)(Open(path))
	for _, k := range []string{"app.note", "app.note"} {
		if _, err := w.AppendJournal(ctx, k, map[string]any{"x": 1}); err != nil {
			t.Fatal(err)
		}
	}
	rep = must[VerifyReport](t)(w.Verify(ctx))
	c = must[*AnchorCheck](t)(w.CheckAnchor(ctx, rep))
	if c == nil || c.Problem != AnchorRewritten || c.HashAt == "" || c.HashAt == before.Head {
		t.Fatalf("rewritten journal: %+v", c)
	}
	w.Close()
	if b, _ := os.ReadFile(AnchorPath(path)); string(b) != string(anchorBytes) {
		t.Fatalf("close moved a contradicted anchor: %s -> %s", anchorBytes, b)
	}

	// The head is found by its hash; a deleted one is not.
	ro = must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	defer ro.Close()
	if seq, ok, err := ro.SeqOfHash(ctx, rep.Head); err != nil || !ok || seq != 5 {
		t.Fatalf("SeqOfHash(head) = %d %v %v", seq, ok, err)
	}
	if _, ok, err := ro.SeqOfHash(ctx, before.Head); err != nil || ok {
		t.Fatalf("SeqOfHash(deleted head) = %v %v", ok, err)
	}
}

// TestAnchorAdvancesAndRefusesJunk: each writable close moves the anchor to the new head;
// WriteAnchor (after an intact verify) too; an anchor file that is not one is an error that
// names the file, and a close leaves it alone.
func TestAnchorAdvancesAndRefusesJunk(t *testing.T) {
	n, path := openTemp(t)
	fillStudy(t, n, "one")
	n.Close()
	first, _, _ := ReadAnchor(AnchorPath(path))
	n = must[*Notebook](t)(Open(path))
	fillStudy(t, n, "two")
	n.Close()
	second, found, err := ReadAnchor(AnchorPath(path))
	if err != nil || !found || second.Seq <= first.Seq {
		t.Fatalf("anchor did not advance: %+v -> %+v %v", first, second, err)
	}
	// Read-only opens never write it.
	os.Remove(AnchorPath(path))
	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	rep := must[VerifyReport](t)(ro.Verify(ctx))
	ro.Close()
	if _, err := os.Stat(AnchorPath(path)); !os.IsNotExist(err) {
		t.Fatalf("a read-only close wrote the anchor: %v", err)
	}
	ro = must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	if err := ro.WriteAnchor(rep); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if a, found, err := ReadAnchor(AnchorPath(path)); err != nil || !found || a.Seq != rep.HeadSeq || a.By != "verify" {
		t.Fatalf("WriteAnchor: %+v %v %v", a, found, err)
	}
	for _, junk := range []string{"", "{}", `{"schema":"sparkbench.anchor/v1","seq":3,"head":"zz","written_at":"","by":"close"}`,
		`{"schema":"other","seq":3}`, strings.Repeat(" ", maxAnchorBytes+1)} {
		os.WriteFile(AnchorPath(path), []byte(junk), 0o600)
		if _, _, err := ReadAnchor(AnchorPath(path)); err == nil || !strings.Contains(err.Error(), AnchorPath(path)) {
			t.Errorf("junk anchor %.40q: %v", junk, err)
		}
		w := must[*Notebook](t)(Open(path))
		w.Close()
		if b, _ := os.ReadFile(AnchorPath(path)); string(b) != junk {
			t.Errorf("close replaced a junk anchor %.40q", junk)
		}
	}
}

// TestFaultsAnchorWhileAnotherProcessAppends: a verify whose walk ended before another process
// appended entries and closed (moving the anchor past the walked head) reads the anchor as
// holding, not as a truncated journal, and its WriteAnchor does not move the anchor back
// (the soak of issue 30 found `notebook verify` saying "journal truncated" under load).
func TestFaultsAnchorWhileAnotherProcessAppends(t *testing.T) {
	n, path := openTemp(t)
	fillStudy(t, n, "anchored")
	n.Close()
	ro := must[*Notebook](t)(OpenWith(path, Options{ReadOnly: true}))
	defer ro.Close()
	rep := must[VerifyReport](t)(ro.Verify(ctx)) // the walk ends here

	w := must[*Notebook](t)(Open(path)) // another process appends and closes
	if _, err := w.AppendJournal(ctx, "app.note", map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	moved, _, _ := ReadAnchor(AnchorPath(path))
	if moved.Seq != rep.HeadSeq+1 {
		t.Fatalf("the other process's close anchored entry %d, want %d", moved.Seq, rep.HeadSeq+1)
	}
	c := must[*AnchorCheck](t)(ro.CheckAnchor(ctx, rep))
	if c == nil || c.Problem != "" || c.HashAt != moved.Head {
		t.Fatalf("an anchor newer than the walk: %+v, want it holding", c)
	}
	if err := ro.WriteAnchor(rep); err != nil {
		t.Fatal(err)
	}
	if a, _, _ := ReadAnchor(AnchorPath(path)); a.Seq != moved.Seq {
		t.Fatalf("verify moved the anchor back from entry %d to %d", moved.Seq, a.Seq)
	}
}
