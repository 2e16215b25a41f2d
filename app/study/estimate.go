package study

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// BenchHistory is what this notebook measured before on one model file (by SHA-256): the
// tests of its finished, ok bench legs and those legs' wall times.
type BenchHistory struct {
	Tests []HistoryTest
	Legs  []HistoryLeg
}

// HistoryTest is one result row of a past leg: its shape, the mean time of a repetition and
// how many repetitions it had.
type HistoryTest struct {
	LegID int64
	// Config names the row's configuration (the notebook's configuration row: the same
	// settings, the same id): rows of one cell are one test at one depth in one configuration.
	Config               int64
	NPrompt, NGen, Depth int
	AvgNs                int64
	Reps                 int
	// SamplesNs are the repetitions' times (ns), for the repetition planner's CV.
	SamplesNs []float64
}

// HistoryLeg is a past leg's wall time, from its start to its end.
type HistoryLeg struct {
	ID   int64
	Wall time.Duration
}

// Estimate is a plan's estimated duration from the history of its models.
type Estimate struct {
	Total time.Duration // the legs of the models with history
	// Missing are the model IDs without history: their legs are not in Total.
	Missing []string
	// Basis is how many past legs the estimate rests on.
	Basis int
}

// String says the estimate in words, e.g. "≈ 3m20s (from 12 past legs of these models on this
// machine)".
func (e Estimate) String() string {
	if e.Basis == 0 {
		return "no estimate yet: no model of this plan was measured in this notebook; the first leg's times give the ETA while it runs"
	}
	s := fmt.Sprintf("≈ %s (from %d past leg(s) of these models in this notebook)", roundDuration(e.Total), e.Basis)
	if len(e.Missing) > 0 {
		s += fmt.Sprintf(", plus the legs of %s, never measured here", strings.Join(e.Missing, ", "))
	}
	return s
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(10 * time.Second)
	case d >= 10*time.Second:
		return d.Round(time.Second)
	default:
		return d.Round(100 * time.Millisecond)
	}
}

// rateCurve is one kind of test's rate (tokens per second) against depth, from history.
type rateCurve struct{ depth, rate []float64 }

func (c *rateCurve) add(depth int, rate float64) {
	c.depth = append(c.depth, float64(depth))
	c.rate = append(c.rate, rate)
}

// at is the rate at depth d: the mean of the rows at the nearest measured depths, linear
// between the two that bracket d, the nearest one's outside the measured range.
func (c *rateCurve) at(d int) (float64, bool) {
	if len(c.depth) == 0 {
		return 0, false
	}
	by := map[float64][]float64{}
	for i, x := range c.depth {
		by[x] = append(by[x], c.rate[i])
	}
	xs := make([]float64, 0, len(by))
	for x := range by {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	mean := func(x float64) float64 {
		s := 0.0
		for _, r := range by[x] {
			s += r
		}
		return s / float64(len(by[x]))
	}
	x := float64(d)
	switch {
	case x <= xs[0]:
		return mean(xs[0]), true
	case x >= xs[len(xs)-1]:
		return mean(xs[len(xs)-1]), true
	}
	i := sort.SearchFloat64s(xs, x)
	if xs[i] == x {
		return mean(x), true
	}
	x0, x1 := xs[i-1], xs[i]
	y0, y1 := mean(x0), mean(x1)
	return y0 + (y1-y0)*(x-x0)/(x1-x0), true
}

// modelRates is what the history says of one model: pp and tg rates by depth, and the time a
// leg spends outside its timed repetitions (loading the model, filling the context to depth,
// warmup runs), per model and leg.
type modelRates struct {
	pp, tg   rateCurve
	overhead time.Duration
	legs     int
}

func ratesOf(h BenchHistory) (*modelRates, bool) {
	m := &modelRates{}
	for _, t := range h.Tests {
		if t.AvgNs <= 0 {
			continue
		}
		sec := float64(t.AvgNs) / 1e9
		switch {
		case t.NPrompt > 0 && t.NGen == 0:
			m.pp.add(t.Depth, float64(t.NPrompt)/sec)
		case t.NGen > 0 && t.NPrompt == 0:
			m.tg.add(t.Depth, float64(t.NGen)/sec)
		}
	}
	if len(m.pp.depth) == 0 && len(m.tg.depth) == 0 {
		return nil, false
	}
	// A past leg's overhead: its wall time less what its tests took by this model of time.
	var over []time.Duration
	byLeg := map[int64][]HistoryTest{}
	for _, t := range h.Tests {
		byLeg[t.LegID] = append(byLeg[t.LegID], t)
	}
	for _, l := range h.Legs {
		ts := byLeg[l.ID]
		if len(ts) == 0 || l.Wall <= 0 {
			continue
		}
		var timed time.Duration
		for _, t := range ts {
			timed += m.testTime(t.NPrompt, t.NGen, t.Depth, t.Reps)
		}
		over = append(over, max(l.Wall-timed, 0))
	}
	m.legs = len(over)
	if len(over) > 0 {
		slices.Sort(over)
		m.overhead = over[len(over)/2]
	}
	return m, true
}

// testTime is one test's time in a leg: a warmup run and reps repetitions, each filling the
// context to depth first (untimed by llama-bench, but on the clock).
func (m *modelRates) testTime(nPrompt, nGen, depth, reps int) time.Duration {
	sec := 0.0
	pp := func(d int) float64 {
		if r, ok := m.pp.at(d); ok && r > 0 {
			return r
		}
		if r, ok := m.tg.at(d); ok && r > 0 {
			return r * 10 // no pp history: prompt processing is far faster than generation
		}
		return math.Inf(1)
	}
	if nPrompt > 0 {
		sec += float64(nPrompt) / pp(depth)
	}
	if nGen > 0 {
		r, ok := m.tg.at(depth)
		if !ok || r <= 0 {
			r = pp(depth) / 10
		}
		sec += float64(nGen) / r
	}
	if depth > 0 {
		sec += float64(depth) / pp(depth/2)
	}
	return time.Duration(sec * float64(reps+1) * 1e9)
}

// EstimateDuration estimates how long the plan's legs take from the history of its models
// (by model ID). It is rough by nature: the history may come from other settings (ubatch,
// flash attention, KV types, threads) than the plan's.
func EstimateDuration(p *Plan, planDir string, history map[string]BenchHistory) (Estimate, error) {
	legs, err := Expand(p, planDir)
	if err != nil {
		return Estimate{}, err
	}
	rates := map[string]*modelRates{}
	var est Estimate
	for _, m := range p.Models {
		if r, ok := ratesOf(history[m.ID]); ok {
			rates[m.ID] = r
			est.Basis += r.legs
		} else {
			est.Missing = append(est.Missing, m.ID)
		}
	}
	a := p.Axes
	combos := max(1, len(a.Batch)) * max(1, len(a.Ubatch)) * max(1, len(a.FlashAttn)) * max(1, len(a.NGL)) * max(1, len(a.Threads))
	for _, l := range legs {
		for _, id := range l.Models {
			r := rates[id]
			if r == nil {
				continue
			}
			est.Total += r.overhead
			for _, d := range l.Depths {
				for _, np := range a.NPrompt {
					if np > 0 {
						est.Total += time.Duration(combos) * r.testTime(np, 0, d, a.Reps)
					}
				}
				for _, ng := range a.NGen {
					if ng > 0 {
						est.Total += time.Duration(combos) * r.testTime(0, ng, d, a.Reps)
					}
				}
			}
		}
	}
	return est, nil
}

// RateModel is what a model's history says of its speed on this machine, for estimates of
// other kinds of study (capacity): prompt processing and generation rates by depth, and the
// time a leg spends loading the model and warming up.
type RateModel struct{ m *modelRates }

// RatesOf is the rate model of one model's history; false when the history has no usable row.
func RatesOf(h BenchHistory) (RateModel, bool) {
	m, ok := ratesOf(h)
	return RateModel{m}, ok
}

// Rates are the prompt-processing and generation rates (tokens per second) at a depth.
func (r RateModel) Rates(depth int) (pp, tg float64) {
	pp, _ = r.m.pp.at(depth)
	tg, _ = r.m.tg.at(depth)
	switch {
	case pp <= 0 && tg > 0:
		pp = tg * 10
	case tg <= 0 && pp > 0:
		tg = pp / 10
	}
	return pp, tg
}

// Overhead is the median time a past leg spent outside its tests (model load, warmup).
func (r RateModel) Overhead() time.Duration { return r.m.overhead }

// Legs is how many past legs the model rests on.
func (r RateModel) Legs() int { return r.m.legs }
