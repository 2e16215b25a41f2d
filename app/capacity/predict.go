package capacity

import (
	"fmt"
	"slices"
	"strings"

	"sparkbench/app/study"
)

// Prediction is a capacity prediction: the kinds, bounds and verdicts of study.Prediction,
// with a capacity selector.
type Prediction struct {
	ID         string               `json:"id"`
	Text       string               `json:"text"`
	Kind       study.PredictionKind `json:"kind"`
	About      Selector             `json:"about"`
	Lo         *float64             `json:"lo,omitempty"`
	Hi         *float64             `json:"hi,omitempty"`
	NoiseFloor float64              `json:"noise_floor,omitempty"`
	Arms       []study.Arm          `json:"arms,omitempty"`
	Op         string               `json:"op,omitempty"`
	Than       *Selector            `json:"than,omitempty"`
	Tolerance  float64              `json:"tolerance,omitempty"`
}

// Figure names what a capacity selector reads.
type Figure string

const (
	FigureCellRate        Figure = "cell_rate"         // reported generation rate of (candidate, slots, clients), tok/s
	FigurePerStreamRate   Figure = "per_stream_rate"   // cell's per-stream rate, tok/s
	FigureTTFTP95         Figure = "ttft_p95_ms"       // cell's observed-p95 TTFT
	FigureE2EP95          Figure = "e2e_p95_ms"        // cell's observed-p95 E2E
	FigureSelectedRate    Figure = "selected_rate"     // rate at the candidate's selected point
	FigureSelectedSlots   Figure = "selected_slots"    // P of the selected point
	FigureSelectedClients Figure = "selected_clients"  // C of the selected point
	FigureSelectedGain    Figure = "selected_gain"     // selected rate / P1/C1 rate - 1
	FigureSpeedup         Figure = "speedup"           // diagonal rate(P max) / rate(P min)
	FigureGainPerDoubling Figure = "gain_per_doubling" // diagonal rate(slots) / rate(previous P) - 1
	FigureKnee            Figure = "knee"              // first diagonal P whose gain < knee_threshold
	FigureTTFTGrowth      Figure = "ttft_growth"       // diagonal TTFT p95 at P max / at P min
	FigureServingTax      Figure = "serving_tax"       // 1 - single-stream rate / llama-bench tg
)

var figureNeeds = map[Figure]string{ // "cell", "slots" or "" (candidate only)
	FigureCellRate: "cell", FigurePerStreamRate: "cell", FigureTTFTP95: "cell", FigureE2EP95: "cell",
	FigureSelectedRate: "", FigureSelectedSlots: "", FigureSelectedClients: "", FigureSelectedGain: "",
	FigureSpeedup: "", FigureGainPerDoubling: "slots", FigureKnee: "", FigureTTFTGrowth: "", FigureServingTax: "",
}

// Selector names one number of a capacity study's result.
type Selector struct {
	Figure    Figure `json:"figure"`
	Candidate string `json:"candidate"`
	Slots     *int   `json:"slots,omitempty"`
	Clients   *int   `json:"clients,omitempty"` // concurrency plans: omitted (= slots)
}

func (s Selector) String() string {
	var b strings.Builder
	b.WriteString(string(s.Figure) + " of " + s.Candidate)
	if s.Slots != nil {
		fmt.Fprintf(&b, " P%d", *s.Slots)
		if s.Clients != nil {
			fmt.Fprintf(&b, "/C%d", *s.Clients)
		}
	}
	return b.String()
}

func (v *validator) checkPredictions() {
	ps := v.p.Predictions
	v.problems = append(v.problems, study.CheckPredictionIDs(len(ps), func(i int) (string, string) { return ps[i].ID, ps[i].Text })...)
	for i, pr := range ps {
		at := fmt.Sprintf("predictions[%d]", i)
		v.checkSelector(at+".about", pr.About)
		if pr.Kind == study.KindComparison && pr.Than != nil {
			v.checkSelector(at+".than", *pr.Than)
		}
		if pr.Kind == study.KindBand && pr.NoiseFloor == 0 && v.p.given.noiseFloorGiven(i) {
			// a written 0 cannot be kept: the plan's canonical form leaves a zero noise floor
			// out, which reads back as the default
			v.errf(at+".noise_floor", "0: want a fraction in (0, 1), e.g. 0.001 for the narrowest edge; or leave the field out for the default %g", study.DefaultNoiseFloor)
		}
		v.problems = append(v.problems, study.CheckExpectation(at, study.Expectation{Kind: pr.Kind, Lo: pr.Lo, Hi: pr.Hi,
			NoiseFloor: pr.NoiseFloor, Arms: pr.Arms, Op: pr.Op, Tolerance: pr.Tolerance, HasThan: pr.Than != nil})...)
	}
}

func (v *validator) checkSelector(at string, s Selector) {
	p := v.p
	need, ok := figureNeeds[s.Figure]
	if !ok {
		names := make([]string, 0, len(figureNeeds))
		for f := range figureNeeds {
			names = append(names, string(f))
		}
		slices.Sort(names)
		v.errf(at+".figure", "%q: want one of %s", s.Figure, strings.Join(names, ", "))
		return
	}
	if !v.ids[s.Candidate] {
		v.errf(at+".candidate", "%q is not a candidate ID of this plan", s.Candidate)
	}
	switch need {
	case "cell":
		if s.Slots == nil {
			v.errf(at+".slots", "missing; a %s names a cell: give slots (one of %v)", s.Figure, p.Slots)
		} else if !slices.Contains(p.Slots, *s.Slots) {
			v.errf(at+".slots", "%d is not a slot count of this plan (%v)", *s.Slots, p.Slots)
		}
		switch {
		case p.Concurrency() && s.Clients != nil && (s.Slots == nil || *s.Clients != *s.Slots):
			v.errf(at+".clients", "a concurrency plan measures clients = slots; leave clients out")
		case !p.Concurrency() && s.Clients == nil:
			v.errf(at+".clients", "missing; a %s names a cell: give clients (one of %v)", s.Figure, p.Clients)
		case !p.Concurrency() && !slices.Contains(p.Clients, *s.Clients):
			v.errf(at+".clients", "%d is not a client level of this plan (%v)", *s.Clients, p.Clients)
		}
		return
	case "slots":
		diag := v.diagonal()
		switch {
		case s.Slots == nil:
			v.errf(at+".slots", "missing; give the P the gain leads to (one of %v)", tail(diag))
		case !slices.Contains(tail(diag), *s.Slots):
			v.errf(at+".slots", "%d is not a diagonal slot count after the first (clients = slots: %v)", *s.Slots, diag)
		}
	default:
		if s.Slots != nil || s.Clients != nil {
			v.errf(at, "%s is a figure of the whole candidate; leave slots and clients out", s.Figure)
		}
	}
	switch s.Figure {
	case FigureSpeedup, FigureKnee, FigureTTFTGrowth, FigureGainPerDoubling:
		if d := v.diagonal(); len(d) < 2 {
			v.errf(at+".figure", "%s reads the diagonal clients = slots, which this plan measures at %v: it needs two slot counts that are also client levels", s.Figure, d)
		}
	case FigureServingTax:
		if len(p.Slots) > 0 && !slices.Contains(p.ClientLevels(p.Slots[0]), 1) {
			v.errf(at+".figure", "serving_tax reads the single-client cell at P%d; add clients 1", p.Slots[0])
		}
	}
}

// diagonal lists the slot counts measured with clients = slots.
func (v *validator) diagonal() []int {
	var d []int
	for _, s := range v.p.Slots {
		if slices.Contains(v.p.ClientLevels(s), s) {
			d = append(d, s)
		}
	}
	return d
}

func tail(xs []int) []int {
	if len(xs) == 0 {
		return nil
	}
	return xs[1:]
}

// Evaluate computes every prediction's verdict from an assembled result.
func Evaluate(p *Plan, r *Result) []study.Verdict {
	out := []study.Verdict{}
	for _, pr := range p.Predictions {
		out = append(out, evaluate(pr, r))
	}
	return out
}

func evaluate(pr Prediction, r *Result) study.Verdict {
	sp := study.Prediction{ID: pr.ID, Text: pr.Text, Kind: pr.Kind, Lo: pr.Lo, Hi: pr.Hi, NoiseFloor: pr.NoiseFloor,
		Arms: pr.Arms, Op: pr.Op, Tolerance: pr.Tolerance}
	unresolvable := func(problem string) study.Verdict {
		return study.Verdict{Prediction: pr.ID, Outcome: study.Unresolvable, Expected: expectation(pr), Problem: problem,
			Detail: problem, Sources: []string{}}
	}
	a, srcA, problem := value(pr.About, r)
	if problem != "" {
		return unresolvable(problem)
	}
	var vd study.Verdict
	switch pr.Kind {
	case study.KindBand:
		vd = study.EvaluateBand(sp, a)
	case study.KindFork:
		vd = study.EvaluateFork(sp, a)
	case study.KindComparison:
		b, srcB, problem := value(*pr.Than, r)
		if problem != "" {
			return unresolvable(problem)
		}
		vd = study.EvaluateComparison(sp, a, b)
		srcA = append(srcA, srcB...)
	default:
		vd = study.EvaluateQuestion(sp, a)
	}
	vd.Expected = expectation(pr)
	vd.Sources = srcA
	return vd
}

func expectation(pr Prediction) string {
	sp := study.Prediction{Kind: pr.Kind, Lo: pr.Lo, Hi: pr.Hi, Arms: pr.Arms, Op: pr.Op, Tolerance: pr.Tolerance}
	if pr.Than != nil {
		// study.Prediction prints the right-hand side with its own selector type; use ours.
		switch pr.Op {
		case "within":
			return fmt.Sprintf("within %g%% of %s", pr.Tolerance*100, pr.Than)
		default:
			return fmt.Sprintf("%s %s (tolerance %g%%)", pr.Op, pr.Than, pr.Tolerance*100)
		}
	}
	return sp.Expectation()
}

// value reads a selector's number from the result; problem is set when it cannot.
func value(s Selector, r *Result) (v float64, sources []string, problem string) {
	var cr *CandidateResult
	for i := range r.Candidates {
		if r.Candidates[i].ID == s.Candidate {
			cr = &r.Candidates[i]
		}
	}
	if cr == nil {
		return 0, nil, fmt.Sprintf("candidate %q is not in the result", s.Candidate)
	}
	got := func(x *float64, src, missing string) (float64, []string, string) {
		if x == nil {
			return 0, nil, missing
		}
		return *x, []string{src}, ""
	}
	switch s.Figure {
	case FigureCellRate, FigurePerStreamRate, FigureTTFTP95, FigureE2EP95:
		clients := *s.Slots
		if s.Clients != nil {
			clients = *s.Clients
		}
		c := findCell(cr.Cells, *s.Slots, clients)
		src := fmt.Sprintf("%s P%d/C%d", cr.ID, *s.Slots, clients)
		if c == nil {
			return 0, nil, src + " is not a cell of the result"
		}
		x := map[Figure]*float64{FigureCellRate: c.GenerationRate, FigurePerStreamRate: c.PerStreamRate,
			FigureTTFTP95: c.TTFTMsP95, FigureE2EP95: c.E2EMsP95}[s.Figure]
		return got(x, src, fmt.Sprintf("%s has no %s (no completed request)", src, s.Figure))
	case FigureSelectedRate, FigureSelectedSlots, FigureSelectedClients, FigureSelectedGain:
		sel := cr.Selected
		if sel == nil {
			return 0, nil, fmt.Sprintf("%s has no selected point: %s", cr.ID, cr.SelectionNote)
		}
		src := fmt.Sprintf("%s P%d/C%d (selected)", cr.ID, sel.Slots, sel.Clients)
		switch s.Figure {
		case FigureSelectedRate:
			return sel.GenerationRate, []string{src}, ""
		case FigureSelectedSlots:
			return float64(sel.Slots), []string{src}, ""
		case FigureSelectedClients:
			return float64(sel.Clients), []string{src}, ""
		}
		return got(sel.Gain, src, fmt.Sprintf("%s: the base cell P%d/C%d has no rate", cr.ID, cr.Base.Slots, cr.Base.Clients))
	case FigureSpeedup, FigureGainPerDoubling, FigureKnee, FigureTTFTGrowth:
		sc := cr.Scaling
		if sc == nil {
			return 0, nil, fmt.Sprintf("%s: %s", cr.ID, cr.ScalingNote)
		}
		src := fmt.Sprintf("%s diagonal", cr.ID)
		switch s.Figure {
		case FigureSpeedup:
			return sc.Speedup, []string{src}, ""
		case FigureKnee:
			return got(sc.Knee, src, fmt.Sprintf("%s: no knee within the measured slot counts (every gain >= %g)", cr.ID, sc.KneeRule))
		case FigureTTFTGrowth:
			return got(sc.TTFTGrowth, src, fmt.Sprintf("%s: TTFT growth undefined (a diagonal end has no TTFT)", cr.ID))
		}
		for _, d := range sc.Doubling {
			if int(d.To) == *s.Slots {
				return d.Gain, []string{fmt.Sprintf("%s P%g/C%g -> P%d/C%d", cr.ID, d.From, d.From, *s.Slots, *s.Slots)}, ""
			}
		}
		return 0, nil, fmt.Sprintf("%s: no diagonal step to P%d with a rate", cr.ID, *s.Slots)
	case FigureServingTax:
		if cr.BenchTG == nil {
			return 0, nil, fmt.Sprintf("%s: no llama-bench tg given (--bench-tg %s=T)", cr.ID, cr.ID)
		}
		return got(cr.ServingTax, fmt.Sprintf("%s P%d/C1 per-stream vs bench tg %s", cr.ID, cr.Base.Slots, ms(*cr.BenchTG)), cr.ID+": "+cr.ServingTaxNote)
	}
	return 0, nil, fmt.Sprintf("figure %q is not known", s.Figure)
}
