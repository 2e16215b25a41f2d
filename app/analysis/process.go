package analysis

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
)

// The process is the unit of replication (docs/adaptive.md, "Processes and repetitions"): the
// repetitions inside one llama-bench process share its state (thread placement, memory layout,
// clocks, page cache), so they are sub-samples of that process, not independent samples of the
// quantity. Every interval and test here is over process means; the repetitions inside each
// process only estimate the within-process spread.

// ProcessSummary describes the processes of one cell: n processes of m repetitions each.
type ProcessSummary struct {
	// N is the number of processes, M the repetitions of each (MMin..MMax when they differ).
	N    int `json:"n"`
	MMin int `json:"m_min"`
	MMax int `json:"m_max"`
	// Mean is the mean of the process means; SD their standard deviation (n-1; 0 for one
	// process); Lo and Hi the t-based 95% interval of the mean over the n processes (equal to
	// Mean with one process: a point estimate, no interval).
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	// WithinCV is the pooled within-process spread (the repetitions about their process's mean)
	// over Mean; BetweenCV the spread of the process means beyond what the within-process spread
	// explains (the between-process component, floored at 0) over Mean. BetweenCV is known only
	// with two processes or more (Between false otherwise).
	WithinCV  float64 `json:"within_cv"`
	BetweenCV float64 `json:"between_cv"`
	Between   bool    `json:"between_known"`
	// Stopped: the adaptive rule chose N (SummarizeStopped): the interval charges one degree
	// of freedom for the stop.
	Stopped bool `json:"stopped,omitempty"`
}

// HasInterval reports whether the summary has an interval: two processes or more (three
// when the adaptive rule chose their count); with fewer it is a point estimate.
func (s ProcessSummary) HasInterval() bool {
	if s.Stopped {
		return s.N >= 3
	}
	return s.N >= 2
}

// Processes splits samples into processes of the given sizes (their sum must be len(samples));
// no sizes: one process of every sample.
func Processes(samples []float64, sizes []int) ([][]float64, error) {
	if len(sizes) == 0 {
		if len(samples) == 0 {
			return nil, nil
		}
		return [][]float64{samples}, nil
	}
	var out [][]float64
	at := 0
	for i, k := range sizes {
		if k < 0 || at+k > len(samples) {
			return nil, fmt.Errorf("process %d: %d repetitions past the %d samples", i+1, k, len(samples))
		}
		if k > 0 {
			out = append(out, samples[at:at+k])
		}
		at += k
	}
	if at != len(samples) {
		return nil, fmt.Errorf("the processes hold %d repetitions, the cell %d", at, len(samples))
	}
	return out, nil
}

// SummarizeProcesses summarises a cell's processes (each a non-empty list of repetitions).
func SummarizeProcesses(procs [][]float64) ProcessSummary {
	s := ProcessSummary{N: len(procs)}
	if len(procs) == 0 {
		return s
	}
	means := make([]float64, len(procs))
	var ssw float64 // within-process sum of squares
	dfw := 0
	s.MMin, s.MMax = len(procs[0]), len(procs[0])
	for i, p := range procs {
		means[i] = stat.Mean(p, nil)
		for _, x := range p {
			d := x - means[i]
			ssw += d * d
		}
		dfw += len(p) - 1
		s.MMin, s.MMax = min(s.MMin, len(p)), max(s.MMax, len(p))
	}
	s.Mean = stat.Mean(means, nil)
	s.Lo, s.Hi = s.Mean, s.Mean
	within := 0.0
	if dfw > 0 {
		within = ssw / float64(dfw)
	}
	if s.Mean != 0 {
		s.WithinCV = math.Sqrt(within) / math.Abs(s.Mean)
	}
	if len(procs) > 1 {
		s.SD = stat.StdDev(means, nil)
		half := TCritical(0.95, float64(len(procs)-1)) * s.SD / math.Sqrt(float64(len(procs)))
		s.Lo, s.Hi = s.Mean-half, s.Mean+half
		// var(process means) = σ_b² + σ_w²/m (m: the harmonic mean of the sizes)
		hm := 0.0
		for _, p := range procs {
			hm += 1 / float64(len(p))
		}
		hm = float64(len(procs)) / hm
		between := s.SD*s.SD - within/hm
		if between < 0 {
			between = 0
		}
		if s.Mean != 0 {
			s.BetweenCV = math.Sqrt(between) / math.Abs(s.Mean)
		}
		s.Between = true
	}
	return s
}

// MString is the repetitions per process: "3", or "2–4" when they differ.
func (s ProcessSummary) MString() string {
	if s.MMin == s.MMax {
		return fmt.Sprint(s.MMin)
	}
	return fmt.Sprintf("%d–%d", s.MMin, s.MMax)
}

// ProcessComparison compares two cells at the process level: Welch's t-test on the process
// means (the test of a nested design's cluster means), its interval of the relative
// difference, and each side's processes.
type ProcessComparison struct {
	Base, New ProcessSummary
	Delta     float64 `json:"delta"` // New.Mean / Base.Mean - 1
	// P is the two-sided p-value; NaN when a side has fewer than two processes (no interval
	// between processes can be had from one). PValue is P as JSON holds it (null: NaN).
	P           float64  `json:"-"`
	PValue      *float64 `json:"p"`
	Alpha       float64  `json:"alpha"`
	Significant bool     `json:"significant"`
	// DeltaLo/DeltaHi bound the 95% interval of the relative difference (equal to Delta when
	// there is none).
	DeltaLo float64 `json:"delta_lo"`
	DeltaHi float64 `json:"delta_hi"`
	// BaseOf and NewOf: a comparison of adaptive cells (CompareStopped), the processes each
	// side ran, of which the first min(BaseOf, NewOf) are compared; 0 otherwise.
	BaseOf int `json:"base_of,omitempty"`
	NewOf  int `json:"new_of,omitempty"`
}

// MinProcesses is the number of processes per side below which a comparison has no interval.
const MinProcesses = 2

// CompareProcesses compares new against base, each a cell's processes.
func CompareProcesses(base, new [][]float64, alpha float64) ProcessComparison {
	c := ProcessComparison{Base: SummarizeProcesses(base), New: SummarizeProcesses(new), Alpha: alpha, P: math.NaN()}
	if c.Base.Mean != 0 {
		c.Delta = c.New.Mean/c.Base.Mean - 1
	}
	c.DeltaLo, c.DeltaHi = c.Delta, c.Delta
	if c.Base.N < MinProcesses || c.New.N < MinProcesses || c.Base.Mean == 0 {
		return c
	}
	diff := c.New.Mean - c.Base.Mean
	se, df := welchSE(c.Base.SD, c.Base.N, c.New.SD, c.New.N)
	if se == 0 {
		c.P = 1
		if diff != 0 {
			c.P = 0
		}
		c.Significant = c.P < alpha
		p := c.P
		c.PValue = &p
		return c
	}
	c.P = welchP(diff, se, df)
	half := TCritical(1-alpha, df) * se
	c.DeltaLo, c.DeltaHi = (diff-half)/c.Base.Mean, (diff+half)/c.Base.Mean
	c.Significant = c.P < alpha
	p := c.P
	c.PValue = &p
	return c
}

// CompareStopped compares cells whose process counts an adaptive rule chose (on either side):
// the first k = min(n_base, n_new) processes of each side, in the order they ran, by
// CompareProcesses. A rule that stops when the interval meets its target stops when the
// spread happens to read low, so the processes of a side that stopped are tighter than the
// process spread, and Welch's test over all of them rejected 8–9% of A/A pairs at α = 0.05
// (two studies, each stopped on its own; TestAdaptiveProcessRuleHoldsItsLevel). Compared at
// equal counts, the side that stopped later contributes processes that had not met the rule
// (wider), the other those that had (tighter), and the test held 4–5%.
func CompareStopped(base, new [][]float64, alpha float64) ProcessComparison {
	k := min(len(base), len(new))
	c := CompareProcesses(base[:k], new[:k], alpha)
	c.BaseOf, c.NewOf = len(base), len(new)
	return c
}

// String prints the comparison the benchstat way, with the processes and repetitions of each
// side: "+3.21% [+1.02%, +5.40%] (p=0.012 n=4+4 processes, m=5+5)", "~ (p=0.412 …)", or, with
// fewer than two processes on a side, "? no interval (n=1+1 processes, m=3+3: one process per
// side gives a point estimate only; +1.20% between the two)".
func (c ProcessComparison) String() string {
	nm := fmt.Sprintf("n=%d+%d processes, m=%s+%s", c.Base.N, c.New.N, c.Base.MString(), c.New.MString())
	if c.BaseOf > 0 && (c.BaseOf != c.Base.N || c.NewOf != c.New.N) {
		nm = fmt.Sprintf("n=%d+%d processes, the first of %d+%d the adaptive rule ran, m=%s+%s", c.Base.N, c.New.N, c.BaseOf, c.NewOf, c.Base.MString(), c.New.MString())
	}
	switch {
	case math.IsNaN(c.P):
		return fmt.Sprintf("? no interval (%s: fewer than %d processes on a side give a point estimate only; %+.2f%% between them)", nm, MinProcesses, c.Delta*100)
	case !c.Significant:
		return fmt.Sprintf("~ (p=%.3f %s)", c.P, nm)
	}
	return fmt.Sprintf("%+.2f%% [%+.2f%%, %+.2f%%] (p=%.3f %s)", c.Delta*100, c.DeltaLo*100, c.DeltaHi*100, c.P, nm)
}
