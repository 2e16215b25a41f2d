package quant

import (
	"fmt"
	"math"
	"strings"

	"sparkbench/app/capacity"
)

// HandOff shapes the capacity plan a finished ladder hands off (zero values: the defaults in
// brackets): the ladder's study id, the slot counts and client levels to try ([1 2 4], and the
// same), the server's threads ([the ladder's]), the tokens per request ([64]) and the SLO gates
// (TTFT p95 [5000 ms], E2E p95 [60000 ms], peak RSS [twice the larger candidate's peak in the
// ladder, rounded up to 64 MiB]).
type HandOff struct {
	StudyID                   int64
	Slots, Clients            []int
	Threads, NPredict         int
	TTFTMsP95Max, E2EMsP95Max float64
	PeakRSSMiBMax             float64
}

// CapacityPlan is the capacity plan of a finished ladder: its selected candidate and its
// runner-up (when it has one) as the candidates, each by its derived file and SHA-256, named
// after the ladder in the plan's name and description, with the built-in prompt plan. The
// caller writes the prompt plan beside it (capacity.WriteDefaultPromptPlan).
func CapacityPlan(res *Result, p *Plan, o HandOff) (*capacity.Plan, error) {
	sel := res.Selection
	if sel.Selected == "" {
		return nil, fmt.Errorf("the ladder selected no candidate (%s): there is nothing to hand off", sel.Why)
	}
	q := *p
	q.Defaults()
	if o.Threads == 0 {
		o.Threads = q.Speed.Threads
	}
	pick := []string{sel.Selected}
	if sel.RunnerUp != "" {
		pick = append(pick, sel.RunnerUp)
	}
	var cands []capacity.Candidate
	rss := 0.0
	for i, typ := range pick {
		var rec *Record
		for j := range res.Records {
			if res.Records[j].Label() == typ {
				rec = &res.Records[j]
			}
		}
		if rec == nil || rec.File == "" || rec.SHA256 == "" {
			return nil, fmt.Errorf("%s has no derived file in the ladder's records", typ)
		}
		role := "selected"
		if i > 0 {
			role = "runner-up"
		}
		rss = max(rss, float64(rec.PeakRSS)/(1<<20))
		flags := []string{"-t", fmt.Sprint(o.Threads)}
		if rec.KV != nil {
			flags = append(flags, "-ctk", rec.KV.K, "-ctv", rec.KV.V)
		}
		cands = append(cands, capacity.Candidate{ID: candidateID(typ), Label: fmt.Sprintf("%s (ladder study %d: %s)", typ, o.StudyID, role),
			Model: capacity.FileRef{Path: rec.File, SHA256: rec.SHA256}, ServerFlags: flags})
	}
	slots := orInts(o.Slots, []int{1, 2, 4})
	warm := 1
	cp := &capacity.Plan{Schema: capacity.SchemaCapacity, Name: fmt.Sprintf("%s: serving the chosen quant", res.Name),
		Description: fmt.Sprintf("Handed off by quantization ladder study %d (plan sha256 %s): %s, the candidate its rule selected (%s), and its runner-up %s.",
			o.StudyID, res.PlanSHA256, sel.Selected, sel.Why, orNone(sel.RunnerUp)),
		Candidates: cands, Slots: slots, Clients: orInts(o.Clients, slots), Passes: []string{capacity.PassForward, capacity.PassReverse},
		Warmups: &warm, Measured: 3, NPredict: orInt(o.NPredict, 64), CtxPerSlot: 1024, Seed: 42, PromptPlan: capacity.DefaultPromptPlanRef(),
		Limits: capacity.Limits{TTFTMsP95Max: orFloat(o.TTFTMsP95Max, 5000), E2EMsP95Max: orFloat(o.E2EMsP95Max, 60000),
			PeakRSSMiBMax: orFloat(o.PeakRSSMiBMax, math.Ceil(max(rss, 64)*2/64)*64)}}
	cp.Defaults()
	return cp, nil
}

// candidateID is a capacity candidate ID from a ladder label: lower case, any character but a
// letter, digit, '_' or '-' written '-' (q4_0/kv:q8_0 -> q4_0-kv-q8_0).
func candidateID(label string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, strings.ToLower(label))
}

func orInts(v, d []int) []int {
	if len(v) == 0 {
		return d
	}
	return v
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func orFloat(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
