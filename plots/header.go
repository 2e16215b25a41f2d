package plots

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The header is a band between the title and the data area that holds the subtitle (model,
// build, machine), the legend, captions (what the error bars are) and notes (what is
// missing). gonum/plot draws its own legend inside the data area, where it can cover data;
// the header reserves its height through Title.Padding instead, so the legend never does.
//
// The layout depends on the canvas: Render and Export lay the header out again for the size
// they draw at (more legend columns when wide; fewer rows, then no captions and notes, when
// small). Drawn some other way (plot.Save), the layout for an 800×500 px canvas is used.
// Charts are meant to be drawn on a whole canvas; tiled into a larger canvas the header
// falls back to sitting directly on top of the data area.
type header struct {
	subtitle string
	entries  []legendEntry
	captions []string
	notes    []string // every note, as Notes returns them

	lay layout // the current layout

	drawnTop vg.Length // where Plot last put the band's top (for tests)
}

type legendEntry struct {
	label  string
	thumb  thumb
	newRow bool // start a new legend row (the style key after the series)
}

// layout is where the header's parts go for one canvas size.
type layout struct {
	subLines   []string
	cols, rows int
	colW       vg.Length
	pos        [][2]int // row, column per entry; row < 0: not listed
	hidden     int      // legend entries not listed
	captions   []string
	notes      []string
	height     vg.Length
}

const (
	refWidth       = vg.Length(600) // points: an 800 px wide chart at 96 dpi
	refHeight      = vg.Length(375) // points: 500 px
	yAxisAllowance = vg.Length(60)  // points left of the data area for the y axis
	maxLegendRows  = 5
	maxNoteLines   = 4
	thumbWidth     = vg.Length(22)
	legendColGap   = vg.Length(14)
	headerLineGap  = vg.Length(2)
	headerTopGap   = vg.Length(3)
	headerBelowGap = vg.Length(8)
	// The header may take this share of the canvas height before it is cut down.
	headerShare = 0.42
)

func (h *header) add(label string, t thumb) {
	h.entries = append(h.entries, legendEntry{label: label, thumb: t})
}

// addKey adds a legend entry that explains a style (dashes, fills) rather than a series; the
// first one starts a new row.
func (h *header) addKey(label string, t thumb) {
	first := true
	for _, e := range h.entries {
		first = first && !e.newRow
	}
	h.entries = append(h.entries, legendEntry{label: label, thumb: t, newRow: first && len(h.entries) > 0})
}

func (h *header) caption(format string, a ...any) {
	h.captions = append(h.captions, fmt.Sprintf(format, a...))
}

func (h *header) note(format string, a ...any) { h.notes = append(h.notes, fmt.Sprintf(format, a...)) }

var (
	styleSubtitle = func() text.Style { return textStyle(fontRegular, sizeSubtitle, colMuted) }
	styleLegend   = func() text.Style { return textStyle(fontRegular, sizeLegend, colInk) }
	styleCaption  = func() text.Style { return textStyle(fontRegular, sizeNote, colMuted) }
	styleNote     = func() text.Style { return textStyle(fontRegular, sizeNote, colNote) }
)

func lineHeight(s text.Style) vg.Length { return s.FontExtents().Height + headerLineGap }

func legendRowHeight() vg.Length { return lineHeight(styleLegend()) + 1 }

// compute lays the header out for a canvas of w × h points, cutting it down until it takes
// at most headerShare of the height: first fewer legend rows (down to 3), then no captions,
// then one line of notes, then one legend row and one subtitle line.
func (h *header) compute(w, ht vg.Length) layout {
	budget := vg.Length(headerShare) * ht
	steps := []struct {
		rows, notes int
		captions    bool
		subLines    int
	}{
		{maxLegendRows, maxNoteLines, true, 2},
		{3, maxNoteLines, true, 2},
		{3, maxNoteLines, false, 2},
		{3, 1, false, 2},
		{2, 1, false, 1},
		{1, 1, false, 1},
		{1, 0, false, 1},
	}
	var l layout
	for _, s := range steps {
		l = h.layoutWith(w, s.rows, s.notes, s.captions, s.subLines)
		if l.height <= budget {
			break
		}
	}
	return l
}

func (h *header) layoutWith(w vg.Length, maxRows, maxNotes int, captions bool, maxSub int) layout {
	var l layout
	l.subLines = wrapParts(styleSubtitle(), h.subtitle, w-2*canvasMargin)
	if len(l.subLines) > maxSub {
		l.subLines = []string{h.subtitle} // one line, cut with "…" when drawn
	}
	l.height += vg.Length(len(l.subLines)) * lineHeight(styleSubtitle())

	if n := len(h.entries); n > 0 {
		ls := styleLegend()
		var widest vg.Length
		for _, e := range h.entries {
			widest = max(widest, ls.Width(e.label))
		}
		l.colW = thumbWidth + 4 + widest + legendColGap
		dataW := w - 2*canvasMargin - yAxisAllowance
		l.cols = max(1, min(n, int(dataW/l.colW)))
		l.pos = make([][2]int, n)
		row, col := 0, 0
		for i, e := range h.entries {
			if col == l.cols || (e.newRow && col > 0) {
				row, col = row+1, 0
			}
			l.pos[i] = [2]int{row, col}
			col++
		}
		l.rows = row + 1
		if l.rows > maxRows {
			l.rows = maxRows
			for i, p := range l.pos {
				if p[0] >= maxRows || (p[0] == maxRows-1 && p[1] == l.cols-1) {
					l.pos[i][0] = -1 // the last slot says how many are not listed
					l.hidden++
				}
			}
		}
		l.height += vg.Length(l.rows) * legendRowHeight()
	}
	if captions {
		l.captions = h.captions
	}
	l.height += vg.Length(len(l.captions)) * lineHeight(styleCaption())
	prefixed := func(notes []string) []string {
		out := make([]string, len(notes))
		for i, n := range notes {
			out[i] = "Note: " + n
		}
		return out
	}
	switch {
	case len(h.notes) == 0 || maxNotes <= 0:
	case len(h.notes) <= maxNotes:
		l.notes = prefixed(h.notes)
	case maxNotes == 1:
		l.notes = []string{fmt.Sprintf("%d notes on missing or odd data: enlarge the chart to read them", len(h.notes))}
	default:
		l.notes = append(prefixed(h.notes[:maxNotes-1]),
			fmt.Sprintf("… and %d more notes", len(h.notes)-(maxNotes-1)))
	}
	l.height += vg.Length(len(l.notes)) * lineHeight(styleNote())
	if l.height > 0 {
		l.height += headerTopGap + headerBelowGap
	}
	return l
}

// attach lays the header out for the reference size, reserves its height under the title,
// adds it to p as the last plotter and records it (and the notes) for Notes and Render.
func (h *header) attach(p *plot.Plot) {
	ref := h.layoutWith(refWidth, maxLegendRows, maxNoteLines, true, 2)
	if ref.hidden > 0 {
		n := len(h.entries)
		h.note("legend lists %d of %d entries; %d more series are drawn but not listed", n-ref.hidden, n, ref.hidden)
	}
	h.fit(p, refWidth, refHeight)
	p.Add(h)
	register(p, h)
}

// fit lays the header out for a canvas of w × h points and reserves its height.
func (h *header) fit(p *plot.Plot, w, ht vg.Length) {
	h.lay = h.compute(w, ht)
	p.Title.Padding = h.lay.height + vg.Points(2)
}

// Plot implements plot.Plotter; c is the data area.
func (h *header) Plot(c draw.Canvas, p *plot.Plot) {
	l := h.lay
	if l.height == 0 {
		return
	}
	top := c.Max.Y + l.height // fallback: directly on top of the data area
	fullW := vg.Length(0)
	if sz, ok := c.Canvas.(vg.CanvasSizer); ok {
		var fullH vg.Length
		fullW, fullH = sz.Size()
		t := fullH - canvasMargin
		if p.Title.Text != "" {
			t -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y
		}
		// Use the canvas top unless the chart is tiled into a larger canvas (then the
		// computed band would float far above the data area) or it would reach into it.
		if t-l.height >= c.Max.Y-vg.Points(1) && t-l.height <= c.Max.Y+vg.Points(40) {
			top = t
		}
	}
	h.drawnTop = top
	y := top - headerTopGap
	left := c.Min.X
	width := max(c.Max.X-c.Min.X, 0)

	for _, line := range l.subLines {
		s := styleSubtitle()
		s.XAlign, s.YAlign = draw.XCenter, draw.YTop
		cx, sw := (c.Min.X+c.Max.X)/2, width
		if fullW >= c.Max.X {
			cx, sw = fullW/2, fullW-2*canvasMargin // centred under the title
		}
		c.FillText(s, vg.Point{X: cx, Y: y}, fit(s, line, sw))
		y -= lineHeight(s)
	}

	if len(h.entries) > 0 {
		ls := styleLegend()
		ls.YAlign = draw.YCenter
		rowH := legendRowHeight()
		colW := l.colW
		if vg.Length(l.cols)*colW > width {
			colW = width / vg.Length(l.cols)
		}
		place := func(row, col int) (vg.Length, vg.Length) {
			return left + vg.Length(col)*colW, y - vg.Length(row)*rowH - rowH/2
		}
		for i, e := range h.entries {
			if i >= len(l.pos) || l.pos[i][0] < 0 {
				continue
			}
			x, cy := place(l.pos[i][0], l.pos[i][1])
			tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: cy - rowH/2 + 1},
				Max: vg.Point{X: x + thumbWidth, Y: cy + rowH/2 - 1},
			}}
			e.thumb.Thumbnail(&tc)
			c.FillText(ls, vg.Point{X: x + thumbWidth + 4, Y: cy}, fit(ls, e.label, colW-thumbWidth-4-legendColGap/2))
		}
		if l.hidden > 0 {
			x, cy := place(l.rows-1, l.cols-1)
			c.FillText(ls, vg.Point{X: x, Y: cy}, fmt.Sprintf("+%d more", l.hidden))
		}
		y -= vg.Length(l.rows) * rowH
	}

	for _, line := range l.captions {
		s := styleCaption()
		s.YAlign = draw.YTop
		c.FillText(s, vg.Point{X: left, Y: y}, fit(s, line, width))
		y -= lineHeight(s)
	}
	for _, line := range l.notes {
		s := styleNote()
		s.YAlign = draw.YTop
		c.FillText(s, vg.Point{X: left, Y: y}, fit(s, line, width))
		y -= lineHeight(s)
	}
}

// fit cuts txt with "…" so that it is at most w wide.
func fit(s text.Style, txt string, w vg.Length) string {
	if w <= 0 || s.Width(txt) <= w {
		return txt
	}
	r := []rune(txt)
	for len(r) > 1 {
		r = r[:len(r)-1]
		cut := strings.TrimRight(string(r), " ") + "…"
		if s.Width(cut) <= w {
			return cut
		}
	}
	return "…"
}

// wrapParts breaks a "a  ·  b  ·  c" subtitle into lines at most w wide, breaking only
// between parts.
func wrapParts(s text.Style, sub string, w vg.Length) []string {
	if strings.TrimSpace(sub) == "" {
		return nil
	}
	const sep = "  ·  "
	var lines []string
	cur := ""
	for _, part := range strings.Split(sub, sep) {
		switch {
		case cur == "":
			cur = part
		case s.Width(cur+sep+part) <= w:
			cur += sep + part
		default:
			lines = append(lines, cur)
			cur = part
		}
	}
	return append(lines, cur)
}

// headers maps a chart to its header without keeping the chart alive: Notes reads the
// notes, Render lays the header out for the size it draws at.
var headers sync.Map // weak.Pointer[plot.Plot] -> *header

func register(p *plot.Plot, h *header) {
	k := weak.Make(p)
	headers.Store(k, h)
	runtime.AddCleanup(p, func(k weak.Pointer[plot.Plot]) { headers.Delete(k) }, k)
}

func headerOf(p *plot.Plot) *header {
	v, ok := headers.Load(weak.Make(p))
	if !ok {
		return nil
	}
	return v.(*header)
}

// Notes returns what a chart built by this package says is missing or questionable in its
// data (the lines its header prints, in full, whatever the size it is drawn at): dropped
// values, missing depths, failing cells, truncated legends. It returns nil for a chart
// without notes or one that this package did not build.
func Notes(p *plot.Plot) []string {
	if h := headerOf(p); h != nil && len(h.notes) > 0 {
		return append([]string(nil), h.notes...)
	}
	return nil
}
