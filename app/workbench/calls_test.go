package workbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sparkbench/store"
)

// A verdict request is refused before any notebook is opened, naming the flag; the outcome is
// recorded upper-cased and the author defaults to the login name.
func TestVerdictRequestCheck(t *testing.T) {
	for _, c := range []struct {
		req  VerdictRequest
		want string
	}{
		{VerdictRequest{Outcome: "PASS", Rationale: "x"}, "--prediction is required (e.g. P1)"},
		{VerdictRequest{Prediction: "P1", Rationale: "x"}, "--human is required: PASS, FAIL or NOTE"},
		{VerdictRequest{Prediction: "P1", Outcome: "PASS", Rationale: "  "}, "--why is required: a human verdict records its rationale"},
		{VerdictRequest{Prediction: "P1", Outcome: "maybe", Rationale: "x"}, `--human "maybe": want PASS, FAIL or NOTE`},
	} {
		err := c.req.Check()
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != c.want {
			t.Errorf("%+v: got %v, want a *RequestError %q", c.req, err, c.want)
		}
	}
	ok := VerdictRequest{Prediction: "P1", Outcome: "note", Rationale: "x"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	h := ok.Verdict()
	if h.Outcome != "NOTE" || h.Author != CurrentUser() || h.Prediction != "P1" {
		t.Errorf("verdict %+v", h)
	}
}

// VerifyNotebook on an intact notebook writes the anchor, finds a head written down before,
// and says an unknown head is not in the chain; ChainOnly neither reads nor writes the anchor.
func TestVerifyNotebook(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nb.db")
	nb, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	first, err := nb.AppendJournal(ctx, "note", map[string]string{"n": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.AppendJournal(ctx, "note", map[string]string{"n": "2"}); err != nil {
		t.Fatal(err)
	}
	chain := NotebookVerifyRequest{ChainOnly: true}
	c, err := VerifyNotebook(ctx, nb, chain)
	if err != nil || !c.Intact(chain) || c.Anchor != nil {
		t.Fatalf("chain only: %+v %v", c, err)
	}
	if _, err := os.Stat(store.AnchorPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ChainOnly wrote the anchor: %v", err)
	}
	req := NotebookVerifyRequest{ExpectHead: first.Hash}
	c, err = VerifyNotebook(ctx, nb, req)
	if err != nil || !c.Intact(req) || !c.ExpectFound || c.ExpectSeq != first.Seq || c.AnchorWriteErr != nil {
		t.Fatalf("expect head: %+v %v", c, err)
	}
	if _, err := os.Stat(store.AnchorPath(path)); err != nil {
		t.Fatalf("the anchor was not written: %v", err)
	}
	c, err = VerifyNotebook(ctx, nb, NotebookVerifyRequest{})
	if err != nil || c.Anchor == nil || c.Anchor.Anchor.Seq != c.Report.HeadSeq {
		t.Fatalf("anchor: %+v %v", c, err)
	}
	unknown := NotebookVerifyRequest{ExpectHead: "00000000000000000000000000000000000000000000000000000000000000ff"}
	c, err = VerifyNotebook(ctx, nb, unknown)
	if err != nil || c.Intact(unknown) || c.ExpectFound {
		t.Fatalf("unknown head: %+v %v", c, err)
	}
}
