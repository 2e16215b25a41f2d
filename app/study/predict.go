package study

import (
	"fmt"
	"math"
	"strings"
)

// PredictionKind is one of the four pre-registration forms of docs/domain.md ("Pre-registration").
type PredictionKind string

const (
	KindBand       PredictionKind = "band"       // value in [lo, hi]
	KindFork       PredictionKind = "fork"       // ordered arms; none fired: INCONCLUSIVE
	KindComparison PredictionKind = "comparison" // about OP than, within a tolerance
	KindQuestion   PredictionKind = "question"   // no expectation: answered with the value
)

// DefaultNoiseFloor is the relative distance within which a band miss reads "MISS (edge)".
const DefaultNoiseFloor = 0.015

// Prediction is registered before any leg of its study runs.
type Prediction struct {
	ID   string         `json:"id"`   // "P1", unique in the study
	Text string         `json:"text"` // the claim in words
	Kind PredictionKind `json:"kind"`
	// About is what the prediction is about (for a comparison: the left-hand side).
	About Selector `json:"about"`

	Lo         *float64 `json:"lo,omitempty"` // band bounds (either may be open)
	Hi         *float64 `json:"hi,omitempty"`
	NoiseFloor float64  `json:"noise_floor,omitempty"` // band: relative, default 0.015

	Arms []Arm `json:"arms,omitempty"` // fork, in order; the first arm containing the value fires

	Op        string    `json:"op,omitempty"`        // comparison: ">=", "<=" or "within"
	Than      *Selector `json:"than,omitempty"`      // comparison: the right-hand side
	Tolerance float64   `json:"tolerance,omitempty"` // comparison: relative slack (0.02 = 2%)
	// Stats, "benchmath", judges a comparison of two cells on their repetitions (the interval
	// of the difference against the tolerance; predict_stats.go) instead of their means.
	// Written only when given.
	Stats string `json:"stats,omitempty"`
}

// Arm is one outcome of a fork: a closed range (either bound may be open).
type Arm struct {
	Name string   `json:"name"`
	Lo   *float64 `json:"lo,omitempty"`
	Hi   *float64 `json:"hi,omitempty"`
}

// Figure names what a selector reads.
type Figure string

const (
	FigureCell            Figure = "cell"             // mean t/s of one test (model, test, depth, config)
	FigureCrossing        Figure = "crossing_depth"   // depth where the test falls below Line
	FigureSlope           Figure = "depth_slope"      // (m(depth) - m(first depth)) / m(first depth)
	FigureCeiling         Figure = "ceiling"          // bandwidth / active bytes per token (t/s)
	FigureEfficiency      Figure = "efficiency"       // observed tg / ceiling
	FigureCV              Figure = "cv"               // CV of one cell's repetitions
	FigureRepeatabilityCV Figure = "repeatability_cv" // CV of a repeated leg's means
	FigureContamination   Figure = "contamination_delta"
	// FigureDeviceRatio is a cell on one device over the same cell on another: the RPC/local
	// or Vulkan/CPU ratio (device and base_device name axes.devices values).
	FigureDeviceRatio Figure = "device_ratio"
	// FigureJPerToken is a cell's Joules per token from the plan's telemetry (per prompt token
	// for pp, per generated token for tg); FigureTokensPerJ its inverse (docs/telemetry.md).
	FigureJPerToken  Figure = "j_per_token"
	FigureTokensPerJ Figure = "tokens_per_j"
)

var figures = map[Figure]bool{FigureCell: true, FigureCrossing: true, FigureSlope: true, FigureCeiling: true,
	FigureEfficiency: true, FigureCV: true, FigureRepeatabilityCV: true, FigureContamination: true, FigureDeviceRatio: true,
	FigureJPerToken: true, FigureTokensPerJ: true}

// Selector names one number of the study's results.
type Selector struct {
	Figure Figure `json:"figure"`
	Model  string `json:"model,omitempty"` // model ID
	Test   string `json:"test,omitempty"`  // "tg", "pp", "pg", or exact: "tg128", "pp512"
	Depth  *int   `json:"depth,omitempty"`
	// Config narrows the cell when an axis other than depth has several values.
	Config *ConfigSel `json:"config,omitempty"`
	Line   float64    `json:"line,omitempty"`       // crossing: the line in t/s
	Conv   string     `json:"convention,omitempty"` // ceiling/efficiency: "house" or "tensor_exact"
	// Legs name the legs a repeatability or contamination figure reads: for contamination,
	// [quiet before, contaminated, quiet after].
	Legs []string `json:"legs,omitempty"`
	// Device and BaseDevice are the two axes.devices values a device_ratio compares
	// (device ÷ base_device), e.g. "RPC0" over "none".
	Device     string `json:"device,omitempty"`
	BaseDevice string `json:"base_device,omitempty"`
}

// ConfigSel picks one value of each swept axis; nil fields match any (but must then be
// unambiguous).
type ConfigSel struct {
	Ubatch    *int    `json:"ubatch,omitempty"`
	Batch     *int    `json:"batch,omitempty"`
	FlashAttn string  `json:"flash_attn,omitempty"`
	KV        *KVType `json:"kv,omitempty"`
	Threads   *int    `json:"threads,omitempty"`
	NGL       *int    `json:"ngl,omitempty"`
	// Devices picks the rows of one axes.devices value ("none", "Vulkan0" …).
	Devices string `json:"devices,omitempty"`
}

// String names the selector for tables: "tg128 @ d4096 of qwen30b", "crossing 70 t/s of tg …".
func (s Selector) String() string {
	var b strings.Builder
	b.WriteString(string(s.Figure))
	if s.Test != "" {
		b.WriteString(" " + s.Test)
	}
	if s.Depth != nil {
		fmt.Fprintf(&b, " @ d%d", *s.Depth)
	}
	if s.Line != 0 {
		fmt.Fprintf(&b, " below %g", s.Line)
	}
	if s.Model != "" {
		b.WriteString(" of " + s.Model)
	}
	if s.Conv != "" {
		b.WriteString(" (" + s.Conv + ")")
	}
	if len(s.Legs) > 0 {
		b.WriteString(" legs " + strings.Join(s.Legs, ","))
	}
	if s.Device != "" || s.BaseDevice != "" {
		b.WriteString(" " + s.Device + " / " + s.BaseDevice)
	}
	if c := s.Config; c != nil {
		var parts []string
		if c.Ubatch != nil {
			parts = append(parts, fmt.Sprintf("ub%d", *c.Ubatch))
		}
		if c.Batch != nil {
			parts = append(parts, fmt.Sprintf("b%d", *c.Batch))
		}
		if c.FlashAttn != "" {
			parts = append(parts, "fa-"+c.FlashAttn)
		}
		if c.KV != nil {
			parts = append(parts, "kv-"+c.KV.K+"/"+c.KV.V)
		}
		if c.Threads != nil {
			parts = append(parts, fmt.Sprintf("t%d", *c.Threads))
		}
		if c.Devices != "" {
			parts = append(parts, "dev-"+c.Devices)
		}
		if c.NGL != nil {
			parts = append(parts, fmt.Sprintf("ngl%d", *c.NGL))
		}
		if len(parts) > 0 {
			b.WriteString(" [" + strings.Join(parts, " ") + "]")
		}
	}
	return b.String()
}

// Outcome is a computed verdict's word.
type Outcome string

const (
	Hit          Outcome = "HIT"
	Miss         Outcome = "MISS"
	MissEdge     Outcome = "MISS (edge)"
	Inconclusive Outcome = "INCONCLUSIVE"
	Holds        Outcome = "HOLDS"
	Fails        Outcome = "FAILS"
	Answered     Outcome = "ANSWERED"
	Pending      Outcome = "PENDING" // the legs it needs have not all finished
	Unresolvable Outcome = "UNRESOLVABLE"
)

// Verdict answers one prediction.
type Verdict struct {
	Prediction string   `json:"prediction"`
	Outcome    Outcome  `json:"outcome"`       // for a fork that fired: Hit, with Arm set
	Arm        string   `json:"arm,omitempty"` // fork: the arm that fired
	Value      *float64 `json:"value"`         // the observed value (About)
	Other      *float64 `json:"other"`         // comparison: the right-hand value
	Distance   *float64 `json:"distance"`      // band miss: signed relative distance from the nearest bound
	Detail     string   `json:"detail"`        // one line for the scoreboard
	Expected   string   `json:"expected"`      // the expectation in words
	Sources    []string `json:"sources"`       // references to the sample rows the value came from
	Problem    string   `json:"problem,omitempty"`
}

func fptr(v float64) *float64 { return &v }

// Expectation prints a prediction's expectation for the scoreboard.
func (p Prediction) Expectation() string {
	switch p.Kind {
	case KindBand:
		return rangeText(p.Lo, p.Hi)
	case KindFork:
		var arms []string
		for _, a := range p.Arms {
			arms = append(arms, a.Name+": "+rangeText(a.Lo, a.Hi))
		}
		return strings.Join(arms, "; ") + "; otherwise inconclusive"
	case KindComparison:
		than := "?"
		if p.Than != nil {
			than = p.Than.String()
		}
		stats := ""
		switch p.Stats {
		case StatsBenchmath:
			stats = ", " + StatsJudged
		case StatsProcess:
			stats = ", " + StatsJudgedProcesses
		}
		if p.Op == "within" {
			return fmt.Sprintf("within %g%% of %s%s", p.Tolerance*100, than, stats)
		}
		return fmt.Sprintf("%s %s (tolerance %g%%%s)", p.Op, than, p.Tolerance*100, stats)
	case KindQuestion:
		return "question (no expectation)"
	}
	return ""
}

func rangeText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%g–%g", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf(">= %g", *lo)
	case hi != nil:
		return fmt.Sprintf("<= %g", *hi)
	}
	return "any"
}

func inRange(v float64, lo, hi *float64) bool {
	return (lo == nil || v >= *lo) && (hi == nil || v <= *hi)
}

// EvaluateBand: HIT inside [lo, hi]; otherwise MISS with the signed relative distance from the
// nearest bound, "MISS (edge)" when that distance is within the noise floor.
func EvaluateBand(p Prediction, v float64) Verdict {
	vd := Verdict{Prediction: p.ID, Value: fptr(v), Expected: p.Expectation()}
	if inRange(v, p.Lo, p.Hi) {
		vd.Outcome = Hit
		vd.Detail = fmt.Sprintf("%.4g inside %s", v, rangeText(p.Lo, p.Hi))
		return vd
	}
	var bound float64
	if p.Lo != nil && v < *p.Lo {
		bound = *p.Lo
	} else {
		bound = *p.Hi
	}
	var d float64
	if bound != 0 {
		d = (v - bound) / math.Abs(bound)
	} else {
		d = math.Copysign(math.Inf(1), v)
	}
	vd.Distance = fptr(d)
	vd.Outcome = Miss
	if math.Abs(d) <= p.NoiseFloor {
		vd.Outcome = MissEdge
	}
	side := "above the band's top"
	if d < 0 {
		side = "below the band's floor"
	}
	vd.Detail = fmt.Sprintf("%.4g is %.1f%% %s (%g)", v, math.Abs(d)*100, side, bound)
	return vd
}

// EvaluateFork: the first arm whose range holds the value fires; none: INCONCLUSIVE.
func EvaluateFork(p Prediction, v float64) Verdict {
	vd := Verdict{Prediction: p.ID, Value: fptr(v), Expected: p.Expectation()}
	for _, a := range p.Arms {
		if inRange(v, a.Lo, a.Hi) {
			vd.Outcome, vd.Arm = Hit, a.Name
			vd.Detail = fmt.Sprintf("%.4g fires arm %q (%s)", v, a.Name, rangeText(a.Lo, a.Hi))
			return vd
		}
	}
	vd.Outcome = Inconclusive
	vd.Detail = fmt.Sprintf("%.4g falls in no arm: inconclusive", v)
	return vd
}

// EvaluateComparison: ">=" holds when a >= b·(1 - tol); "<=" when a <= b·(1 + tol); "within"
// when |a/b - 1| <= tol.
func EvaluateComparison(p Prediction, a, b float64) Verdict {
	vd := Verdict{Prediction: p.ID, Value: fptr(a), Other: fptr(b), Expected: p.Expectation()}
	var ok bool
	switch p.Op {
	case ">=":
		ok = a >= b*(1-p.Tolerance)
	case "<=":
		ok = a <= b*(1+p.Tolerance)
	case "within":
		ok = b != 0 && math.Abs(a/b-1) <= p.Tolerance
	}
	vd.Outcome = Fails
	if ok {
		vd.Outcome = Holds
	}
	rel := "n/a"
	if b != 0 {
		rel = fmt.Sprintf("%+.1f%%", (a/b-1)*100)
	}
	vd.Detail = fmt.Sprintf("%.4g vs %.4g (%s)", a, b, rel)
	return vd
}

// EvaluateQuestion answers with the value.
func EvaluateQuestion(p Prediction, v float64) Verdict {
	return Verdict{Prediction: p.ID, Outcome: Answered, Value: fptr(v), Expected: p.Expectation(),
		Detail: fmt.Sprintf("%.4g", v)}
}
