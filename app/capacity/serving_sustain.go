package capacity

import (
	"fmt"
	"math"
	"sort"
)

// The sustain rule of an open-loop probe (docs/serving.md, "Sustained rates"): a probe passes
// only when, over its measured window, completions keep up with arrivals. A server past its
// saturation point answers every request eventually, and over a short window its latencies may
// still meet the SLO while its queue grows without bound: such a rate is not one it can serve.
const (
	// CodeNotSustained is the failure of a probe whose completions fell behind its arrivals.
	CodeNotSustained = "rate:not_sustained"
	// SustainRatioMin: the completions per second must be at least this fraction of the
	// schedule's own rate.
	SustainRatioMin = 0.95
	// SustainGrowthFloor and SustainGrowthShare bound the in-flight growth: the time-averaged
	// count of requests due and not ended over the last third of the arrival window may exceed
	// the middle third's by at most max(floor, share × arrivals).
	SustainGrowthFloor = 3.0
	SustainGrowthShare = 0.1
	// Defaults of the measured window (serving.sustain): every probe of a plan sends at least
	// this many measured requests, spanning at least this many seconds at its rate.
	DefaultSustainMinRequests = 32
	DefaultSustainMinSeconds  = 10.0
	maxProbeRequests          = 100000
)

// SustainWindow is the least a probe's measured window holds under the sustain rule: at least
// MinRequests measured requests and MinSeconds of arrivals at the probe's rate (a probe sends
// max(requests, min_requests, ceil(rate × min_seconds) + 1) requests). Written only when given,
// each field too: a plan without it keeps its bytes and SHA-256 and uses the defaults.
type SustainWindow struct {
	MinRequests *int     `json:"min_requests,omitempty"`
	MinSeconds  *float64 `json:"min_seconds,omitempty"`
}

// SustainMinRequests is the plan's minimum measured requests per probe (its default when the
// plan does not write it).
func (s *Serving) SustainMinRequests() int {
	if s.Sustain != nil && s.Sustain.MinRequests != nil {
		return *s.Sustain.MinRequests
	}
	return DefaultSustainMinRequests
}

// SustainMinSeconds is the plan's minimum arrival window per probe, in seconds.
func (s *Serving) SustainMinSeconds() float64 {
	if s.Sustain != nil && s.Sustain.MinSeconds != nil {
		return *s.Sustain.MinSeconds
	}
	return DefaultSustainMinSeconds
}

// ProbeRequests is how many measured requests (conversations, for multi_turn) a probe at rate
// sends: requests, raised to the sustain window's minimum count and to enough arrivals to span
// its minimum seconds at that rate, at most 100000.
func (s *Serving) ProbeRequests(rate float64) int {
	n := max(s.Requests, s.SustainMinRequests())
	if rate > 0 {
		if k := math.Ceil(rate*s.SustainMinSeconds()) + 1; k > float64(n) {
			n = int(min(k, maxProbeRequests))
		}
	}
	return min(n, maxProbeRequests)
}

// probeRequests is the probe's count under a serving file's rules: v1 files were made when
// every probe sent the plan's requests.
func (s *Serving) probeRequests(rules int, rate float64) int {
	if rules < ServingRulesSustain {
		return s.Requests
	}
	return s.ProbeRequests(rate)
}

func (v *validator) checkSustain(s *Serving) {
	w := s.Sustain
	if w == nil {
		return
	}
	if n := w.MinRequests; n != nil && (*n < 2 || *n > maxProbeRequests) {
		v.errf("serving.sustain.min_requests", "%d: want 2 to 100000 measured requests per probe; or leave it out (default %d)", *n, DefaultSustainMinRequests)
	}
	if x := w.MinSeconds; x != nil && !(*x > 0 && *x <= 3600) {
		v.errf("serving.sustain.min_seconds", "%g: want a window in (0, 3600] seconds; or leave it out (default %g)", *x, DefaultSustainMinSeconds)
	}
}

// SustainCheck is a probe's sustain rule, measured: the schedule's own rate against the
// completions per second, and the in-flight count over the window.
type SustainCheck struct {
	// Arrivals are the schedule's arrivals (requests, or conversations' first turns) and
	// WindowS the seconds from the first to the last of them.
	Arrivals int     `json:"arrivals"`
	WindowS  float64 `json:"window_s"`
	// OfferedRate is the schedule's own rate, (arrivals - 1) / window; DepartureRate the
	// completed arrivals per second from the first completion to the last (null: fewer than
	// two completed); Ratio the second over the first.
	OfferedRate   *float64 `json:"offered_rate"`
	DepartureRate *float64 `json:"departure_rate"`
	Ratio         *float64 `json:"ratio"`
	// InFlightMiddle and InFlightLast are the time-averaged counts of arrivals due and not
	// ended over the middle and last thirds of the window; InFlightGrowth the second minus the
	// first, GrowthLimit what it may be.
	InFlightMiddle float64 `json:"in_flight_middle"`
	InFlightLast   float64 `json:"in_flight_last"`
	InFlightGrowth float64 `json:"in_flight_growth"`
	GrowthLimit    float64 `json:"in_flight_growth_limit"`
	Sustained      bool    `json:"sustained"`
}

// arrivalUnit is one arrival of a probe's schedule: a request, or a whole conversation (due
// at its first turn's scheduled time, ended at its last turn's end, completed when every
// turn completed).
type arrivalUnit struct {
	due, end  float64
	completed bool
}

// arrivalUnits groups a probe's measured records into its schedule's arrivals.
func arrivalUnits(recs []ServingRecord, ok func(ServingRecord) bool) []arrivalUnit {
	byConv := map[int]*arrivalUnit{}
	var out []arrivalUnit
	for _, r := range recs {
		if r.ScheduledMs == nil {
			continue
		}
		if r.Turn == 0 {
			out = append(out, arrivalUnit{due: *r.ScheduledMs, end: r.EndMs, completed: ok(r)})
			continue
		}
		u := byConv[r.Conversation]
		if u == nil {
			u = &arrivalUnit{due: math.Inf(1), end: math.Inf(-1), completed: true}
			byConv[r.Conversation] = u
		}
		if r.Turn == 1 {
			u.due = *r.ScheduledMs
		}
		u.end = max(u.end, r.EndMs)
		u.completed = u.completed && ok(r)
	}
	convs := make([]int, 0, len(byConv))
	for c := range byConv {
		convs = append(convs, c)
	}
	sort.Ints(convs)
	for _, c := range convs {
		if u := byConv[c]; !math.IsInf(u.due, 1) {
			out = append(out, *u)
		}
	}
	return out
}

// Sustain measures the sustain rule over a probe's arrivals.
func Sustain(units []arrivalUnit) SustainCheck {
	sc := SustainCheck{Arrivals: len(units)}
	sc.GrowthLimit = max(SustainGrowthFloor, SustainGrowthShare*float64(len(units)))
	if len(units) < 2 {
		return sc
	}
	due := make([]float64, 0, len(units))
	ends := make([]float64, 0, len(units))
	var done []float64
	for _, u := range units {
		due = append(due, u.due)
		ends = append(ends, u.end)
		if u.completed {
			done = append(done, u.end)
		}
	}
	sort.Float64s(due)
	sort.Float64s(ends)
	sort.Float64s(done)
	first, last := due[0], due[len(due)-1]
	sc.WindowS = (last - first) / 1000
	if last > first {
		sc.OfferedRate = fptr(float64(len(due)-1) / (last - first) * 1000)
	}
	if n := len(done); n >= 2 && done[n-1] > done[0] {
		sc.DepartureRate = fptr(float64(n-1) / (done[n-1] - done[0]) * 1000)
	}
	if sc.OfferedRate != nil && sc.DepartureRate != nil {
		sc.Ratio = fptr(*sc.DepartureRate / *sc.OfferedRate)
	}
	span := last - first
	sc.InFlightMiddle = meanInFlight(due, ends, first+span/3, first+2*span/3)
	sc.InFlightLast = meanInFlight(due, ends, first+2*span/3, last)
	sc.InFlightGrowth = sc.InFlightLast - sc.InFlightMiddle
	sc.Sustained = sc.Ratio != nil && *sc.Ratio >= SustainRatioMin && sc.InFlightGrowth <= sc.GrowthLimit
	return sc
}

// meanInFlight is the time average over [a, b] of the arrivals due and not ended (due and
// ends sorted), sampled at 240 evenly spaced instants.
func meanInFlight(due, ends []float64, a, b float64) float64 {
	const k = 240
	if !(b > a) {
		return 0
	}
	sum := 0
	for j := range k {
		t := a + (b-a)*(float64(j)+0.5)/k
		sum += sort.SearchFloat64s(due, math.Nextafter(t, math.Inf(1))) - sort.SearchFloat64s(ends, math.Nextafter(t, math.Inf(1)))
	}
	return float64(sum) / k
}

// gate is the sustain rule as a probe check (code rate:not_sustained).
func (sc SustainCheck) gate() GateCheck {
	g := GateCheck{Gate: "sustained", Observed: sc.Ratio, Limit: fptr(SustainRatioMin), Passed: sc.Sustained}
	if sc.Sustained {
		return g
	}
	switch {
	case sc.OfferedRate == nil:
		g.Detail = "the schedule's arrivals span no time: the window shows nothing sustained"
	case sc.Ratio == nil:
		g.Detail = fmt.Sprintf("fewer than 2 of %d arrivals completed: completions did not keep up with arrivals at %s/s", sc.Arrivals, f3s(*sc.OfferedRate))
	case *sc.Ratio < SustainRatioMin:
		g.Detail = fmt.Sprintf("completions %s/s against arrivals %s/s (%.1f%% < %.0f%%) over %s s: completions fell behind the arrivals",
			f3s(*sc.DepartureRate), f3s(*sc.OfferedRate), *sc.Ratio*100, SustainRatioMin*100, f3s(sc.WindowS))
	default:
		g.Detail = fmt.Sprintf("in flight grew from %.1f (the window's middle third, time-averaged) to %.1f (its last third), by %.1f, at most %.1f: completions fell behind the arrivals",
			sc.InFlightMiddle, sc.InFlightLast, sc.InFlightGrowth, sc.GrowthLimit)
	}
	return g
}

func f3s(x float64) string { return fmt.Sprintf("%.3g", x) }

// Saturation is where a lifetime's probes stopped being sustained (serving files of the
// sustain rules only): the knee is the highest sustained offered rate below the lowest one
// that was not; the departure rate at that lowest probe is what the server managed while
// saturated. The sweep stops climbing at its first unsustained rate (SkippedSweepRates).
type Saturation struct {
	Found             bool      `json:"found"`
	KneeRate          *float64  `json:"knee_rate"`
	LowestUnsustained *float64  `json:"lowest_unsustained_rate"`
	SaturatedRate     *float64  `json:"departure_rate_at_saturation"`
	SkippedSweepRates []float64 `json:"skipped_sweep_rates"`
	MinRequests       int       `json:"min_requests"`
	MinSeconds        float64   `json:"min_seconds"`
	Note              string    `json:"note"`
}

// saturationOf reads the knee from a lifetime's probes.
func saturationOf(s *Serving, probes []ProbeResult) *Saturation {
	st := &Saturation{SkippedSweepRates: []float64{}, MinRequests: s.SustainMinRequests(), MinSeconds: s.SustainMinSeconds()}
	var low *ProbeResult
	for i := range probes {
		p := &probes[i]
		if p.Sustain != nil && !p.Sustain.Sustained && (low == nil || p.OfferedRate < low.OfferedRate) {
			low = p
		}
	}
	for _, p := range probes {
		if p.Sustain != nil && p.Sustain.Sustained && (low == nil || p.OfferedRate < low.OfferedRate) &&
			(st.KneeRate == nil || p.OfferedRate > *st.KneeRate) {
			st.KneeRate = fptr(p.OfferedRate)
		}
	}
	sweep := 0
	for _, p := range probes {
		if p.Kind == ProbeSweep {
			sweep++
		}
	}
	if sweep < len(s.Rates) {
		st.SkippedSweepRates = append(st.SkippedSweepRates, s.Rates[sweep:]...)
	}
	switch {
	case low == nil && st.KneeRate == nil:
		st.Note = "no probe measured"
	case low == nil:
		st.Note = fmt.Sprintf("every probe was sustained: saturation is above %s/s", ms(*st.KneeRate))
	default:
		st.Found = true
		st.LowestUnsustained, st.SaturatedRate = fptr(low.OfferedRate), low.Sustain.DepartureRate
		if st.KneeRate == nil {
			st.Note = fmt.Sprintf("not sustained from the lowest rate probed (%s/s)", ms(low.OfferedRate))
		} else {
			st.Note = fmt.Sprintf("saturates between %s/s (sustained) and %s/s (not sustained)", ms(*st.KneeRate), ms(low.OfferedRate))
		}
	}
	return st
}
