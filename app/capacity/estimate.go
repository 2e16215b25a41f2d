package capacity

import (
	"fmt"
	"math"
	"strings"
	"time"

	"sparkbench/app/study"
)

// promptTokensGuess is the prompt length assumed for an estimate: the built-in prompt plan's
// prompts are about 80 tokens with their numbered prefix.
const promptTokensGuess = 96

// Estimate is a capacity plan's estimated duration: a range, because how well concurrent
// requests share the machine is what the study measures. Lo assumes the server's slots add up
// (requests in parallel take as long as one alone), Hi that they do not (they take turns).
type Estimate struct {
	Lo, Hi  time.Duration
	Missing []string // candidate IDs whose model has no history (not in Lo or Hi)
	Basis   int      // past legs the estimate rests on
}

// String says the estimate in words.
func (e Estimate) String() string {
	if e.Basis == 0 {
		return "no estimate yet: no model of this plan was measured in this notebook (a throughput study of it gives one)"
	}
	span := fmt.Sprintf("%s to %s", round(e.Lo), round(e.Hi))
	if round(e.Lo) == round(e.Hi) {
		span = round(e.Hi).String()
	}
	s := fmt.Sprintf("≈ %s (from %d past llama-bench leg(s) of these models in this notebook)", span, e.Basis)
	if len(e.Missing) > 0 {
		s += fmt.Sprintf(", plus %s, never measured here", strings.Join(e.Missing, ", "))
	}
	return s
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(10 * time.Second)
	default:
		return d.Round(time.Second)
	}
}

// EstimateDuration estimates the plan's run from the llama-bench history of its candidates'
// models (by candidate ID): per server lifetime, the model's load time, then per client level
// its warmup and measured requests, each a prompt and n_predict generated tokens at the
// model's rates, min(C, P) at a time.
func EstimateDuration(p *Plan, history map[string]study.BenchHistory) Estimate {
	var e Estimate
	q, err := ClonePlan(p)
	if err != nil {
		return e
	}
	q.Defaults()
	rates := map[string]study.RateModel{}
	for _, c := range q.Candidates {
		r, ok := study.RatesOf(history[c.ID])
		if !ok {
			e.Missing = append(e.Missing, c.ID)
			continue
		}
		rates[c.ID] = r
		e.Basis += r.Legs()
	}
	per := q.WarmupCount() + q.Measured
	for _, lt := range Schedule(q, "") {
		r, ok := rates[lt.Key.Candidate]
		if !ok {
			continue
		}
		pp, tg := r.Rates(promptTokensGuess)
		if pp <= 0 || tg <= 0 {
			continue
		}
		one := time.Duration((float64(promptTokensGuess)/pp + float64(q.NPredict)/tg) * 1e9)
		e.Lo += r.Overhead()
		e.Hi += r.Overhead()
		for _, c := range lt.Clients {
			k := max(1, min(c, lt.Key.Slots))
			e.Hi += time.Duration(per) * one
			e.Lo += time.Duration(math.Ceil(float64(per)/float64(k))) * one
		}
	}
	return e
}
