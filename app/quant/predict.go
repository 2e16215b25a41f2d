package quant

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app/study"
)

// Prediction is a ladder prediction: the kinds, bounds and verdicts of study.Prediction, with
// a ladder selector.
type Prediction = study.PredictionOf[Selector]

// Figure names what a ladder selector reads.
type Figure string

const (
	FigureSpeed     Figure = "speed"           // t/s of one speed figure (At: TEST@DEPTH)
	FigureKLDMean   Figure = "kld_mean"        // mean KL divergence from the reference
	FigureKLDP99    Figure = "kld_p99"         // its 99th percentile
	FigureKLDMax    Figure = "kld_max"         // its maximum
	FigureSameTopP  Figure = "same_top_p"      // fraction of tokens whose top choice is the reference's
	FigurePPLRatio  Figure = "ppl_ratio"       // mean PPL(Q)/PPL(base)
	FigureFileMiB   Figure = "file_mib"        // the derived file's size
	FigureBits      Figure = "bits_per_weight" // the file's bits per weight
	FigurePeakRSS   Figure = "peak_rss_mib"    // the peak RSS of its llama-bench legs
	FigureProjected Figure = "projected_mib"   // llama-fit-params's projection at memory_ctx
	FigureJPerToken Figure = "j_per_token"     // Joules per token of one speed figure (At: TEST@DEPTH; a telemetry block)
)

// Figures lists the selector figures, in the order the docs give them.
var Figures = []Figure{FigureSpeed, FigureKLDMean, FigureKLDP99, FigureKLDMax, FigureSameTopP, FigurePPLRatio, FigureFileMiB, FigureBits, FigurePeakRSS, FigureProjected, FigureJPerToken}

// atFigure says whether a figure is read at a speed figure (TEST@DEPTH).
func atFigure(f Figure) bool { return f == FigureSpeed || f == FigureJPerToken }

// Candidate names that stand for the rule's outcome rather than a quant type.
const (
	CandidateSelected = "selected"  // the candidate the rule selects
	CandidateRunnerUp = "runner_up" // the rule's runner-up
)

// Selector names one number of a ladder's result: a figure of a candidate (a quant type of
// the plan, or "selected" / "runner_up"), a speed figure at At (TEST@DEPTH).
type Selector struct {
	Figure    Figure `json:"figure"`
	Candidate string `json:"candidate"`
	At        string `json:"at,omitempty"`
}

func (s Selector) String() string {
	if s.Figure == FigureSpeed {
		return fmt.Sprintf("%s of %s", s.At, s.Candidate)
	}
	if s.Figure == FigureJPerToken {
		return fmt.Sprintf("J/token at %s of %s", s.At, s.Candidate)
	}
	return fmt.Sprintf("%s of %s", s.Figure, s.Candidate)
}

// checkSelector checks a selector against the plan: a known figure, a candidate of the plan
// (or selected / runner_up), a speed figure the plan measures.
func checkSelector(p *Plan, at string, s Selector) []study.Problem {
	var out []study.Problem
	errf := func(path, format string, a ...any) {
		out = append(out, study.Problem{Path: path, Severity: study.SevError, Msg: fmt.Sprintf(format, a...)})
	}
	if !slices.Contains(Figures, s.Figure) {
		names := make([]string, len(Figures))
		for i, f := range Figures {
			names[i] = string(f)
		}
		errf(at+".figure", "%q: want one of %s", s.Figure, strings.Join(names, ", "))
	}
	if s.Candidate != CandidateSelected && s.Candidate != CandidateRunnerUp && !slices.Contains(p.Labels(), s.Candidate) {
		errf(at+".candidate", "%q: want a candidate of this plan (%s), %q or %q", s.Candidate, strings.Join(p.Labels(), ", "), CandidateSelected, CandidateRunnerUp)
	}
	switch {
	case atFigure(s.Figure) && s.At == "":
		errf(at+".at", "missing; a speed figure names TEST@DEPTH, e.g. tg@%d", firstDepth(p))
	case atFigure(s.Figure):
		if m := maximizeRE.FindStringSubmatch(s.At); m == nil {
			errf(at+".at", "%q: want TEST@DEPTH, e.g. tg@%d or pp@%d", s.At, firstDepth(p), firstDepth(p))
		} else if !slices.Contains(p.Speed.Depths, mustAtoi(m[2])) {
			errf(at+".at", "%s: depth %s is not among speed.depths %v", s.At, m[2], p.Speed.Depths)
		}
	case s.At != "":
		errf(at+".at", "only a speed figure takes at; leave it out for %s", s.Figure)
	}
	if s.Figure == FigureJPerToken && p.Telemetry == nil {
		errf(at+".figure", "j_per_token is not measured: the plan has no telemetry block (add \"telemetry\": {} to sample the bench legs)")
	}
	if s.Figure == FigureProjected && p.MemoryCtx == 0 {
		errf(at+".figure", "projected_mib is not measured: the plan sets no memory_ctx")
	}
	if s.Figure == FigurePeakRSS && p.Memory == MemoryNone {
		errf(at+".figure", "peak_rss_mib is not measured: the plan's memory is %q", MemoryNone)
	}
	return out
}

func firstDepth(p *Plan) int {
	if len(p.Speed.Depths) > 0 {
		return p.Speed.Depths[0]
	}
	return 0
}

// checkPredictions checks the plan's predictions (IDs, expectations, selectors).
func (v *validator) checkPredictions() {
	v.problems = append(v.problems, study.CheckPredictionsOf(v.p.Predictions,
		func(at string, s Selector) []study.Problem { return checkSelector(v.p, at, s) }, nil)...)
}

// Evaluate computes every prediction's verdict from an assembled result. On an incomplete
// ladder a prediction that reads a pending candidate, or the selected one or the runner-up
// (which the rule names only once every candidate is measured), is PENDING.
func Evaluate(preds []Prediction, res *Result) []study.Verdict {
	out := []study.Verdict{}
	for _, pr := range preds {
		if why := waitsFor(pr, res.Selection); why != "" {
			out = append(out, study.Verdict{Prediction: pr.ID, Outcome: study.Pending, Expected: pr.Expectation(), Problem: why, Detail: why, Sources: []string{}})
			continue
		}
		out = append(out, study.EvaluateOf(pr, func(s Selector) (float64, []string, string) { return value(s, res) }))
	}
	return out
}

// waitsFor says what a prediction waits for on an incomplete ladder ("": nothing).
func waitsFor(pr Prediction, sel Selection) string {
	if !sel.Incomplete {
		return ""
	}
	sels := []Selector{pr.About}
	if pr.Than != nil {
		sels = append(sels, *pr.Than)
	}
	for _, s := range sels {
		switch {
		case s.Candidate == CandidateSelected || s.Candidate == CandidateRunnerUp:
			return fmt.Sprintf("waiting for the ladder to be complete (%s)", sel.Missing())
		case slices.ContainsFunc(sel.Pending, func(p Pending) bool { return p.Type == s.Candidate }):
			return fmt.Sprintf("waiting for %s to be measured (%s)", s.Candidate, sel.Missing())
		}
	}
	return ""
}

// value reads a selector's number from the result, with the record it came from; problem says
// why it cannot.
func value(s Selector, res *Result) (v float64, sources []string, problem string) {
	typ := s.Candidate
	switch typ {
	case CandidateSelected, CandidateRunnerUp:
		pick := res.Selection.Selected
		if typ == CandidateRunnerUp {
			pick = res.Selection.RunnerUp
		}
		if pick == "" {
			return 0, nil, fmt.Sprintf("no %s candidate: %s", strings.ReplaceAll(typ, "_", "-"), res.Selection.Why)
		}
		typ = pick
	}
	i := slices.IndexFunc(res.Candidates, func(c Candidate) bool { return c.Type == typ })
	if i < 0 {
		return 0, nil, fmt.Sprintf("%s is not a candidate of the result", typ)
	}
	c, r := res.Candidates[i], res.Records[i]
	name := typ
	if typ != s.Candidate {
		name = fmt.Sprintf("%s (%s)", typ, s.Candidate)
	}
	if s.Figure == FigureSpeed {
		for _, b := range r.Bench {
			if b.Figure() == s.At {
				return b.Mean, []string{fmt.Sprintf("%s %s: leg %s row %d", name, s.At, b.Leg, b.Row)}, ""
			}
		}
		return 0, nil, fmt.Sprintf("%s has no %s", name, s.At)
	}
	if s.Figure == FigureJPerToken {
		for _, b := range r.Bench {
			if b.Figure() == s.At && b.JPerToken > 0 {
				return b.JPerToken, []string{fmt.Sprintf("%s %s energy: leg %s row %d", name, s.At, b.Leg, b.Row)}, ""
			}
		}
		return 0, nil, fmt.Sprintf("%s has no energy at %s (its leg was not sampled by an energy-measuring sampler)", name, s.At)
	}
	switch s.Figure {
	case FigureFileMiB:
		return c.FileMiB(), []string{fmt.Sprintf("%s file sha256 %s", name, short(r.SHA256))}, ""
	case FigureBits:
		return c.BitsPerWeight, []string{fmt.Sprintf("%s file sha256 %s", name, short(r.SHA256))}, ""
	case FigurePeakRSS:
		if c.PeakRSSMiB == nil {
			return 0, nil, name + " has no peak RSS"
		}
		return *c.PeakRSSMiB, []string{name + " llama-bench legs' peak RSS"}, ""
	case FigureProjected:
		if c.Projected == nil {
			return 0, nil, name + " has no memory projection"
		}
		return float64(c.Projected.MiB), []string{name + " llama-fit-params: " + c.Projected.Line}, ""
	}
	k := c.KLD
	if k == nil {
		return 0, nil, name + " has no KL divergence"
	}
	src := []string{fmt.Sprintf("%s KLD: leg %s lines %v", name, r.KLDLeg, r.KLDLines)}
	switch s.Figure {
	case FigureKLDMean:
		return k.Mean, src, ""
	case FigureKLDP99:
		return k.P99, src, ""
	case FigureKLDMax:
		return k.Max, src, ""
	case FigureSameTopP:
		return k.SameTopP, src, ""
	case FigurePPLRatio:
		return k.PPLRatio, src, ""
	}
	return 0, nil, fmt.Sprintf("figure %q is not known", s.Figure)
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
