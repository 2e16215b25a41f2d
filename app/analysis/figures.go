// Package analysis holds sparkbench's derived figures and statistics as pure functions: the
// arithmetic the bench log seed did by hand (ceilings, crossings, slopes, repeatability,
// contamination, scaling knees, serving tax) and benchstat-style comparisons. Definitions
// follow docs/domain.md; every function is table-tested against hand-computed values.
package analysis

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Point is a measured value at a depth (tokens already in the KV cache), or at any x.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// CrossingKind says how a series relates to a line.
type CrossingKind string

const (
	Crossed      CrossingKind = "crossed"      // first falls below the line between two measured depths
	BelowAtStart CrossingKind = "below_at_d0"  // already below at the first measured depth
	NotReached   CrossingKind = "not_in_range" // never falls below within the measured range
)

// Crossing is where a metric first falls below a line ("badge death").
type Crossing struct {
	Kind  CrossingKind `json:"kind"`
	Line  float64      `json:"line"`
	Depth float64      `json:"depth,omitempty"` // interpolated x, for Kind == Crossed
	From  Point        `json:"from"`            // the bracketing measured points (Crossed)
	To    Point        `json:"to"`
}

func (c Crossing) String() string {
	switch c.Kind {
	case Crossed:
		return fmt.Sprintf("crosses %g at about %.0f (between %g@%g and %g@%g)", c.Line, c.Depth, c.From.Y, c.From.X, c.To.Y, c.To.X)
	case BelowAtStart:
		return fmt.Sprintf("below %g already at %g (%g)", c.Line, c.From.X, c.From.Y)
	default:
		return fmt.Sprintf("does not fall below %g within the measured range (last %g@%g)", c.Line, c.To.Y, c.To.X)
	}
}

// ErrNoPoints is returned for an empty series.
var ErrNoPoints = errors.New("no measured points")

func sortedFinite(points []Point) ([]Point, error) {
	if len(points) == 0 {
		return nil, ErrNoPoints
	}
	ps := append([]Point(nil), points...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].X < ps[j].X })
	for i, p := range ps {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
			return nil, fmt.Errorf("point %d (%g, %g) is not a finite number", i, p.X, p.Y)
		}
		if i > 0 && ps[i-1].X == p.X {
			return nil, fmt.Errorf("two points at depth %g: average the repetitions first", p.X)
		}
	}
	return ps, nil
}

// CrossingDepth finds where the series first falls below line, interpolating linearly between
// the bracketing measured depths. A value equal to the line is not below it.
func CrossingDepth(points []Point, line float64) (Crossing, error) {
	ps, err := sortedFinite(points)
	if err != nil {
		return Crossing{}, err
	}
	if err := checkRates(ps); err != nil {
		return Crossing{}, err
	}
	c := Crossing{Line: line}
	if ps[0].Y < line {
		c.Kind, c.From, c.To = BelowAtStart, ps[0], ps[0]
		return c, nil
	}
	for i := 1; i < len(ps); i++ {
		a, b := ps[i-1], ps[i]
		if b.Y < line {
			c.Kind, c.From, c.To = Crossed, a, b
			c.Depth = a.X + (a.Y-line)/(a.Y-b.Y)*(b.X-a.X)
			return c, nil
		}
	}
	c.Kind, c.From, c.To = NotReached, ps[len(ps)-1], ps[len(ps)-1]
	return c, nil
}

// DepthSlope is (m(d) - m(0)) / m(0) for every measured depth after the first, as a fraction
// (-0.28 is -28%). The first point is the reference whatever its depth.
type SlopePoint struct {
	Depth float64 `json:"depth"`
	Slope float64 `json:"slope"`
}

func DepthSlopes(points []Point) ([]SlopePoint, error) {
	ps, err := sortedFinite(points)
	if err != nil {
		return nil, err
	}
	if err := checkRates(ps); err != nil {
		return nil, err
	}
	ref := ps[0].Y
	if ref == 0 {
		return nil, fmt.Errorf("reference value at depth %g is zero: the slope is undefined", ps[0].X)
	}
	out := make([]SlopePoint, 0, len(ps)-1)
	for _, p := range ps[1:] {
		out = append(out, SlopePoint{Depth: p.X, Slope: (p.Y - ref) / ref})
	}
	return out, nil
}

// CheckRatePoint refuses a point that cannot be a rate at a depth: a depth (tokens already in
// the KV cache) below 0, a rate that is not above 0, or either not a finite number.
func CheckRatePoint(p Point) error {
	switch {
	case math.IsNaN(p.X) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0):
		return fmt.Errorf("(%g, %g) is not a finite number", p.X, p.Y)
	case p.X < 0:
		return fmt.Errorf("depth %g is negative; a depth counts the tokens already in the KV cache, 0 or more", p.X)
	case !(p.Y > 0):
		return fmt.Errorf("rate %g t/s is not above 0; a measured rate is positive", p.Y)
	}
	return nil
}

// checkRates is CheckRatePoint over a series, naming the point.
func checkRates(points []Point) error {
	for i, p := range points {
		if err := CheckRatePoint(p); err != nil {
			return fmt.Errorf("point %d: %w", i, err)
		}
	}
	return nil
}

// finiteRate refuses a computed rate that overflowed or underflowed.
func finiteRate(what string, r float64) (float64, error) {
	if math.IsInf(r, 0) || math.IsNaN(r) || !(r > 0) {
		return 0, fmt.Errorf("%s comes out as %g: the inputs are out of any real range (check their units)", what, r)
	}
	return r, nil
}

// CeilingTPS is the bandwidth ceiling in tokens/s: bandwidth (GB/s, 1e9 bytes) / active bytes
// per token. 220 GB/s over 9.0e9 bytes/token is 24.4 t/s.
func CeilingTPS(bandwidthGBs, activeBytesPerToken float64) (float64, error) {
	if !(bandwidthGBs > 0) || math.IsInf(bandwidthGBs, 0) {
		return 0, fmt.Errorf("bandwidth %g GB/s: want a positive number", bandwidthGBs)
	}
	if !(activeBytesPerToken > 0) || math.IsInf(activeBytesPerToken, 0) {
		return 0, fmt.Errorf("active bytes per token %g: want a positive number", activeBytesPerToken)
	}
	return finiteRate("the ceiling", bandwidthGBs*1e9/activeBytesPerToken)
}

// HouseActiveBytes is the log seed's convention: file bytes / params x active params.
func HouseActiveBytes(fileBytes, params, activeParams float64) (float64, error) {
	if !(params > 0) {
		return 0, fmt.Errorf("parameter count %g: want a positive number", params)
	}
	return fileBytes / params * activeParams, nil
}

// Efficiency is observed / ceiling.
func Efficiency(observed, ceiling float64) (float64, error) {
	if !(ceiling > 0) {
		return 0, fmt.Errorf("ceiling %g: want a positive number", ceiling)
	}
	return observed / ceiling, nil
}

// ContaminationDelta is contaminated / mean(quiet before, quiet after) - 1.
func ContaminationDelta(quietBefore, contaminated, quietAfter float64) (float64, error) {
	ref := (quietBefore + quietAfter) / 2
	if !(ref > 0) {
		return 0, fmt.Errorf("quiet bracket mean %g: want a positive number", ref)
	}
	return contaminated/ref - 1, nil
}

// ServingTax is 1 - single-stream server generation rate / llama-bench tg on the same build,
// model and flags (the seed measured about 4.8%).
func ServingTax(serverGenRate, benchTG float64) (float64, error) {
	if !(benchTG > 0) {
		return 0, fmt.Errorf("llama-bench tg %g: want a positive number", benchTG)
	}
	return 1 - serverGenRate/benchTG, nil
}

// ServerTax is a server's rate / llama-batched-bench's rate at the same B (the server with
// B slots and B concurrent clients; the batched engine with B parallel sequences): the
// fraction of the batched engine's throughput the server delivers (0.80: a 20% tax for
// scheduling, HTTP, sampling and streaming). Pair like with like (docs/domain.md): the cell
// generation rate with B×TG/T (prompts included), the per-stream rate × B with S_TG.
func ServerTax(serverRate, batchedRate float64) (float64, error) {
	if !(batchedRate > 0) || math.IsInf(batchedRate, 0) {
		return 0, fmt.Errorf("batched-bench rate %g: want a positive number", batchedRate)
	}
	if !(serverRate >= 0) || math.IsInf(serverRate, 0) {
		return 0, fmt.Errorf("server rate %g: want a number >= 0", serverRate)
	}
	return serverRate / batchedRate, nil
}

// ServerTaxSeries is ServerTax at every B both series measured (X = B: the server's slots
// with as many clients, the batched-bench rows' B), in order of B. B values only one side
// measured are left out; none in common is an error.
func ServerTaxSeries(server, batched []Point) ([]Point, error) {
	sv, err := sortedFinite(server)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	bt, err := sortedFinite(batched)
	if err != nil {
		return nil, fmt.Errorf("batched-bench: %w", err)
	}
	byB := make(map[float64]float64, len(bt))
	for _, p := range bt {
		byB[p.X] = p.Y
	}
	var out []Point
	for _, p := range sv {
		b, ok := byB[p.X]
		if !ok {
			continue
		}
		tax, err := ServerTax(p.Y, b)
		if err != nil {
			return nil, fmt.Errorf("B=%g: %w", p.X, err)
		}
		out = append(out, Point{X: p.X, Y: tax})
	}
	if len(out) == 0 {
		return nil, errors.New("the server and batched-bench series share no B: measure the server with clients = slots = a batched-bench B")
	}
	return out, nil
}

// Scaling describes aggregate rate against slots (or clients).
type Scaling struct {
	Speedup  float64        `json:"speedup"`  // rate(max P) / rate(min P)
	Doubling []DoublingGain `json:"doubling"` // gain per step between consecutive points
	Knee     *float64       `json:"knee"`     // first P whose gain < threshold; nil: no knee in range
	KneeRule float64        `json:"knee_rule"`
}

// DoublingGain is rate(P) / rate(previous P) - 1 for one step of the sweep.
type DoublingGain struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Gain float64 `json:"gain"`
}

// DefaultKneeGain is the gain per doubling below which the knee is declared (20%).
const DefaultKneeGain = 0.20

// ScalingOf computes speedup, gain per step and the knee (the first P whose gain over the
// previous point falls below threshold). Points are (P, aggregate rate).
func ScalingOf(points []Point, threshold float64) (Scaling, error) {
	ps, err := sortedFinite(points)
	if err != nil {
		return Scaling{}, err
	}
	if len(ps) < 2 {
		return Scaling{}, fmt.Errorf("need at least two slot counts, have %d", len(ps))
	}
	for _, p := range ps {
		if !(p.Y > 0) {
			return Scaling{}, fmt.Errorf("rate %g at %g: want a positive number", p.Y, p.X)
		}
	}
	s := Scaling{Speedup: ps[len(ps)-1].Y / ps[0].Y, KneeRule: threshold}
	for i := 1; i < len(ps); i++ {
		g := ps[i].Y/ps[i-1].Y - 1
		s.Doubling = append(s.Doubling, DoublingGain{From: ps[i-1].X, To: ps[i].X, Gain: g})
		if s.Knee == nil && g < threshold {
			k := ps[i].X
			s.Knee = &k
		}
	}
	return s, nil
}
