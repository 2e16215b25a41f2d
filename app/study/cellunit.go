package study

import (
	"fmt"
	"math"
	"strings"

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

// ScoreProcesses is a band or fork verdict about a result cell read at the process level:
// the cell's processes and the verdict at each end of its 95% interval over them. The
// verdict of record stays the one on the cell's mean; this says whether it holds across the
// interval (Resolved) or would change within it.
type ScoreProcesses struct {
	N int    `json:"n"`
	M string `json:"m"`
	// Lo and Hi are the cell's interval over its processes (null: none, one process).
	Lo *float64 `json:"lo_ts"`
	Hi *float64 `json:"hi_ts"`
	// Resolved: the verdict is the same at both ends of the interval (null: no interval).
	Resolved *bool  `json:"resolved"`
	Words    string `json:"words"`
}

// scoreProcesses reads a band or fork verdict about a cell against the cell's interval over
// its processes; nil for other predictions or when the cell is not among the results.
func scoreProcesses(p Prediction, v Verdict, cells []ReportCell) *ScoreProcesses {
	if (p.Kind != KindBand && p.Kind != KindFork) || p.About.Figure != FigureCell || len(v.Sources) != 1 || v.Value == nil {
		return nil
	}
	var u *CellUnit
	for _, c := range cells {
		if c.Source == v.Sources[0] {
			u = c.Unit
		}
	}
	if u == nil {
		return nil
	}
	sp := &ScoreProcesses{N: u.N, M: u.M, Lo: u.Lo, Hi: u.Hi}
	if u.Lo == nil {
		sp.Words = fmt.Sprintf("at the process level: n=%d m=%s, no interval over processes (a point estimate): the verdict rests on one value", u.N, u.M)
		return sp
	}
	judge := func(x float64) string {
		if p.Kind == KindBand {
			return string(EvaluateBand(p, x).Outcome)
		}
		vd := EvaluateFork(p, x)
		return string(vd.Outcome) + " " + vd.Arm
	}
	at, lo, hi := judge(*v.Value), judge(*u.Lo), judge(*u.Hi)
	resolved := lo == at && hi == at
	sp.Resolved = &resolved
	span := fmt.Sprintf("n=%d m=%s, 95%% interval over processes [%.2f, %.2f]", u.N, u.M, *u.Lo, *u.Hi)
	if resolved {
		sp.Words = fmt.Sprintf("at the process level: %s: the verdict is the same across it", span)
	} else {
		sp.Words = fmt.Sprintf("at the process level: %s: NOT RESOLVED, the verdict would be %s at its low end and %s at its high end", span,
			strings.TrimSpace(lo), strings.TrimSpace(hi))
	}
	return sp
}
