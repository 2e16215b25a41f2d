package ui

import (
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/plots"
)

// liveCapacity gathers a run's events into per-pass cells judged by the load-SLO gates of
// app/capacity, and judges each server lifetime's backend markers and peak RSS as it ends (the
// spreads across passes and the quality gate need the whole run: the assembly applies them).
type liveCapacity struct {
	plan     *capacity.Plan
	reqs     map[string][]capacity.RequestRecord // lifetime|clients -> measured requests
	rows     []capRow
	current  string // candidate being measured
	servers  int
	failed   int
	crashed  int
	passed   int
	failures map[string]int
	// Backend markers and peak RSS, judged per server lifetime as each one ends (the same
	// checks the assembly applies per cell).
	markerLives  int      // lifetimes of candidates with markers, ended
	markerBad    int      // of those, lifetimes with a marker rule broken
	markerFailed []string // "lifetime: must \"re\" missing" …
	rssMaxMiB    float64
	rssOver      []string // lifetimes above the plan's peak RSS limit
}

func newLiveCapacity(p *capacity.Plan) *liveCapacity {
	return &liveCapacity{plan: p, reqs: map[string][]capacity.RequestRecord{}, failures: map[string]int{}}
}

// observe takes one event; true when the envelope changed.
func (l *liveCapacity) observe(ev capacity.RunEvent) bool {
	if l.plan == nil {
		return false
	}
	key := fmt.Sprintf("%s|%d", ev.Lifetime, ev.Clients)
	switch ev.Type {
	case capacity.ServerReady:
		l.servers++
	case capacity.ServerFailed:
		l.failed++
	case capacity.LifetimeDone:
		if s := ev.Server; s != nil && s.Unexpect {
			l.crashed++
		}
		l.judgeLifetime(ev)
	case capacity.RequestDone:
		if r := ev.Request; r != nil && r.Phase == capacity.PhaseMeasured {
			l.reqs[key] = append(l.reqs[key], *r)
		}
	case capacity.CellDone:
		lk, err := capacity.ParseLifetimeKey(ev.Lifetime)
		if err != nil {
			return false
		}
		m := capacity.CellMetrics(lk.Pass, l.reqs[key], l.plan.NPredict)
		delete(l.reqs, key)
		row := capRow{Candidate: lk.Candidate, Pass: lk.Pass, Slots: lk.Slots, Clients: ev.Clients, Rate: m.GenerationRate,
			TTFT: m.TTFTMsP95, E2E: m.E2EMsP95, Verdict: "PASS", Failures: []string{}}
		for _, g := range capacity.PassLoadGates(m, l.plan.Limits) {
			if !g.Passed {
				row.Failures = append(row.Failures, g.Failure)
				l.failures[g.Failure]++
			}
		}
		if len(row.Failures) > 0 {
			row.Verdict = "FAIL"
		} else {
			l.passed++
		}
		l.rows = append(l.rows, row)
		l.current = lk.Candidate
		return true
	}
	return false
}

// gates is the gate lights line: cells measured, load SLO pass/fail with the codes, servers.
func (l *liveCapacity) gates() string {
	n := len(l.rows)
	s := fmt.Sprintf("load SLO per pass: %d/%d cell-passes PASS", l.passed, n)
	if n > l.passed {
		codes := make([]string, 0, len(l.failures))
		for c, k := range l.failures {
			codes = append(codes, fmt.Sprintf("%s ×%d", c, k))
		}
		sort.Strings(codes)
		s += " · FAIL: " + strings.Join(codes, ", ")
	}
	s += fmt.Sprintf(" · servers started %d", l.servers)
	if l.failed > 0 {
		s += fmt.Sprintf(" · SERVER FAILED %d", l.failed)
	}
	if l.crashed > 0 {
		s += fmt.Sprintf(" · SERVER ENDED ON ITS OWN %d", l.crashed)
	}
	if l.markerLives > 0 {
		if len(l.markerFailed) == 0 {
			s += fmt.Sprintf(" · backend markers: %d/%d lifetimes PASS", l.markerLives, l.markerLives)
		} else {
			s += fmt.Sprintf(" · backend markers FAIL in %d/%d lifetimes: %s", l.markerBad, l.markerLives, strings.Join(l.markerFailed, "; "))
		}
	}
	if l.rssMaxMiB > 0 {
		s += fmt.Sprintf(" · peak RSS max %.0f MiB (limit %.0f)", l.rssMaxMiB, l.plan.Limits.PeakRSSMiBMax)
		if len(l.rssOver) > 0 {
			s += " FAIL in " + strings.Join(l.rssOver, ", ")
		}
	}
	return s + " · spreads and quality are judged at assembly"
}

// judgeLifetime applies the backend-marker and peak-RSS gates to a lifetime that ended.
func (l *liveCapacity) judgeLifetime(ev capacity.RunEvent) {
	s := ev.Server
	lk, err := capacity.ParseLifetimeKey(ev.Lifetime)
	if s == nil || err != nil {
		return
	}
	if r := s.RSS; r != nil && r.KiB > 0 {
		mib := float64(r.KiB) / 1024
		l.rssMaxMiB = max(l.rssMaxMiB, mib)
		if lim := l.plan.Limits.PeakRSSMiBMax; lim > 0 && mib > lim {
			l.rssOver = append(l.rssOver, fmt.Sprintf("%s (%.0f MiB)", ev.Lifetime, mib))
		}
	}
	cand, ok := l.plan.Candidate(lk.Candidate)
	if !ok || len(cand.Markers.Must)+len(cand.Markers.MustNot) == 0 || s.Evidence == nil {
		return
	}
	l.markerLives++
	bad := false
	defer func() {
		if bad {
			l.markerBad++
		}
	}()
	for _, m := range s.Evidence.Markers {
		if m.Ok {
			continue
		}
		what := fmt.Sprintf("%s: must %q missing", ev.Lifetime, m.Regex)
		if m.Rule == "must_not" {
			what = fmt.Sprintf("%s: must_not %q present (line %d)", ev.Lifetime, m.Regex, m.Line)
		}
		l.markerFailed = append(l.markerFailed, what)
		bad = true
	}
}

// slotsChart is aggregate generation rate against slots: per candidate, the best rate measured
// so far at each slot count (its diagonal for concurrency plans).
func (l *liveCapacity) slotsChart() plots.Chart {
	best := map[string]map[int]float64{}
	var order []string
	for _, r := range l.rows {
		if r.Rate == nil {
			continue
		}
		if best[r.Candidate] == nil {
			best[r.Candidate] = map[int]float64{}
			order = append(order, r.Candidate)
		}
		best[r.Candidate][r.Slots] = max(best[r.Candidate][r.Slots], *r.Rate)
	}
	c := plots.SlotsChart{Show: "aggregate", Meta: plots.Meta{Model: "live, this run: best measured rate per P"}}
	for _, cand := range order {
		s := plots.SlotsSeries{Label: cand}
		for p, rate := range best[cand] {
			s.Points = append(s.Points, plots.SlotsPoint{Slots: p, Aggregate: rate})
		}
		sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].Slots < s.Points[j].Slots })
		c.Series = append(c.Series, s)
	}
	return c
}

// gridChart is the envelope grid of the candidate being measured: cells measured so far under
// the load-SLO gates of every pass seen, the others greyed out.
func (l *liveCapacity) gridChart() plots.Chart {
	p := l.plan
	g := plots.EnvelopeGrid{Candidate: l.current + " (live: load SLO per pass)", Slots: p.Slots}
	clients := map[int]bool{}
	for _, s := range p.Slots {
		for _, c := range p.ClientLevels(s) {
			clients[c] = true
		}
	}
	for c := range clients {
		g.Clients = append(g.Clients, c)
	}
	sort.Ints(g.Clients)
	g.Cells = make([][]plots.EnvelopeCell, len(g.Slots))
	for i, s := range g.Slots {
		g.Cells[i] = make([]plots.EnvelopeCell, len(g.Clients))
		for j, c := range g.Clients {
			cell := plots.EnvelopeCell{Missing: true}
			for _, r := range l.rows {
				if r.Candidate != l.current || r.Slots != s || r.Clients != c {
					continue
				}
				if cell.Missing {
					cell = plots.EnvelopeCell{Pass: true}
				}
				cell.Pass = cell.Pass && r.Verdict == "PASS"
				cell.Failures = append(cell.Failures, r.Failures...)
				if r.Rate != nil {
					cell.Rate = *r.Rate
				}
				if r.E2E != nil {
					cell.E2EP95 = *r.E2E
				}
				if r.TTFT != nil {
					cell.TTFTP95 = *r.TTFT
				}
			}
			g.Cells[i][j] = cell
		}
	}
	return plots.EnvelopeChart{Meta: plots.Meta{Model: "live, this run"}, Grid: g}
}
