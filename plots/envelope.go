package plots

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// EnvelopeChart is the input of the capacity envelope: one candidate's grid of server slots
// P × clients C, each cell PASS or FAIL under the SLO gates.
type EnvelopeChart struct {
	Meta Meta         `json:"meta"`
	Grid EnvelopeGrid `json:"grid"`
}

// EnvelopeGrid is one candidate's capacity grid. Cells[i][j] is slots Slots[i] with clients
// Clients[j].
type EnvelopeGrid struct {
	Candidate string           `json:"candidate"`
	Slots     []int            `json:"slots"`
	Clients   []int            `json:"clients"`
	Cells     [][]EnvelopeCell `json:"cells"`
	// Selected is the chosen operating point as [P, C] (values, not indices), e.g. [4, 4];
	// nil when nothing was selected.
	Selected *[2]int `json:"selected,omitempty"`
}

// EnvelopeCell is one (P, C) cell: verdict over every gate, median generation rate
// (tokens/s), observed p95 E2E and TTFT (ms), and the exact failure codes.
type EnvelopeCell struct {
	Pass     bool     `json:"pass"`
	Rate     float64  `json:"rate"`
	E2EP95   float64  `json:"e2e_p95_ms"`
	TTFTP95  float64  `json:"ttft_p95_ms"`
	Failures []string `json:"failures,omitempty"`
	// Missing: the cell was planned but has no result (the chart greys it out).
	Missing bool `json:"missing,omitempty"`
}

func (c EnvelopeChart) Kind() Kind                { return KindEnvelope }
func (c EnvelopeChart) Plot() (*plot.Plot, error) { return Envelope(c) }
func (c EnvelopeChart) LimitPoints(int) Chart     { return c }

// Envelope draws the P × C grid: cells coloured and labelled PASS or FAIL (failing cells also
// hatched), with rate, p95 E2E and TTFT and the failed gates in each, the selected point
// outlined.
func Envelope(c EnvelopeChart) (*plot.Plot, error) {
	g := c.Grid
	title := "Capacity envelope"
	if s := strings.TrimSpace(g.Candidate); s != "" {
		title += " — " + s
	}
	p := newPlot(title)
	h := &header{subtitle: c.Meta.subtitle()}
	c.Meta.notes(h)
	if strings.TrimSpace(g.Candidate) == "" {
		h.note("candidate not named")
	}
	p.X.Label.Text = "concurrent clients C"
	p.Y.Label.Text = "server slots P"

	nP, nC := len(g.Slots), len(g.Clients)
	ep := &envelopePlotter{grid: g, sel: [2]int{-1, -1}}
	var missing []string
	var passing, failing int
	if len(g.Cells) > nP {
		h.note("%d rows of cells beyond the %d slot counts; not drawn", len(g.Cells)-nP, nP)
	}
	for i := 0; i < nP; i++ {
		if i < len(g.Cells) && len(g.Cells[i]) > nC {
			h.note("P%d: %d cells beyond the %d client levels; not drawn", g.Slots[i], len(g.Cells[i])-nC, nC)
		}
		for j := 0; j < nC; j++ {
			cell, ok := ep.cell(i, j)
			switch {
			case !ok || cell.Missing:
				missing = append(missing, fmt.Sprintf("P%d/C%d", g.Slots[i], g.Clients[j]))
			case cell.Pass:
				passing++
			default:
				failing++
			}
		}
	}
	switch {
	case nP == 0 || nC == 0:
		h.note("empty grid: %d slot counts × %d client levels", nP, nC)
		p.Add(message{"no cells to draw"})
	case passing == 0 && failing > 0:
		h.note("no cell passes every gate: no operating point can be selected")
	}
	if len(missing) > 0 {
		if len(missing) > 6 {
			missing = append(missing[:5], fmt.Sprintf("… (%d in all)", len(missing)))
		}
		h.note("no result for %s", strings.Join(missing, ", "))
	}
	if g.Selected != nil {
		sp, sc := g.Selected[0], g.Selected[1]
		for i, v := range g.Slots {
			if v == sp {
				ep.sel[0] = i
			}
		}
		for j, v := range g.Clients {
			if v == sc {
				ep.sel[1] = j
			}
		}
		if ep.sel[0] < 0 || ep.sel[1] < 0 {
			h.note("selected point P%d/C%d is not in the grid", sp, sc)
			ep.sel = [2]int{-1, -1}
		} else if cell, ok := ep.cell(ep.sel[0], ep.sel[1]); !ok || cell.Missing || !cell.Pass {
			h.note("selected point P%d/C%d did not pass every gate", sp, sc)
		}
	} else if passing > 0 {
		h.note("no operating point selected")
	}

	// Legend: what fill, hatching and outline mean.
	border := lineStyle(colMuted, 0.6)
	sel := lineStyle(color.Black, 2.2)
	h.add("PASS: every gate met", thumb{fill: colPassFill, border: &border})
	h.add("FAIL: a gate missed (hatched)", thumb{fill: colFailFill, hatch: colFailHatch, border: &border})
	if len(missing) > 0 {
		h.add("no result", thumb{fill: colEmptyFill, border: &border})
	}
	if ep.sel[0] >= 0 {
		h.add(fmt.Sprintf("selected: P%d / C%d", g.Selected[0], g.Selected[1]), thumb{border: &sel})
	}
	h.caption("each cell: verdict · median generation rate; observed p95 E2E and TTFT; failed gates")

	if nP > 0 && nC > 0 {
		p.Add(ep)
		p.X.Min, p.X.Max = -0.5, float64(nC)-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(nP)-0.5
		var xt, yt []plot.Tick
		for j, v := range g.Clients {
			xt = append(xt, plot.Tick{Value: float64(j), Label: fmt.Sprintf("C%d", v)})
		}
		for i, v := range g.Slots {
			yt = append(yt, plot.Tick{Value: float64(i), Label: fmt.Sprintf("P%d", v)})
		}
		p.X.Tick.Marker = plot.ConstantTicks(xt)
		p.Y.Tick.Marker = plot.ConstantTicks(yt)
	} else {
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		p.X.Tick.Marker = plot.ConstantTicks(nil)
		p.Y.Tick.Marker = plot.ConstantTicks(nil)
	}
	p.X.Tick.Length, p.Y.Tick.Length = 0, 0
	p.X.Padding, p.Y.Padding = 0, 0
	h.attach(p)
	return p, nil
}

type envelopePlotter struct {
	grid EnvelopeGrid
	sel  [2]int // row, column; -1 when none
}

func (e *envelopePlotter) cell(i, j int) (EnvelopeCell, bool) {
	if i < 0 || i >= len(e.grid.Cells) || j < 0 || j >= len(e.grid.Cells[i]) {
		return EnvelopeCell{}, false
	}
	return e.grid.Cells[i][j], true
}

func (e *envelopePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	nP, nC := len(e.grid.Slots), len(e.grid.Clients)
	cellW := trX(1) - trX(0)
	cellH := trY(1) - trY(0)
	if nC == 1 {
		cellW = c.Max.X - c.Min.X
	}
	if nP == 1 {
		cellH = c.Max.Y - c.Min.Y
	}
	gap := vg.Points(2)
	// One text size for every cell, the largest that fits the busiest cell.
	lines := make([][]string, 0, nP*nC)
	for i := 0; i < nP; i++ {
		for j := 0; j < nC; j++ {
			lines = append(lines, cellText(e.cell(i, j)))
		}
	}
	size := fitCellText(lines, cellW-2*gap-vg.Points(6), cellH-2*gap-vg.Points(4))
	border := lineStyle(colMuted, 0.6)
	for i := 0; i < nP; i++ {
		for j := 0; j < nC; j++ {
			cx, cy := trX(float64(j)), trY(float64(i))
			r := vg.Rectangle{
				Min: vg.Point{X: cx - cellW/2 + gap, Y: cy - cellH/2 + gap},
				Max: vg.Point{X: cx + cellW/2 - gap, Y: cy + cellH/2 - gap},
			}
			pts := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
			cell, ok := e.cell(i, j)
			switch {
			case !ok || cell.Missing:
				c.FillPolygon(colEmptyFill, pts)
			case cell.Pass:
				c.FillPolygon(colPassFill, pts)
			default:
				c.FillPolygon(colFailFill, pts)
				hatch(&c, r, colFailHatch, vg.Points(7))
			}
			c.StrokeLines(border, append(pts, pts[0]))

			txt := cellText(cell, ok)
			lh := vg.Length(size * 1.25)
			y := cy + lh*vg.Length(len(txt))/2
			for k, line := range txt {
				f := fontRegular
				if k == 0 {
					f = fontBold
				}
				ts := textStyle(f, size, colInk)
				if k == len(txt)-1 && strings.HasPrefix(line, "failed:") {
					ts.Color = colNote
				}
				ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
				c.FillText(ts, vg.Point{X: cx, Y: y}, fit(ts, line, r.Max.X-r.Min.X-vg.Points(4)))
				y -= lh
			}
		}
	}
	if e.sel[0] >= 0 && e.sel[1] >= 0 {
		cx, cy := trX(float64(e.sel[1])), trY(float64(e.sel[0]))
		in := gap / 2
		r := vg.Rectangle{
			Min: vg.Point{X: cx - cellW/2 + in, Y: cy - cellH/2 + in},
			Max: vg.Point{X: cx + cellW/2 - in, Y: cy + cellH/2 - in},
		}
		pts := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min}
		c.StrokeLines(lineStyle(color.Black, 2.6), pts)
	}
}

// cellText is the lines written in a cell: verdict and rate, latencies, failed gates.
func cellText(cell EnvelopeCell, ok bool) []string {
	if !ok || cell.Missing {
		return []string{"no result"}
	}
	verdict := "FAIL"
	if cell.Pass {
		verdict = "PASS"
	}
	rate := "rate n/a"
	if finite(cell.Rate) {
		rate = fmtNum(cell.Rate) + " tok/s"
	}
	ms := func(v float64) string {
		if !finite(v) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f ms", v)
	}
	out := []string{
		verdict + " · " + rate,
		"E2E p95 " + ms(cell.E2EP95),
		"TTFT p95 " + ms(cell.TTFTP95),
	}
	if f := failureSummary(cell.Failures); f != "" {
		out = append(out, "failed: "+f)
	} else if !cell.Pass {
		out = append(out, "failed: (no code given)")
	}
	return out
}

// failureSummary shortens the exact gate codes (docs/domain.md, "Gates and failure codes") to
// the gates' names, in order of first appearance: "forward:ttft_ms_p95_above_maximum" is "TTFT".
func failureSummary(codes []string) string {
	names := []struct{ key, name string }{
		{"ttft", "TTFT"}, {"e2e_latency", "E2E"}, {"completion_rate", "completion"},
		{"generation_rate_spread", "rate spread"}, {"e2e_p95_spread", "E2E spread"},
		{"peak_rss", "RSS"}, {"quality", "quality"}, {"backend_marker", "backend marker"},
	}
	var out []string
	seen := map[string]bool{}
	for _, code := range codes {
		if code == "one_or_more_passes_failed_load_slo" { // implied by the per-pass codes
			continue
		}
		name := code
		if k := strings.LastIndexByte(code, ':'); k >= 0 {
			name = code[k+1:]
		}
		for _, n := range names {
			if strings.Contains(code, n.key) {
				name = n.name
				break
			}
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	if len(out) == 0 && len(codes) > 0 {
		out = append(out, "load SLO")
	}
	return strings.Join(out, ", ")
}

// fitCellText returns the largest font size (points, 5 to sizeCell+1) at which every cell's
// lines fit w × h.
func fitCellText(cells [][]string, w, h vg.Length) float64 {
	for size := float64(sizeCell + 1); size > 5; size -= 0.5 {
		if textFits(cells, size, w, h) {
			return size
		}
	}
	return 5
}

func textFits(cells [][]string, size float64, w, h vg.Length) bool {
	bold := textStyle(fontBold, size, colInk)
	reg := textStyle(fontRegular, size, colInk)
	for _, lines := range cells {
		if vg.Length(size*1.25)*vg.Length(len(lines)) > h {
			return false
		}
		for k, l := range lines {
			s := reg
			if k == 0 {
				s = bold
			}
			if s.Width(l) > w {
				return false
			}
		}
	}
	return true
}
