package study

import (
	"context"
	"fmt"

	"sparkbench/app/analysis"
)

// The A/A control (docs/adaptive.md): every cell of a study compared with itself, its
// repetitions split in two halves measured the way two arms are. An adaptive cell's halves are
// its alternate chunks (1st, 3rd, … against 2nd, 4th, …): separate processes interleaved in
// time, as the arms of an interleaved plan are. A fixed cell's halves are the first half of its
// repetitions against the second (one process: what drift within it does to a comparison of
// two legs run one after the other). Both halves measure the same thing, so every significant
// difference is a false positive; their rate over the cells, against alpha, says whether this
// machine's noise and drift fool the comparison.

// AAControl is the A/A control of one or two studies.
type AAControl struct {
	Stats string   `json:"stats"` // "process", "benchmath" or "welch", as the comparison
	Alpha float64  `json:"alpha"`
	Cells []AACell `json:"cells"`
	// Tested counts the cells whose halves the test can tell apart at alpha; FalsePositives
	// those it did; Rate is their ratio (null: no cell tested).
	Tested         int      `json:"tested"`
	FalsePositives int      `json:"false_positives"`
	Rate           *float64 `json:"rate"`
	// Untestable names the cells left out: too few repetitions to split, or halves so small
	// the test cannot reach p < alpha (Mann–Whitney with 3 against 3: never).
	Untestable []string `json:"untestable"`
}

// AACell is one cell against itself.
type AACell struct {
	Study  int64  `json:"study"`
	Cell   string `json:"cell"`
	Split  string `json:"split"`
	Source string `json:"source"`
	// Delta is the second half over the first, less 1; P the test's p-value (null when it
	// cannot be computed); Word the benchstat column.
	Delta       float64  `json:"delta"`
	P           *float64 `json:"p"`
	Significant bool     `json:"significant"`
	Word        string   `json:"word"`
}

func newAAControl(stats string, alpha float64) *AAControl {
	return &AAControl{Stats: stats, Alpha: alpha, Cells: []AACell{}, Untestable: []string{}}
}

// AAHalves splits a cell's repetitions in the A/A control's two halves: alternate chunks when
// the cell has two or more (chunks: the kept repetitions of each), else the first half of the
// repetitions against the second. how says which.
func AAHalves(xs []float64, chunks []int) (a, b []float64, how string) {
	if len(chunks) >= 2 {
		at := 0
		for i, n := range chunks {
			if i%2 == 0 {
				a = append(a, xs[at:at+n]...)
			} else {
				b = append(b, xs[at:at+n]...)
			}
			at += n
		}
		return a, b, fmt.Sprintf("odd against even chunks (%d chunks)", len(chunks))
	}
	h := len(xs) / 2
	return xs[:h], xs[h:], "first half against second half of the repetitions (one process)"
}

// add compares each of a study's cells with itself.
func (c *AAControl) add(studyID int64, cells map[cellKey]sideCell, keys []cellKey) {
	for _, k := range keys {
		sc := cells[k]
		label := fmt.Sprintf("study %d %s", studyID, cellLabel(sc.model, k.test, k.depth, k.config))
		if c.Stats == StatsProcess {
			c.addProcesses(studyID, label, k, sc)
			continue
		}
		a, b, how := AAHalves(sc.row.SamplesTs, sc.row.Chunks)
		if len(a) < 2 || len(b) < 2 {
			c.Untestable = append(c.Untestable, fmt.Sprintf("%s: %d+%d repetitions after the split; each half needs 2", label, len(a), len(b)))
			continue
		}
		if p := analysis.MinPValueU(len(a), len(b)); c.Stats == StatsBenchmath && p >= c.Alpha {
			c.Untestable = append(c.Untestable, fmt.Sprintf("%s: n=%d+%d after the split: the Mann-Whitney test cannot reach p < %g (its smallest p is %.3f)",
				label, len(a), len(b), c.Alpha, p))
			continue
		}
		var cc CellComparison
		compareSamples(&cc, a, b, nil, nil, c.Stats, c.Alpha, false)
		c.Cells = append(c.Cells, AACell{Study: studyID, Cell: cellLabel(sc.model, k.test, k.depth, k.config), Split: how,
			Source: sc.row.Ref, Delta: cc.Delta, P: cc.P, Significant: cc.Significant, Word: cc.Word})
	}
}

// finish counts the false positives.
func (c *AAControl) finish() {
	c.Tested, c.FalsePositives = len(c.Cells), 0
	for _, x := range c.Cells {
		if x.Significant {
			c.FalsePositives++
		}
	}
	if c.Tested > 0 {
		c.Rate = fptr(float64(c.FalsePositives) / float64(c.Tested))
	}
}

// AAControlOf is the A/A control of one study alone (o.Stats StatsAuto: benchmath when it has
// adaptive repetitions, else Welch).
func AAControlOf(ctx context.Context, rec RecordReader, id int64, o CompareOptions) (*AAControl, ComparedStudy, error) {
	alpha := o.Alpha
	if alpha <= 0 || alpha >= 1 {
		alpha = DefaultAlpha
	}
	if err := CheckStats(o.Stats); err != nil {
		return nil, ComparedStudy{}, err
	}
	s, cells, keys, err := comparedSide(ctx, rec, id)
	if err != nil {
		return nil, s, err
	}
	if len(keys) == 0 {
		return nil, s, fmt.Errorf("study %d has no result cell yet: run it first: %w", id, ErrNotComparable)
	}
	c := newAAControl(resolveStats(o.Stats, o.OldAuto, s), alpha)
	c.add(s.ID, cells, keys)
	c.finish()
	return c, s, nil
}

// Words is the control's summary line: "A/A control: 1 of 8 cells significant at α = 0.05
// (false-positive rate 12.5%; expected at most 5%)".
func (c *AAControl) Words() string {
	if c.Rate == nil {
		return fmt.Sprintf("A/A control: no cell could be tested (%d left out)", len(c.Untestable))
	}
	return fmt.Sprintf("A/A control: %d of %d cells significant at alpha = %g (false-positive rate %.1f%%; expected at most %g%%)",
		c.FalsePositives, c.Tested, c.Alpha, *c.Rate*100, c.Alpha*100)
}

// addProcesses is add for process-level statistics: a cell's halves are its alternate
// processes (1st, 3rd, … against 2nd, 4th, …), each half needing two; the repetitions of one
// process are never split into arms (they are not independent of each other).
func (c *AAControl) addProcesses(studyID int64, label string, k cellKey, sc sideCell) {
	procs, err := analysis.Processes(sc.row.SamplesTs, sc.row.Chunks)
	if err != nil || len(procs) < 2*analysis.MinProcesses {
		c.Untestable = append(c.Untestable, fmt.Sprintf("%s: %d process(es): the halves are alternate processes, %d each at least",
			label, len(procs), analysis.MinProcesses))
		return
	}
	var a, b []float64
	var ac, bc []int
	for i, p := range procs {
		if i%2 == 0 {
			a, ac = append(a, p...), append(ac, len(p))
		} else {
			b, bc = append(b, p...), append(bc, len(p))
		}
	}
	var cc CellComparison
	compareSamples(&cc, a, b, ac, bc, StatsProcess, c.Alpha, false)
	c.Cells = append(c.Cells, AACell{Study: studyID, Cell: cellLabel(sc.model, k.test, k.depth, k.config),
		Split:  fmt.Sprintf("odd against even processes (%d processes)", len(procs)),
		Source: sc.row.Ref, Delta: cc.Delta, P: cc.P, Significant: cc.Significant, Word: cc.Word})
}
