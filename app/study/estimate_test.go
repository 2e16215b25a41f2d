package study

import (
	"strings"
	"testing"
	"time"
)

// The estimate from a known history: pp512 at 1,024 t/s and tg128 at 128 t/s at depth 0, in a
// past leg of 10 s with 2 repetitions (4.5 s of tests with their warmups: 5.5 s overhead).
func TestEstimateDurationFromHistory(t *testing.T) {
	hist := map[string]BenchHistory{"tiny": {
		Tests: []HistoryTest{
			{LegID: 1, NPrompt: 512, AvgNs: 500_000_000, Reps: 2},
			{LegID: 1, NGen: 128, AvgNs: 1_000_000_000, Reps: 2},
		},
		Legs: []HistoryLeg{{ID: 1, Wall: 10 * time.Second}},
	}}
	plan := func(depths ...int) *Plan {
		p := &Plan{Schema: SchemaThroughput, Name: "e", Models: []Model{{ID: "tiny", Path: "/m/tiny.gguf"}, {ID: "moe", Path: "/m/moe.gguf"}},
			Axes: Axes{Depths: depths, NPrompt: []int{512}, NGen: []int{128}, Reps: 2}, Split: SplitCombined}
		p.Defaults()
		return p
	}
	e, err := EstimateDuration(plan(0), "", hist)
	if err != nil {
		t.Fatal(err)
	}
	// One leg of tiny: 5.5 s overhead + 3 x 0.5 s + 3 x 1 s; moe has no history.
	if e.Total != 10*time.Second || e.Basis != 1 || len(e.Missing) != 1 || e.Missing[0] != "moe" {
		t.Fatalf("depth 0: %+v", e)
	}
	if s := e.String(); !strings.HasPrefix(s, "≈ 10s (from 1 past leg(s)") || !strings.Contains(s, "plus the legs of moe, never measured here") {
		t.Fatalf("words: %q", s)
	}
	// Depth 128 adds both tests again at the nearest measured rates, each repetition (and the
	// warmup) first filling 128 tokens of context at 1,024 t/s: 3 x (0.5 + 0.125) + 3 x (1 + 0.125).
	e, err = EstimateDuration(plan(0, 128), "", hist)
	if err != nil {
		t.Fatal(err)
	}
	if want := 15250 * time.Millisecond; e.Total != want {
		t.Fatalf("depths 0,128: %v, want %v", e.Total, want)
	}
	// No history at all: no estimate, said plainly.
	e, _ = EstimateDuration(plan(0), "", nil)
	if e.Basis != 0 || e.Total != 0 || !strings.HasPrefix(e.String(), "no estimate yet") {
		t.Fatalf("no history: %+v %q", e, e.String())
	}
	// Rates between two measured depths are interpolated.
	var c rateCurve
	c.add(0, 100)
	c.add(1000, 50)
	c.add(1000, 70)
	if r, _ := c.at(500); r != 80 {
		t.Fatalf("interpolated rate %v, want 80", r)
	}
}
