package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"sparkbench/app/canon"
)

// ArrivalSchedule is the send-time offsets of n requests offered at rate req/s by the plan's
// arrival process: the first at 0, each later one after a gap of mean 1/rate (a ramp: 1/r_k,
// r_k climbing linearly from RampFrom to rate). Offsets are whole microseconds. The poisson and
// gamma gaps come from a PCG generator seeded with Arrival.Seed, drawn as unit-rate gaps and
// divided by the rate: the same seed, rate and n give the same schedule on every run, and the
// probes of one plan share their random numbers (a higher rate is the same schedule, faster).
func ArrivalSchedule(a Arrival, rate float64, n int) []time.Duration {
	out := make([]time.Duration, max(n, 0))
	if n <= 0 || !(rate > 0) {
		return out
	}
	src := unitSource{r: rand.New(rand.NewPCG(uint64(a.Seed), 0x5eed5c4ed))}
	cum := 0.0
	for k := 1; k < n; k++ {
		var gap float64
		switch a.Process {
		case ArrivalPoisson:
			gap = src.exp() / rate
		case ArrivalGamma:
			gap = src.gamma(a.Burstiness) / a.Burstiness / rate
		case ArrivalRamp:
			r := a.RampFrom + (rate-a.RampFrom)*float64(k)/float64(n-1)
			gap = 1 / r
		default:
			gap = 1 / rate
		}
		cum += gap
		out[k] = time.Duration(math.Round(cum*1e6)) * time.Microsecond
	}
	return out
}

// ScheduleSHA256 is a schedule's identity: the SHA-256 of its offsets in microseconds as
// canonical JSON.
func ScheduleSHA256(s []time.Duration) string {
	us := make([]int64, len(s))
	for i, d := range s {
		us[i] = d.Microseconds()
	}
	return canon.SHA256Hex(mustCanon(us))
}

func mustCanon(v any) []byte {
	b, _ := canon.Marshal(v)
	return b
}

// unitSource draws the random numbers of a schedule with explicit algorithms (inverse CDF,
// Box-Muller, Marsaglia-Tsang), so a schedule depends on the seed and nothing else.
type unitSource struct{ r *rand.Rand }

// uniform is in (0, 1): 53 random bits, centred in their interval.
func (s unitSource) uniform() float64 { return (float64(s.r.Uint64()>>11) + 0.5) / (1 << 53) }

func (s unitSource) exp() float64 { return -math.Log(s.uniform()) }

func (s unitSource) normal() float64 {
	return math.Sqrt(-2*math.Log(s.uniform())) * math.Cos(2*math.Pi*s.uniform())
}

// gamma draws Gamma(shape, 1) (Marsaglia and Tsang; below shape 1, boosted by U^(1/shape)).
func (s unitSource) gamma(shape float64) float64 {
	if shape < 1 {
		return s.gamma(shape+1) * math.Pow(s.uniform(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := s.normal()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if math.Log(s.uniform()) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// ProbePoint is one measured offered rate and whether it met every SLO; Saturated: it failed
// the sustain rule (completions fell behind arrivals), which stops the sweep.
type ProbePoint struct {
	Rate      float64
	Passed    bool
	Saturated bool
}

// SearchState is where a max-rate search stands on its measured points.
type SearchState struct {
	// MaxRate is the largest passing rate below the lowest failing one (0: none passed).
	MaxRate float64
	// LowestFail is the lowest failing rate (+Inf: none failed).
	LowestFail float64
	// Converged: the bracket is within the tolerance, or Hi itself passed (the maximum is at
	// least Hi), or a failure at or below Lo shows no rate in range meets the SLO.
	Converged bool
	Note      string
}

// roundRate keeps a probe's rate to 1/1000 req/s, so rates print and compare exactly.
func roundRate(r float64) float64 { return math.Round(r*1000) / 1000 }

// NextSearchRate says which rate the search probes next, given every measured point so far
// (the sweep's and the search's own, in order) and how many probes the search made; done when
// it has converged or spent MaxProbes. The runner asks it after each probe and the assembly
// asks it again from the records, so a run that did not follow it is refused.
func NextSearchRate(q RateSearch, points []ProbePoint, probes int) (next float64, done bool, st SearchState) {
	st.LowestFail = math.Inf(1)
	for _, p := range points {
		if !p.Passed {
			st.LowestFail = min(st.LowestFail, p.Rate)
		}
	}
	for _, p := range points {
		if p.Passed && p.Rate < st.LowestFail {
			st.MaxRate = max(st.MaxRate, p.Rate)
		}
	}
	measured := func(r float64) bool {
		return slices.ContainsFunc(points, func(p ProbePoint) bool { return p.Rate == r })
	}
	switch {
	case st.MaxRate == 0 && st.LowestFail <= q.Lo:
		st.Converged, st.Note = true, "no rate from lo meets the SLO"
		return 0, true, st
	case st.MaxRate == 0:
		next = q.Lo
	case math.IsInf(st.LowestFail, 1) && st.MaxRate >= q.Hi:
		st.Converged, st.Note = true, "hi meets the SLO: the maximum is at least hi"
		return 0, true, st
	case math.IsInf(st.LowestFail, 1):
		next = max(q.Lo, min(2*st.MaxRate, q.Hi))
	case (st.LowestFail-st.MaxRate)/st.MaxRate <= q.Tolerance:
		st.Converged, st.Note = true, "bracket within tolerance"
		return 0, true, st
	default:
		next = (st.MaxRate + st.LowestFail) / 2
	}
	next = roundRate(next)
	if probes >= q.MaxProbes {
		st.Note = "max_probes spent before the bracket closed"
		return 0, true, st
	}
	if measured(next) {
		st.Note = "the next rate was measured already (rates are kept to 0.001 req/s)"
		return 0, true, st
	}
	return next, false, st
}
