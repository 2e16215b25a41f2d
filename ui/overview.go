package ui

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// OverviewOptions are the badge table's parameters (the ladder reads only Test), as
// `sparkbench overview badges --line --test --deep` takes them.
type OverviewOptions struct {
	Line float64
	Test string
	Deep int64
}

// OverviewTable is one cross-study table as the window shows it: a header, one line of cells
// per row, and per row the rows it came from (study, plan leg, row reference).
type OverviewTable struct {
	Header  []string
	Rows    [][]string
	Sources []string
}

// OverviewResult is what the Overview section shows: the badge table and the constants
// ladder over every throughput study (app/overview), and the studies they read.
type OverviewResult struct {
	Heading string   // the badge table's heading line (line, deep depth, how many studies)
	Studies []string // each study read, or left out and why
	Badges  OverviewTable
	Ladder  OverviewTable
}

// OverviewService computes the overview; cmd wires it to app/overview over the notebook (one
// service per notebook: it keeps what it read). Open runs off the UI goroutine; its errors are
// shown as they are (a bad option, no throughput results).
type OverviewService interface {
	Defaults() OverviewOptions
	Open(ctx context.Context, opts OverviewOptions) (*OverviewResult, error)
}

// OverviewExporter is an OverviewService that also writes the overview's receipt (a new folder
// or .tar.gz out; docs/overview.md, "The overview's receipt") with the machine line given.
type OverviewExporter interface {
	ExportOverview(ctx context.Context, opts OverviewOptions, machine, out string) error
}

// recentStudies is how many studies the Overview lists (newest first).
const recentStudies = 8

// OverviewView is the Overview section: the machine, the recent studies with their state, and
// the badge table and constants ladder, each row able to show the rows it came from.
type OverviewView struct {
	Object  fyne.CanvasObject
	Machine *widget.Label
	Recent  *widget.Label
	Line    *widget.Entry
	Test    *widget.Entry
	Deep    *widget.Entry
	ShowBt  *widget.Button
	Receipt *widget.Button // Write receipt…: the overview's receipt (an OverviewExporter)
	Status  *widget.Label
	Badges  *widget.List
	Ladder  *widget.List
	Detail  *widget.Label // the selected row's sources
	Result  *OverviewResult
	// Updated receives after each overview (or its error) has been shown (tests wait on it).
	Updated chan struct{}

	svc     OverviewService
	running bool
}

func newOverviewView(svc OverviewService) *OverviewView {
	v := &OverviewView{svc: svc, Updated: make(chan struct{}, 1)}
	mono := func(text string) *widget.Label {
		l := widget.NewLabel(text)
		l.Wrapping = fyne.TextWrapWord
		l.TextStyle = fyne.TextStyle{Monospace: true}
		return l
	}
	v.Machine = mono("machine: checking…")
	v.Recent = mono("studies: listing…")
	v.Status = mono("")
	v.Detail = mono("select a row to see the rows it came from")
	v.Line, v.Test, v.Deep = widget.NewEntry(), widget.NewEntry(), widget.NewEntry()
	if svc != nil {
		d := svc.Defaults()
		v.Line.SetText(strconv.FormatFloat(d.Line, 'g', -1, 64))
		v.Test.SetText(d.Test)
		v.Deep.SetText(strconv.FormatInt(d.Deep, 10))
	}
	v.Badges = v.tableList(func() *OverviewTable { return v.badges() })
	v.Ladder = v.tableList(func() *OverviewTable { return v.ladder() })
	v.ShowBt = widget.NewButton("Show", v.Load)
	v.Receipt = widget.NewButton("Write receipt…", v.receiptDialog)
	if _, ok := svc.(OverviewExporter); !ok {
		v.Receipt.Disable()
	}
	v.Line.OnSubmitted = func(string) { v.Load() }
	form := container.NewHBox(widget.NewLabel("line t/s"), sized(v.Line, 90), widget.NewLabel("test"), sized(v.Test, 80),
		widget.NewLabel("deep"), sized(v.Deep, 80), v.ShowBt, v.Receipt)
	top := container.NewVBox(
		widget.NewCard("Machine", "", v.Machine),
		widget.NewCard("Recent studies", "", v.Recent),
		heading("Badge table and constants ladder (sparkbench overview)"), form, v.Status)
	tables := container.NewVSplit(
		container.NewBorder(heading("Badges"), nil, nil, nil, v.Badges),
		container.NewBorder(heading("Constants ladder"), nil, nil, nil, v.Ladder))
	v.Object = container.NewBorder(top, container.NewVScroll(v.Detail), nil, nil, tables)
	if svc == nil {
		v.Status.SetText("the overview is unavailable: the notebook is not open")
		v.ShowBt.Disable()
	}
	return v
}

// sized is an entry at least w wide in an HBox.
func sized(e *widget.Entry, w float32) fyne.CanvasObject {
	return container.NewGridWrap(fyne.NewSize(w, e.MinSize().Height), e)
}

// tableList lists a table: its header first, then one line per row; selecting a row shows
// the rows it came from in Detail.
func (v *OverviewView) tableList(tab func() *OverviewTable) *widget.List {
	l := widget.NewList(
		func() int {
			if t := tab(); t != nil && len(t.Header) > 0 {
				return len(t.Rows) + 1
			}
			return 0
		},
		func() fyne.CanvasObject {
			lb := widget.NewLabel("")
			lb.TextStyle = fyne.TextStyle{Monospace: true}
			return lb
		},
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(v.line(tab(), i)) })
	l.OnSelected = func(i widget.ListItemID) {
		t := tab()
		if t == nil || i == 0 || i > len(t.Sources) {
			v.Detail.SetText("select a row to see the rows it came from")
			return
		}
		v.Detail.SetText(v.line(t, i) + "\nfrom: " + t.Sources[i-1])
	}
	return l
}

// line is item i of a table's list: 0 the header, then each row, in columns padded to width.
func (v *OverviewView) line(t *OverviewTable, i int) string {
	if t == nil || i < 0 || i > len(t.Rows) {
		return ""
	}
	width := make([]int, len(t.Header))
	for c, h := range t.Header {
		width[c] = len(h)
		for _, r := range t.Rows {
			if c < len(r) && len(r[c]) > width[c] {
				width[c] = len(r[c])
			}
		}
	}
	cells := t.Header
	if i > 0 {
		cells = t.Rows[i-1]
	}
	var b strings.Builder
	for c, s := range cells {
		if c > 0 {
			b.WriteString("  ")
		}
		if c < len(width) && c < len(cells)-1 {
			s += strings.Repeat(" ", width[c]-len(s))
		}
		b.WriteString(s)
	}
	return b.String()
}

func (v *OverviewView) badges() *OverviewTable {
	if v.Result == nil {
		return nil
	}
	return &v.Result.Badges
}

func (v *OverviewView) ladder() *OverviewTable {
	if v.Result == nil {
		return nil
	}
	return &v.Result.Ladder
}

// BadgeLines and LadderLines are the tables' lines as listed, header first.
func (v *OverviewView) BadgeLines() []string  { return v.lines(v.badges()) }
func (v *OverviewView) LadderLines() []string { return v.lines(v.ladder()) }

func (v *OverviewView) lines(t *OverviewTable) []string {
	if t == nil || len(t.Header) == 0 {
		return nil
	}
	out := make([]string, 0, len(t.Rows)+1)
	for i := 0; i <= len(t.Rows); i++ {
		out = append(out, v.line(t, i))
	}
	return out
}

// SetMachine shows the doctor's machine line (UI goroutine).
func (v *OverviewView) SetMachine(machine string) { setText(v.Machine, machine) }

// SetStudies lists the newest studies with their state (UI goroutine).
func (v *OverviewView) SetStudies(list []StudySummary) {
	if len(list) == 0 {
		setText(v.Recent, "no studies yet: New study registers one, or sparkbench demo")
		return
	}
	newest := append([]StudySummary(nil), list...)
	for i := 1; i < len(newest); i++ { // newest first (highest ID)
		for j := i; j > 0 && newest[j].ID > newest[j-1].ID; j-- {
			newest[j], newest[j-1] = newest[j-1], newest[j]
		}
	}
	var lines []string
	for i, s := range newest {
		if i == recentStudies {
			lines = append(lines, fmt.Sprintf("… and %d more (Studies section)", len(newest)-recentStudies))
			break
		}
		lines = append(lines, fmt.Sprintf("%4d  %-10s %-11s %s", s.ID, s.Status, s.Kind, s.Name))
	}
	setText(v.Recent, strings.Join(lines, "\n"))
}

// options reads the entries; text that is not a number is handed on as NaN or -1, so the
// service refuses it with its own words.
func (v *OverviewView) options() OverviewOptions {
	o := OverviewOptions{Test: strings.TrimSpace(v.Test.Text)}
	var err error
	if o.Line, err = strconv.ParseFloat(strings.TrimSpace(v.Line.Text), 64); err != nil {
		o.Line = math.NaN()
	}
	if o.Deep, err = strconv.ParseInt(strings.TrimSpace(v.Deep.Text), 10, 64); err != nil {
		o.Deep = -1
	}
	return o
}

// Load computes the overview with the entries' options in the background and shows it, or
// the service's error (UI goroutine).
func (v *OverviewView) Load() {
	if v.svc == nil || v.running {
		return
	}
	v.running = true
	v.ShowBt.Disable()
	v.Status.SetText("reading the notebook's throughput studies…")
	svc, opts := v.svc, v.options()
	go func() {
		res, err := svc.Open(context.Background(), opts)
		onUI(func() { v.show(res, err) })
	}()
}

// Prime computes the overview with the defaults in the background, so that opening the
// section later reads only what changed (the service keeps what it read).
func (v *OverviewView) Prime() { v.Load() }

func (v *OverviewView) show(res *OverviewResult, err error) {
	v.running = false
	v.ShowBt.Enable()
	if err != nil {
		v.Result = nil
		v.Status.SetText("no overview: " + err.Error())
	} else {
		v.Result = res
		v.Status.SetText(res.Heading + "\n" + strings.Join(res.Studies, "\n"))
	}
	v.Detail.SetText("select a row to see the rows it came from")
	v.Badges.UnselectAll()
	v.Ladder.UnselectAll()
	v.Badges.Refresh()
	v.Ladder.Refresh()
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}
