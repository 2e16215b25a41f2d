package overview

import (
	"fmt"
	"sort"

	"sparkbench/app/analysis"
)

// BadgeTable is, per model (SHA-256), tg test, backend and configuration, whether its tg
// reaches the line under both conventions, and where it first falls below it.
type BadgeTable struct {
	Line float64 `json:"line"`
	Test string  `json:"test"`
	Deep int64   `json:"deep"`
	// DeepRule is how the both-depths convention reads the deep depth: DeepExact (only a value
	// measured at Deep decides it). Absent from tables made before it (older overview
	// receipts), which took the nearest measured depth: their heading says so.
	DeepRule string     `json:"deep_rule,omitempty"`
	Rows     []BadgeRow `json:"rows"`
	// Unresolved lists series that measured the test but not at depth 0.
	Unresolved []Unresolved `json:"unresolved"`
}

// DeepExact: the both-depths badge is decided only by a value measured at the deep depth asked.
const DeepExact = "exact"

// BadgeRow is one model's line in the badge table, from one study (the latest recorded on
// this machine that measured it at depth 0; an imported one only when no local one did).
type BadgeRow struct {
	Model        string `json:"model"`
	File         string `json:"file"`
	SHA256       string `json:"sha256"`
	Test         string `json:"test"`
	Backend      string `json:"backend"`
	Config       string `json:"config"`
	Study        int64  `json:"study"`
	StudyName    string `json:"study_name"`
	Imported     bool   `json:"imported"`
	ImportedFrom string `json:"imported_from,omitempty"`
	D0           Cell   `json:"d0"`
	// Deep is the measured depth nearest the asked deep depth (the deeper on a tie); nil when
	// only depth 0 was measured. DeepNote says which depth it is when not the asked one.
	Deep       *Cell  `json:"deep"`
	DeepNote   string `json:"deep_note,omitempty"`
	D0Only     Badge  `json:"d0_only"`
	BothDepths Badge  `json:"both_depths"`
	Death      Death  `json:"death"`
	// OtherStudies measured the same series too (not used for this row).
	OtherStudies []int64 `json:"other_studies"`
}

// Badge is one convention's answer.
type Badge struct {
	Decided bool   `json:"decided"`
	Earned  bool   `json:"earned"`
	Word    string `json:"word"` // "earned", "not earned", "undecided: …"
}

// Death is where tg first falls below the line: Kind "crossed" (Depth interpolated between
// From and To), "below_at_d0", or "not_in_range" (beyond the deepest measured depth, To).
type Death struct {
	Kind  analysis.CrossingKind `json:"kind"`
	Depth *float64              `json:"depth"`
	From  *Cell                 `json:"from,omitempty"`
	To    *Cell                 `json:"to,omitempty"`
	Text  string                `json:"text"`
	// Sources are every row of the depth series the crossing read.
	Sources []string `json:"sources"`
}

// Unresolved is a series (or model) a table cannot place, with the reason.
type Unresolved struct {
	Model  string `json:"model"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Test   string `json:"test"`
	Study  int64  `json:"study"`
	Reason string `json:"reason"`
}

type seriesKey struct{ sha, test, backend, config string }

// pick groups the series by (model SHA-256, test, backend, configuration) and picks, per
// group, the series with a depth-0 point recorded here (not imported) in the latest study,
// else an imported one; groups without depth 0 anywhere come back as unresolved.
func pick(all []Series) (chosen []Series, others map[seriesKey][]int64, unresolved []Unresolved) {
	groups := map[seriesKey][]Series{}
	var keys []seriesKey
	for _, sr := range all {
		k := seriesKey{sr.SHA256, sr.Test, sr.Backend, sr.Config}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], sr)
	}
	others = map[seriesKey][]int64{}
	for _, k := range keys {
		var best *Series
		for i := range groups[k] {
			sr := &groups[k][i]
			if len(sr.Points) == 0 || sr.Points[0].Depth != 0 {
				continue
			}
			if best == nil || better(sr, best) {
				best = sr
			}
		}
		if best == nil {
			sr := groups[k][len(groups[k])-1]
			unresolved = append(unresolved, Unresolved{Model: sr.Model, File: sr.File, SHA256: sr.SHA256, Test: sr.Test, Study: sr.ID,
				Reason: fmt.Sprintf("no %s result at depth 0 (%s, %s) in any study", sr.Test, sr.Backend, sr.Config)})
			continue
		}
		chosen = append(chosen, *best)
		others[k] = []int64{}
		for _, sr := range groups[k] {
			if sr.ID != best.ID {
				others[k] = append(others[k], sr.ID)
			}
		}
	}
	sortSeries(chosen)
	return chosen, others, unresolved
}

func better(a, b *Series) bool {
	if a.Imported != b.Imported {
		return !a.Imported
	}
	return a.ID > b.ID
}

func sortSeries(xs []Series) {
	sort.SliceStable(xs, func(i, j int) bool {
		a, b := xs[i], xs[j]
		for _, p := range [][2]string{{a.Model, b.Model}, {a.SHA256, b.SHA256}, {a.Test, b.Test}, {a.Backend, b.Backend}, {a.Config, b.Config}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return a.ID < b.ID
	})
}

// Badges computes the badge table of the series with opts (already checked).
func Badges(all []Series, opts Options) BadgeTable {
	chosen, others, unresolved := pick(all)
	t := BadgeTable{Line: opts.Line, Test: opts.Test, Deep: opts.Deep, DeepRule: DeepExact, Rows: []BadgeRow{}, Unresolved: unresolved}
	if t.Unresolved == nil {
		t.Unresolved = []Unresolved{}
	}
	for _, sr := range chosen {
		row := BadgeRow{Model: sr.Model, File: sr.File, SHA256: sr.SHA256, Test: sr.Test, Backend: sr.Backend, Config: sr.Config,
			Study: sr.ID, StudyName: sr.Name, Imported: sr.Imported, ImportedFrom: sr.ImportedFrom, D0: sr.Points[0],
			OtherStudies: others[seriesKey{sr.SHA256, sr.Test, sr.Backend, sr.Config}]}
		row.Deep, row.DeepNote = nearestDeep(sr.Points, opts.Deep)
		row.D0Only, row.BothDepths = conventions(row.D0, row.Deep, opts.Deep, opts.Line)
		row.Death = death(sr.Points, opts.Line)
		t.Rows = append(t.Rows, row)
	}
	return t
}

// nearestDeep is the measured depth (other than 0) nearest deep, the deeper on a tie.
func nearestDeep(pts []Cell, deep int64) (*Cell, string) {
	var best *Cell
	for i := range pts {
		p := &pts[i]
		if p.Depth == 0 {
			continue
		}
		if best == nil || abs(p.Depth-deep) < abs(best.Depth-deep) || abs(p.Depth-deep) == abs(best.Depth-deep) && p.Depth > best.Depth {
			best = p
		}
	}
	if best == nil {
		return nil, "only depth 0 was measured"
	}
	c := *best
	if c.Depth != deep {
		return &c, fmt.Sprintf("nearest measured depth %d (asked %d)", c.Depth, deep)
	}
	return &c, ""
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// conventions answers both badges: d0-only needs tg at depth 0 >= line; both-depths needs it
// at depth 0 and at the deep depth asked, measured there: a badge is earned only at the depth
// its convention names. When depth 0 reached the line and the asked depth was not measured,
// both-depths is undecided, "not measured at D", naming the nearest depth that was (never
// earned from another depth's value).
func conventions(d0 Cell, deep *Cell, asked int64, line float64) (d0Only, both Badge) {
	d0Only = Badge{Decided: true, Earned: d0.TS >= line}
	switch {
	case d0.TS < line:
		both = Badge{Decided: true}
	case deep == nil:
		both = Badge{Word: fmt.Sprintf("undecided: not measured at %d (no depth other than 0 was measured)", asked)}
	case deep.Depth != asked:
		both = Badge{Word: fmt.Sprintf("undecided: not measured at %d (nearest measured depth %d)", asked, deep.Depth)}
	default:
		both = Badge{Decided: true, Earned: deep.TS >= line}
	}
	for _, b := range []*Badge{&d0Only, &both} {
		switch {
		case b.Word != "":
		case b.Earned:
			b.Word = "earned"
		default:
			b.Word = "not earned"
		}
	}
	return d0Only, both
}

// death is the interpolated depth where the series first falls below the line.
func death(pts []Cell, line float64) Death {
	xs := make([]analysis.Point, len(pts))
	d := Death{Sources: make([]string, len(pts))}
	for i, p := range pts {
		xs[i] = analysis.Point{X: float64(p.Depth), Y: p.TS}
		d.Sources[i] = p.Row
	}
	c, err := analysis.CrossingDepth(xs, line)
	if err != nil {
		d.Text = err.Error()
		return d
	}
	d.Kind = c.Kind
	at := func(x float64) *Cell {
		for i := range pts {
			if float64(pts[i].Depth) == x {
				p := pts[i]
				return &p
			}
		}
		return nil
	}
	switch c.Kind {
	case analysis.Crossed:
		v := c.Depth
		d.Depth, d.From, d.To = &v, at(c.From.X), at(c.To.X)
		d.Text = fmt.Sprintf("about %.0f (between %.2f t/s at %d and %.2f t/s at %d)", v, d.From.TS, d.From.Depth, d.To.TS, d.To.Depth)
	case analysis.BelowAtStart:
		d.From = at(c.From.X)
		d.Text = fmt.Sprintf("below at d0 (%.2f t/s)", d.From.TS)
	default:
		d.To = at(c.To.X)
		d.Text = fmt.Sprintf("beyond the deepest measured depth (%.2f t/s at %d)", d.To.TS, d.To.Depth)
	}
	return d
}
