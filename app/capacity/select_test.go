package capacity

import (
	"fmt"
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
