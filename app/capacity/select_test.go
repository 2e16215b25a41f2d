package capacity

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// In the small plan every level runs uniform(200 ms TTFT, 1000 ms E2E) unless changed:
// C1 cells generate 8*64 / 8 s = 64 tok/s, C2 cells 8*64 / 4 s = 128 tok/s.

// gapFor is the pause between a client's requests that makes a level of 8 measured requests
// with the given E2E generate at rate tok/s.
func gapFor(clients int, e2e, rate float64) float64 {
	n := float64(8 / clients)
	window := 8 * 64 / rate * 1000
	return (window - n*e2e) / (n - 1)
}

// levelsA changes candidate a's levels (both passes); b keeps the defaults.
func levelsA(p *Plan, f func(slots, clients int) levelSpec) spec {
	return func(k LifetimeKey) []levelSpec {
		out := okLevels(p)(k)
		if k.Candidate == "a" {
			for i, c := range p.ClientLevels(k.Slots) {
				if lv := f(k.Slots, c); lv.clients != 0 {
					out[i] = lv
				}
			}
		}
		return out
	}
}

func wantSelected(t *testing.T, r Result, slots, clients int, decidedBy string, within int) Selection {
	t.Helper()
	s := candOf(t, r, "a").Selected
	if s == nil {
		t.Fatal("nothing selected")
	}
	if s.Slots != slots || s.Clients != clients || s.DecidedBy != decidedBy || len(s.WithinTolerance) != within {
		t.Fatalf("selected P%d/C%d by %s among %d, want P%d/C%d by %s among %d", s.Slots, s.Clients, s.DecidedBy, len(s.WithinTolerance),
			slots, clients, decidedBy, within)
	}
	return *s
}

// TestSelectMaximisesRate: a cell outside the tolerance loses even with better latency.
func TestSelectMaximisesRate(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		if s == 2 && c == 2 { // 2% slower than P1/C2 but faster in every latency
			return levelSpec{clients: 2, ttft: rep(100, 8), gen: rep(800, 8), gap: gapFor(2, 900, 128*0.98)}
		}
		return levelSpec{}
	})}.inputs(t, p)
	r := mustAssemble(t, p, in)
	s := wantSelected(t, r, 1, 2, DecidedByRate, 1)
	if s.GenerationRate != 128 || *s.Gain != 1 {
		t.Errorf("rate %v gain %v, want 128 tok/s and +100%% over P1/C1's 64", s.GenerationRate, *s.Gain)
	}
}

// TestSelectFailingCellNotEligible: the fastest cell fails a gate, so the next one is chosen.
func TestSelectFailingCellNotEligible(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		switch {
		case s == 1 && c == 2:
			return uniform(2, 8, 1200, 1000+300, 0) // 98.5 tok/s but TTFT above the limit
		case s == 2 && c == 2:
			return uniform(2, 8, 200, 1000, gapFor(2, 1000, 100))
		}
		return levelSpec{}
	})}.inputs(t, p)
	wantSelected(t, mustAssemble(t, p, in), 2, 2, DecidedByRate, 1)
}

// Tie-break 1: within the tolerance, lower observed-p95 E2E wins over a higher rate.
func TestSelectTieBreakE2E(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		if s == 2 && c == 2 { // 127.5 tok/s (within 1% of 128), E2E 990 ms < 1000 ms
			return levelSpec{clients: 2, ttft: rep(200, 8), gen: rep(790, 8), gap: gapFor(2, 990, 127.5)}
		}
		return levelSpec{}
	})}.inputs(t, p)
	r := mustAssemble(t, p, in)
	s := wantSelected(t, r, 2, 2, DecidedByE2E, 2)
	if fmt.Sprintf("%.2f", s.GenerationRate) != "127.50" || s.WithinTolerance[1].Slots != 1 {
		t.Errorf("selection %+v", s)
	}
	// With a tolerance of 0.1% only the best rate is eligible.
	p.Limits.ObjectiveTolerance = 0.001
	wantSelected(t, mustAssemble(t, p, in), 1, 2, DecidedByRate, 1)
}

// Tie-break 2: equal E2E, lower observed-p95 TTFT wins.
func TestSelectTieBreakTTFT(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		if s == 2 && c == 2 { // TTFT 150 ms, E2E 1000 ms, 127.5 tok/s
			return levelSpec{clients: 2, ttft: rep(150, 8), gen: rep(850, 8), gap: gapFor(2, 1000, 127.5)}
		}
		return levelSpec{}
	})}.inputs(t, p)
	wantSelected(t, mustAssemble(t, p, in), 2, 2, DecidedByTTFT, 2)
}

// Tie-break 3: equal E2E and TTFT, lower peak RSS wins.
func TestSelectTieBreakPeakRSS(t *testing.T) {
	p := smallPlan()
	in := fixture{
		levels: levelsA(p, func(s, c int) levelSpec {
			if s == 2 && c == 2 {
				return uniform(2, 8, 200, 1000, gapFor(2, 1000, 127.5))
			}
			return levelSpec{}
		}),
		rss: func(k LifetimeKey) []byte {
			if k.Slots == 2 {
				return rssTimeV(1500 * 1024)
			}
			return rssTimeV(2000 * 1024)
		},
	}.inputs(t, p)
	wantSelected(t, mustAssemble(t, p, in), 2, 2, DecidedByPeakRSS, 2)
}

// Tie-break 4: all else equal, fewer slots wins, even at a slightly lower rate.
func TestSelectTieBreakFewerSlots(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		if s == 1 && c == 2 {
			return uniform(2, 8, 200, 1000, gapFor(2, 1000, 127.5))
		}
		return levelSpec{}
	})}.inputs(t, p)
	wantSelected(t, mustAssemble(t, p, in), 1, 2, DecidedBySlots, 2)

	// Slots come before clients: P1/C2 beats P2/C1 at the same rate and latency.
	in = fixture{levels: levelsA(p, func(s, c int) levelSpec {
		switch {
		case s == 1 && c == 1:
			return uniform(1, 8, 200, 1000, gapFor(1, 1000, 60))
		case s == 1 && c == 2:
			return uniform(2, 8, 200, 1000, gapFor(2, 1000, 64))
		case s == 2 && c == 2:
			return uniform(2, 8, 200, 1000, gapFor(2, 1000, 40))
		}
		return levelSpec{}
	})}.inputs(t, p)
	s := wantSelected(t, mustAssemble(t, p, in), 1, 2, DecidedBySlots, 2)
	if w := s.WithinTolerance[1]; w.Slots != 2 || w.Clients != 1 {
		t.Errorf("runner-up %+v, want P2/C1", w)
	}
}

// Tie-break 5: same slots, all else equal, fewer clients wins.
func TestSelectTieBreakFewerClients(t *testing.T) {
	p := smallPlan()
	in := fixture{levels: levelsA(p, func(s, c int) levelSpec {
		switch {
		case s == 1 && c == 2: // 64 tok/s like P1/C1
			return uniform(2, 8, 200, 1000, gapFor(2, 1000, 64))
		case s == 2: // P2 far below
			return uniform(c, 8, 200, 1000, gapFor(c, 1000, 40))
		}
		return levelSpec{}
	})}.inputs(t, p)
	s := wantSelected(t, mustAssemble(t, p, in), 1, 1, DecidedByClients, 2)
	if *s.Gain != 0 {
		t.Errorf("gain %v, want 0 (the base cell itself)", *s.Gain)
	}
}

func rep(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestPassLoadGatesBoundaries: an observed p95 at the limit and a completion rate at the
// minimum pass; just past either fails with the pass-prefixed code; no completed request
// leaves the p95 undefined, which fails.
func TestPassLoadGatesBoundaries(t *testing.T) {
	l := Limits{TTFTMsP95Max: 500, E2EMsP95Max: 2000, CompletionRateMin: 0.9}
	codes := func(gs []GateCheck) []string {
		var out []string
		for _, g := range gs {
			if g.Passed != (g.Failure == "") {
				t.Errorf("%s: passed %v with failure %q", g.Gate, g.Passed, g.Failure)
			}
			if !g.Passed {
				out = append(out, g.Failure)
			}
		}
		return out
	}
	at := PassMetrics{Pass: PassForward, TTFTMsP95: fp(500), E2EMsP95: fp(2000), CompletionRate: 0.9, Completed: 9, Attempted: 10}
	gs := PassLoadGates(at, l)
	if got := codes(gs); len(got) != 0 || len(gs) != 3 {
		t.Errorf("at the limits: failures %v (%d checks), want none of 3", got, len(gs))
	}
	if g := gs[2]; g.Gate != "forward:completion_rate" || g.Detail != "9 of 10" || *g.Observed != 0.9 || *g.Limit != 0.9 {
		t.Errorf("completion check %+v", g)
	}
	past := PassMetrics{Pass: PassReverse, TTFTMsP95: fp(500.001), E2EMsP95: fp(2000.001), CompletionRate: 0.89}
	want := []string{"reverse:" + CodeTTFTAbove, "reverse:" + CodeE2EAbove, "reverse:" + CodeCompletionBelow}
	if got := codes(PassLoadGates(past, l)); !slices.Equal(got, want) {
		t.Errorf("past the limits: failures %v, want %v", got, want)
	}
	none := PassLoadGates(PassMetrics{Pass: PassForward, CompletionRate: 1}, l)
	if got := codes(none); !slices.Equal(got, []string{"forward:" + CodeTTFTAbove, "forward:" + CodeE2EAbove}) ||
		!strings.Contains(none[0].Detail, "undefined") || none[2].Detail != "0 of 0" {
		t.Errorf("no completed request: failures %v, checks %+v", got, none)
	}
	if gs[0].Detail != "" {
		t.Errorf("a defined p95 carries detail %q", gs[0].Detail)
	}
}

// passingCell is a cell that passed every gate with the given figures.
func passingCell(slots, clients int, rate, e2e, ttft, rss float64) CellResult {
	return CellResult{Slots: slots, Clients: clients, GenerationRate: fp(rate), E2EMsP95: fp(e2e), TTFTMsP95: fp(ttft), PeakRSSMiB: rss, Passed: true}
}

// TestSelectPointRule: the selection rule on cells given directly. A cell exactly at the
// tolerance's edge is within it; failing cells and cells without a figure are not eligible;
// the gain needs a positive base rate.
func TestSelectPointRule(t *testing.T) {
	refs := func(s *Selection) string {
		var b strings.Builder
		for _, w := range s.WithinTolerance {
			fmt.Fprintf(&b, "P%d/C%d ", w.Slots, w.Clients)
		}
		return strings.TrimSpace(b.String())
	}
	edge := []CellResult{
		passingCell(1, 1, 100, 900, 100, 1000),
		passingCell(2, 2, 75, 800, 100, 1000), // 100 × (1 - 0.25) exactly: within
		passingCell(4, 4, 74.99, 700, 100, 1000),
		{Slots: 8, Clients: 8, GenerationRate: fp(500), E2EMsP95: fp(1), TTFTMsP95: fp(1), Passed: false},
		{Slots: 8, Clients: 4, E2EMsP95: fp(1), TTFTMsP95: fp(1), Passed: true},
		{Slots: 8, Clients: 2, GenerationRate: fp(500), TTFTMsP95: fp(1), Passed: true},
		{Slots: 8, Clients: 1, GenerationRate: fp(500), E2EMsP95: fp(1), Passed: true},
	}
	s, note := selectPoint(edge, 0.25, fp(50))
	if s == nil || note != "" {
		t.Fatalf("nothing selected: %q", note)
	}
	if s.Slots != 2 || s.Clients != 2 || s.DecidedBy != DecidedByE2E || refs(s) != "P2/C2 P1/C1" || s.GenerationRate != 75 || s.Gain == nil || *s.Gain != 0.5 {
		t.Errorf("selected %+v within %s gain %v; want P2/C2 by %s within P2/C2 P1/C1, gain 0.5", s, refs(s), s.Gain, DecidedByE2E)
	}
	// A lone eligible cell is decided by the rate; a base rate of 0 leaves the gain undefined.
	s, _ = selectPoint(edge[:1], 0.25, fp(0))
	if s == nil || s.DecidedBy != DecidedByRate || refs(s) != "P1/C1" || s.Gain != nil {
		t.Errorf("one cell: %+v", s)
	}
	if s, note := selectPoint(edge[3:], 0.25, nil); s != nil || note != "no cell passes every gate" {
		t.Errorf("no eligible cell: %+v %q", s, note)
	}
	// Every key equal but the clients: fewer clients first.
	tie := []CellResult{passingCell(2, 4, 100, 900, 100, 1000), passingCell(2, 2, 100, 900, 100, 1000)}
	if s, _ := selectPoint(tie, 0.01, nil); s.Clients != 2 || s.DecidedBy != DecidedByClients || s.Gain != nil {
		t.Errorf("tie on clients: %+v", s)
	}
}

// TestScalingOfDiagonal: only diagonal cells with a positive rate are points; exactly two
// suffice; the TTFT growth is the last diagonal p95 over the first, undefined when the first
// is not positive.
func TestScalingOfDiagonal(t *testing.T) {
	cells := []CellResult{
		{Slots: 1, Clients: 1, GenerationRate: fp(50), TTFTMsP95: fp(100)},
		{Slots: 1, Clients: 2, GenerationRate: fp(400), TTFTMsP95: fp(1)},
		{Slots: 2, Clients: 2, GenerationRate: fp(0), TTFTMsP95: fp(1)},
		{Slots: 4, Clients: 4, GenerationRate: fp(150), TTFTMsP95: fp(350)},
		{Slots: 8, Clients: 8, TTFTMsP95: fp(1)},
	}
	r, note := scalingOf(cells, 0.1)
	if r == nil {
		t.Fatalf("no scaling: %q", note)
	}
	if len(r.Points) != 2 || r.Points[0].X != 1 || r.Points[1].X != 4 || r.Speedup != 3 || r.TTFTGrowth == nil || *r.TTFTGrowth != 3.5 {
		t.Errorf("scaling %+v growth %v; want points P1 and P4, speedup 3, TTFT growth 3.5", r, r.TTFTGrowth)
	}
	cells[0].TTFTMsP95 = fp(0)
	if r, _ := scalingOf(cells, 0.1); r == nil || r.TTFTGrowth != nil {
		t.Errorf("first diagonal TTFT 0: %+v, want the growth undefined", r)
	}
	if r, note := scalingOf(cells[1:], 0.1); r != nil || note != "scaling needs at least two diagonal cells (clients = slots) with a rate; have 1" {
		t.Errorf("one diagonal cell: %+v %q", r, note)
	}
}
