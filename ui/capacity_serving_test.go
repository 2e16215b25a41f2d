package ui

import (
	"strings"
	"testing"

	"sparkbench/app/capacity"
	"sparkbench/plots"
)

// The Serving tab states each lifetime's knee as show and the receipt do (the sustain rule's
// saturation line, in the schedule's unit), and a probe the server could not keep up with reads
// FAIL rate:not_sustained in the Verdict column — never PASS.
func TestServingTabShowsTheKnee(t *testing.T) {
	newTestApp(t)
	for _, tc := range []struct{ plan, unit string }{
		{"../docs/examples/serving-poisson.json", "req/s"},
		{"../docs/examples/serving-multi-turn.json", "conversations/s"},
	} {
		p, err := capacity.Load(tc.plan)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Serving.RateUnit(); got != tc.unit {
			t.Fatalf("%s: unit %q, want %q", tc.plan, got, tc.unit)
		}
		f := func(x float64) *float64 { return &x }
		st := &capacity.Saturation{Found: true, KneeRate: f(4), LowestUnsustained: f(6), SaturatedRate: f(4.68),
			SkippedSweepRates: []float64{8}, MinRequests: 24, MinSeconds: 5, Note: "the server stopped keeping up between 4 and 6"}
		sv := capacity.ServingResult{Pass: "forward", Slots: 1, MaxSweepRate: f(4), Saturation: st, Probes: []capacity.ProbeResult{
			{Probe: 1, Kind: "sweep", OfferedRate: 4, Passed: true},
			{Probe: 2, Kind: "sweep", OfferedRate: 6, Failures: []string{capacity.CodeNotSustained}},
		}}
		r := &capacity.Result{Plan: p, Candidates: []capacity.CandidateResult{{ID: p.Candidates[0].ID, Serving: []capacity.ServingResult{sv}}}}
		var tab *servingTab
		var text string
		Locked(func() {
			tab = newServingTab()
			tab.show(p, r, nil, plots.Meta{})
			text = tab.Search.Text
		})
		defer Locked(tab.close)
		want := "knee: " + capacity.SaturationLine(st, tc.unit)
		if !strings.Contains(text, want) {
			t.Errorf("%s: the Search line does not state the knee\n got: %s\nwant: …%s…", tc.plan, text, want)
		}
		if !strings.Contains(text, "largest sweep rate meeting every SLO 4 "+tc.unit) {
			t.Errorf("%s: the sweep's answer is not in the schedule's unit %s: %s", tc.plan, tc.unit, text)
		}
		if len(tab.rows) != 2 {
			t.Fatalf("%s: %d probe rows, want 2", tc.plan, len(tab.rows))
		}
		if v := servingVerdict(tab.rows[1]); !strings.HasPrefix(v, "FAIL") || !strings.Contains(v, capacity.CodeNotSustained) {
			t.Errorf("%s: the unsustained probe's verdict reads %q", tc.plan, v)
		}
		if v := servingVerdict(tab.rows[0]); v != "PASS" {
			t.Errorf("%s: the sustained probe's verdict reads %q", tc.plan, v)
		}
	}
}
