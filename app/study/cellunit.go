package study

import (
	"fmt"
	"math"

	"sparkbench/app/analysis"
)

// CellUnit is a result cell at the process level, the unit of replication.
type CellUnit struct {
	N int    `json:"n"` // processes
	M string `json:"m"` // repetitions per process: "5", or "2–4" when they differ
	// Mean is the mean of the process means (t/s); Lo and Hi its 95% interval over the n
	// processes, null with too few for one (one process: a point estimate).
	Mean float64  `json:"mean_ts"`
	Lo   *float64 `json:"lo_ts"`
	Hi   *float64 `json:"hi_ts"`
	// HalfWidth is the interval's half-width over the mean (null: no interval).
	HalfWidth *float64 `json:"half_width"`
	// BetweenCV is the between-process spread over the mean (null: not measured, one process);
	// WithinCV the pooled spread of the repetitions about their process's mean.
	BetweenCV *float64 `json:"between_cv"`
	WithinCV  float64  `json:"within_cv"`
	// Stopped: an adaptive rule chose n, and the interval charges one degree of freedom for
	// that stop (analysis.SummarizeStopped).
	Stopped bool `json:"adaptive_stop,omitempty"`
}

// NewCellUnit is a cell's process-level summary from its processes' summary.
func NewCellUnit(s analysis.ProcessSummary) *CellUnit {
	u := &CellUnit{N: s.N, M: s.MString(), Mean: s.Mean, WithinCV: s.WithinCV, Stopped: s.Stopped}
	if s.HasInterval() {
		u.Lo, u.Hi = fptr(s.Lo), fptr(s.Hi)
		if s.Mean != 0 {
			u.HalfWidth = fptr((s.Hi - s.Mean) / math.Abs(s.Mean))
		}
	}
	if s.Between {
		u.BetweenCV = fptr(s.BetweenCV)
	}
	return u
}

// RelHalfWidth is the interval's half-width over the mean (false: no interval).
func (u *CellUnit) RelHalfWidth() (float64, bool) {
	if u == nil || u.HalfWidth == nil {
		return 0, false
	}
	return *u.HalfWidth, true
}

// Words is the cell at the process level in a few words: "n=6 m=3, 95% CI ±1.92%" or
// "n=1 m=5, a point estimate (one process: no interval)".
func (u *CellUnit) Words() string {
	if u == nil {
		return ""
	}
	nm := fmt.Sprintf("n=%d m=%s", u.N, u.M)
	if h, ok := u.RelHalfWidth(); ok {
		return fmt.Sprintf("%s, 95%% CI ±%.2f%%", nm, h*100)
	}
	if u.N == 1 {
		return nm + ", a point estimate (one process: no interval)"
	}
	return fmt.Sprintf("%s, no interval (%d processes after an adaptive stop: it needs 3)", nm, u.N)
}

// cellUnit summarises a result row's processes (an adaptive cell's chunks; else one): an
// adaptive plan's count was chosen by its rule, so its interval charges the stop.
func cellUnit(p *Plan, row ResultRow) *CellUnit {
	procs, err := analysis.Processes(row.Result.SamplesTs, row.Chunks)
	if err != nil || len(procs) == 0 {
		return nil
	}
	if p.Adaptive != nil {
		return NewCellUnit(analysis.SummarizeStopped(procs))
	}
	return NewCellUnit(analysis.SummarizeProcesses(procs))
}
