package workbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/assets"
	"sparkbench/store"
)

func ladderOf(ref quant.FileRef, types ...string) *quant.Plan {
	p := &quant.Plan{Schema: quant.SchemaQuant, Name: "ladder", Reference: ref, Quants: types, Speed: quant.Speed{Depths: []int{0}},
		Quality: quant.Quality{Corpus: quant.FileRef{Path: "/c.txt", SHA256: strings.Repeat("c", 64)}}, Rule: quant.Rule{Maximize: "tg@0"}}
	p.Defaults()
	return p
}

// The estimate is the stated per-candidate guess without an earlier ladder of the reference,
// and the mean of the earlier ladders' legs (per candidate: quantize, kld, bench, their
// retries; the base logits apart) with one; a ladder of another reference does not count.
func TestEstimateQuant(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nb, err := store.OpenWith(filepath.Join(t.TempDir(), "nb.db"), store.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ref := quant.FileRef{Path: "/m/ref.gguf", SHA256: strings.Repeat("a", 64)}
	p := ladderOf(ref, "Q8_0", "Q4_0", "Q4_K_M")
	e, err := EstimateQuant(ctx, nb, p)
	if err != nil || e.Studies != 0 || e.Total != 3*GuessPerCandidate || !strings.Contains(e.String(), "a guess: 2m0s per candidate") {
		t.Fatalf("no history: %+v %v (%s)", e, err, e)
	}
	ladder := func(ref quant.FileRef, legs map[string]time.Duration, order ...string) {
		st, err := nb.CreateStudy(ctx, store.Study{Name: "earlier " + ref.Path, Kind: kinds.Quant, Status: store.StatusRegistered})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nb.RegisterPlan(ctx, st.ID, ladderOf(ref, "Q8_0", "Q4_0")); err != nil {
			t.Fatal(err)
		}
		for _, label := range order {
			l, sw, err := nb.StartLeg(ctx, store.LegSpec{StudyID: st.ID, Label: label, Kind: "other", Argv: []string{"x"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sw.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			now = now.Add(legs[label])
			if _, _, err := nb.FinishLeg(ctx, l.ID, store.LegOutcome{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	legs := map[string]time.Duration{"kld-base": 20 * time.Second, "quantize/Q8_0": 10 * time.Second, "kld/Q8_0": 30 * time.Second,
		"bench/Q8_0/d0": 20 * time.Second, "quantize/Q4_0": 10 * time.Second, "kld/Q4_0": 30 * time.Second, "kld/Q4_0#2": 20 * time.Second,
		"bench/Q4_0/d0": 10 * time.Second}
	ladder(ref, legs, "kld-base", "quantize/Q8_0", "kld/Q8_0", "bench/Q8_0/d0", "quantize/Q4_0", "kld/Q4_0", "kld/Q4_0#2", "bench/Q4_0/d0")
	ladder(quant.FileRef{Path: "/m/other.gguf", SHA256: strings.Repeat("b", 64)}, map[string]time.Duration{"quantize/Q8_0": time.Hour}, "quantize/Q8_0")
	e, err = EstimateQuant(ctx, nb, p)
	// (60 s + 70 s) / 2 candidates = 65 s each; 20 s of base logits; 3 candidates: 215 s
	if err != nil || e.Studies != 1 || e.PerCandidate != 65*time.Second || e.Base != 20*time.Second || e.Total != 215*time.Second {
		t.Fatalf("from one earlier ladder: %+v %v", e, err)
	}
	if s := e.String(); !strings.Contains(s, "measured on 1 earlier ladder(s) of this reference") || !strings.HasPrefix(s, "about 3m35s") {
		t.Errorf("%q", s)
	}
}

// The project corpus is written to the data folder once, and again when the copy differs.
func TestQuantCorpus(t *testing.T) {
	dir := t.TempDir()
	path, err := QuantCorpus(dir)
	if err != nil || path != filepath.Join(dir, "corpus", assets.CorpusName) {
		t.Fatalf("%s %v", path, err)
	}
	if err := os.WriteFile(path, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := QuantCorpus(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(assets.Corpus) {
		t.Fatalf("a changed copy was kept (%d bytes)", len(b))
	}
}

// A plan built in the window is checked by the kind's Validate: here without a llama.cpp
// folder that has llama-quantize, which the check says as a warning, beside the plan's own
// problems; the derived-model cache of an empty data folder is an empty list.
func TestValidateQuantPlanAndDerivedModels(t *testing.T) {
	p := ladderOf(quant.FileRef{Path: "/nowhere/ref.gguf"}, "Q8_0", "Q8_0")
	v, err := ValidateQuantPlan(context.Background(), p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, pr := range v.Problems {
		texts = append(texts, pr.String())
	}
	all := strings.Join(texts, "\n")
	if v.Valid || !strings.Contains(all, "Q8_0 is listed twice") || !strings.Contains(all, "not checked against a llama-quantize") {
		t.Fatalf("problems:\n%s", all)
	}
	list, err := DerivedModels(t.TempDir())
	if err != nil || len(list) != 0 {
		t.Fatalf("%v %v", list, err)
	}
}
