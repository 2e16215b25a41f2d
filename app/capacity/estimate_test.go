package capacity

import (
	"strings"
	"testing"
	"time"

	"sparkbench/app/study"
)

// The estimate from a known history: pp at 1,000 t/s and tg at 100 t/s, a past leg of 10 s
// whose tests took 5.376 s (4.624 s to load and warm up).
func TestEstimateDurationFromHistory(t *testing.T) {
	hist := map[string]study.BenchHistory{"tiny": {
		Tests: []study.HistoryTest{
			{LegID: 1, NPrompt: 512, AvgNs: 512_000_000, Reps: 2},
			{LegID: 1, NGen: 128, AvgNs: 1_280_000_000, Reps: 2},
		},
		Legs: []study.HistoryLeg{{ID: 1, Wall: 10 * time.Second}},
	}}
	w := 1
	p := &Plan{Schema: SchemaCapacity, Name: "e", Slots: []int{1, 2}, Clients: []int{1, 2}, Passes: []string{PassForward},
		Warmups: &w, Measured: 2, NPredict: 32,
		Candidates: []Candidate{{ID: "tiny", Label: "tiny"}, {ID: "other", Label: "other"}},
		Limits:     Limits{TTFTMsP95Max: 1, E2EMsP95Max: 1, PeakRSSMiBMax: 1}}
	e := EstimateDuration(p, hist)
	// A request: 96/1000 + 32/100 = 0.416 s; 3 requests a cell, 4 cells, 2 server starts.
	// Hi: 2 x 4.624 + 4 x 3 x 0.416 = 14.24 s; Lo: P2/C2 takes 2 turns instead of 3.
	if e.Hi != 14240*time.Millisecond || e.Lo != 13824*time.Millisecond || e.Basis != 1 || len(e.Missing) != 1 || e.Missing[0] != "other" {
		t.Fatalf("estimate %+v", e)
	}
	if s := e.String(); !strings.HasPrefix(s, "≈ 14s (from 1 past") || !strings.Contains(s, "plus other, never measured here") {
		t.Fatalf("words %q", s)
	}
	if p.Candidates[0].ServerFlags != nil {
		t.Fatal("the estimate changed the plan")
	}
	if e := EstimateDuration(p, nil); e.Basis != 0 || !strings.HasPrefix(e.String(), "no estimate yet") {
		t.Fatalf("no history: %+v", e)
	}
}
