package study

import "fmt"

// PredictionOf is a prediction of a kind whose figures are read by its own selector type S
// (the quantization ladder's): the kinds, bounds, checks and verdicts of Prediction, with the
// kind's selector for About and Than. Its JSON is Prediction's, field for field.
type PredictionOf[S fmt.Stringer] struct {
	ID         string         `json:"id"`
	Text       string         `json:"text"`
	Kind       PredictionKind `json:"kind"`
	About      S              `json:"about"`
	Lo         *float64       `json:"lo,omitempty"`
	Hi         *float64       `json:"hi,omitempty"`
	NoiseFloor float64        `json:"noise_floor,omitempty"`
	Arms       []Arm          `json:"arms,omitempty"`
	Op         string         `json:"op,omitempty"`
	Than       *S             `json:"than,omitempty"`
	Tolerance  float64        `json:"tolerance,omitempty"`
}

// plain is the prediction without its selectors (the evaluators read only the rest).
func (p PredictionOf[S]) plain() Prediction {
	return Prediction{ID: p.ID, Text: p.Text, Kind: p.Kind, Lo: p.Lo, Hi: p.Hi, NoiseFloor: p.NoiseFloor,
		Arms: p.Arms, Op: p.Op, Tolerance: p.Tolerance}
}

// Expectation prints the expectation for the scoreboard, a comparison's right-hand side in
// the kind's own words.
func (p PredictionOf[S]) Expectation() string {
	if p.Kind == KindComparison && p.Than != nil {
		than := (*p.Than).String()
		if p.Op == "within" {
			return fmt.Sprintf("within %g%% of %s", p.Tolerance*100, than)
		}
		return fmt.Sprintf("%s %s (tolerance %g%%)", p.Op, than, p.Tolerance*100)
	}
	return p.plain().Expectation()
}

// CheckPredictionsOf checks a kind's predictions: unique IDs and texts, each expectation
// (CheckExpectation), and each selector through check (called with the JSON path of about,
// and of than when a comparison gives one). A band's noise floor written as 0 is refused when
// zeroGiven says it was written.
func CheckPredictionsOf[S fmt.Stringer](ps []PredictionOf[S], check func(at string, s S) []Problem, zeroGiven func(i int) bool) []Problem {
	out := CheckPredictionIDs(len(ps), func(i int) (string, string) { return ps[i].ID, ps[i].Text })
	for i, pr := range ps {
		at := fmt.Sprintf("predictions[%d]", i)
		out = append(out, check(at+".about", pr.About)...)
		if pr.Kind == KindComparison && pr.Than != nil {
			out = append(out, check(at+".than", *pr.Than)...)
		}
		if pr.Kind == KindBand && pr.NoiseFloor == 0 && zeroGiven != nil && zeroGiven(i) {
			out = append(out, Problem{Path: at + ".noise_floor", Severity: SevError,
				Msg: fmt.Sprintf("0: want a fraction in (0, 1), e.g. 0.001 for the narrowest edge; or leave the field out for the default %g", DefaultNoiseFloor)})
		}
		out = append(out, CheckExpectation(at, Expectation{Kind: pr.Kind, Lo: pr.Lo, Hi: pr.Hi, NoiseFloor: pr.NoiseFloor,
			Arms: pr.Arms, Op: pr.Op, Tolerance: pr.Tolerance, HasThan: pr.Than != nil})...)
	}
	return out
}

// EvaluateOf computes a prediction's verdict, value reading a selector's number and the
// sources it came from, or saying why it cannot (problem): the verdict is then UNRESOLVABLE.
func EvaluateOf[S fmt.Stringer](pr PredictionOf[S], value func(S) (v float64, sources []string, problem string)) Verdict {
	sp := pr.plain()
	unresolvable := func(problem string) Verdict {
		return Verdict{Prediction: pr.ID, Outcome: Unresolvable, Expected: pr.Expectation(), Problem: problem,
			Detail: problem, Sources: []string{}}
	}
	a, src, problem := value(pr.About)
	if problem != "" {
		return unresolvable(problem)
	}
	var vd Verdict
	switch pr.Kind {
	case KindBand:
		vd = EvaluateBand(sp, a)
	case KindFork:
		vd = EvaluateFork(sp, a)
	case KindComparison:
		if pr.Than == nil {
			return unresolvable("a comparison without its right-hand side (than)")
		}
		b, srcB, problem := value(*pr.Than)
		if problem != "" {
			return unresolvable(problem)
		}
		vd = EvaluateComparison(sp, a, b)
		src = append(src, srcB...)
	default:
		vd = EvaluateQuestion(sp, a)
	}
	vd.Expected = pr.Expectation()
	vd.Sources = append([]string{}, src...)
	return vd
}
