package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/kinds"
	"sparkbench/plots"
)

// The Compare section: two or more throughput studies, the oldest chosen as the baseline, each
// other one compared with it through the call `sparkbench study compare` makes; the shared
// cells benchstat style, the depth curves overlaid, a verdict line per shared prediction, and
// the comparison exported as its own receipt.

// Comparison is a comparison as the window shows it (cmd fills it from the service's result).
type Comparison struct {
	Studies  []string   // "study 1 sparkbench demo (complete), baseline"
	Cells    [][]string // per shared cell: pair, cell, baseline, new, delta (~ when not significant)
	Verdicts []string   // one line per shared prediction
	Footer   string     // what the columns and the test are
	Depth    *plots.DepthChart
	// Charts are the capacity comparison's overlaid charts (the slots chart, a latency chart
	// per candidate), in order, named as in its receipt; a throughput comparison has Depth.
	Charts []NamedChart
	Notes  []string
	// AA is the A/A control's text (each cell against itself, the false-positive rate), when
	// asked for.
	AA string
}

// NamedChart is a chart with the name the picker shows.
type NamedChart struct {
	Name  string
	Chart plots.Chart
}

// charts are what the Charts tab offers: the depth curves, or the capacity charts.
func (c *Comparison) charts() []NamedChart {
	if c == nil {
		return nil
	}
	if c.Depth != nil {
		return append([]NamedChart{{Name: "depth curves", Chart: c.Depth}}, c.Charts...)
	}
	return c.Charts
}

// CompareService compares studies (the first id is the baseline) and exports a comparison's
// receipt; cmd wires the notebook's.
type CompareService interface {
	Compare(ctx context.Context, ids []int64, o CompareOptions) (*Comparison, error)
	// ExportComparison writes the receipt to out and says what it wrote.
	ExportComparison(ctx context.Context, ids []int64, out string, o CompareOptions) (ReceiptExport, error)
}

// CompareOptions are the statistics a comparison uses, as `study compare --stats` and --aa
// take them ("": the default, process-level).
type CompareOptions struct {
	Stats string
	AA    bool
}

// compareStats are the statistics the window offers, as `study compare --stats` names them.
var compareStats = []string{
	"process: the llama-bench process is the unit (default)",
	"benchmath: medians over the repetitions",
	"welch: means over the repetitions, as if independent",
}

// FleetChoice is a fleet run as the Compare section offers it: choosing it ticks its
// complete members (the first host's study is the oldest, the baseline) and compares them.
type FleetChoice struct {
	ID      string  // as fleet list prints it
	Line    string  // each host's study and status
	Members []int64 // the complete members' studies
}

// FleetLister is a CompareService that knows the notebook's fleets (cmd's does).
type FleetLister interface {
	Fleets(ctx context.Context) ([]FleetChoice, error)
}

// CompareView is the Compare section.
type CompareView struct {
	Object    fyne.CanvasObject
	Choose    *widget.CheckGroup
	CompareBt *widget.Button
	ExportBt  *widget.Button
	Status    *widget.Label
	Table     *widget.Table
	Verdicts  *widget.Label
	Chart     *ChartView
	ChartPick *widget.Select // which of the comparison's charts the Charts tab shows
	FleetPick *widget.Select // a fleet run: its hosts' studies side by side
	// FleetExportBt writes the picked fleet's receipt; FleetHosts (the Hosts tab) shows its
	// hosts and constants ladder by host (compare_fleet.go).
	FleetExportBt *widget.Button
	FleetHosts    *widget.Label
	fleet         string // the fleet last picked
	fleets        map[string]FleetChoice
	fleetGen      int // the newest fleet listing asked for (UI goroutine)
	Tabs          *container.AppTabs
	Result        *Comparison
	// StatsPick chooses the statistics and AACheck adds the A/A control, as `study compare
	// --stats` and --aa do; AAText shows the control.
	StatsPick *widget.Select
	AACheck   *widget.Check
	AAText    *widget.Label
	// Updated receives after each comparison or export has been shown (tests wait on it).
	Updated chan struct{}

	win     fyne.Window
	svc     CompareService
	ids     map[string]int64 // CheckGroup option -> study id
	running bool
	onLoad  []int64 // CompareOnLoad: chosen and compared once the studies are offered
}

// CompareOnLoad chooses ids and compares them as soon as the studies have been listed (the
// window's --compare).
func (v *CompareView) CompareOnLoad(ids []int64) { v.onLoad = ids }

var compareCols = []string{"pair", "cell", "baseline t/s", "new t/s", "delta"}
var compareWidths = []float32{80, 430, 170, 170, 330}

func newCompareView(win fyne.Window, svc CompareService) *CompareView {
	v := &CompareView{win: win, svc: svc, Updated: make(chan struct{}, 8), ids: map[string]int64{},
		Status: widget.NewLabel("choose two or more throughput studies: the oldest is the baseline"), Verdicts: widget.NewLabel("")}
	v.Status.Wrapping = fyne.TextWrapWord
	v.Verdicts.Wrapping = fyne.TextWrapWord
	v.Choose = widget.NewCheckGroup(nil, func([]string) { v.updateButtons() })
	v.CompareBt = widget.NewButton("Compare", v.Compare)
	v.ExportBt = widget.NewButton("Export comparison receipt…", v.exportDialog)
	v.Table = widget.NewTableWithHeaders(func() (int, int) { return v.rowCount(), len(compareCols) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis // a long cell label never runs into the next column
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(v.cell(id.Row, id.Col)) })
	v.Table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	v.Table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Row < 0 && id.Col >= 0 {
			o.(*widget.Label).SetText(compareCols[id.Col])
		} else {
			o.(*widget.Label).SetText("")
		}
	}
	for i, w := range compareWidths {
		v.Table.SetColumnWidth(i, w)
	}
	v.newFleetWidgets()
	v.StatsPick = widget.NewSelect(compareStats, nil)
	v.StatsPick.SetSelectedIndex(0)
	v.AACheck = widget.NewCheck("A/A control", nil)
	v.AAText = widget.NewLabel("tick A/A control and compare: every cell against itself, split in halves")
	v.AAText.Wrapping = fyne.TextWrapWord
	v.Chart = NewChartView(760, 420)
	v.ChartPick = widget.NewSelect(nil, v.showChart)
	v.ChartPick.PlaceHolder = "no comparison yet"
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Shared cells", v.Table),
		container.NewTabItem("Charts", container.NewBorder(container.NewHBox(widget.NewLabel("Chart"), v.ChartPick), nil, nil, nil, v.Chart.Object)),
		container.NewTabItem("Verdicts", container.NewVScroll(v.Verdicts)),
		container.NewTabItem("A/A control", container.NewVScroll(v.AAText)),
		container.NewTabItem("Fleet hosts", container.NewScroll(v.FleetHosts)),
	)
	if svc == nil {
		v.Status.SetText("comparisons are unavailable: the notebook is not open (see the Bench section)")
	}
	v.updateButtons()
	v.FleetPick = widget.NewSelect(nil, v.pickFleet)
	v.FleetPick.PlaceHolder = "no fleet runs"
	left := container.NewBorder(container.NewVBox(heading("Studies to compare"),
		container.NewBorder(nil, nil, widget.NewLabel("Fleet"), nil, v.FleetPick)), nil, nil, nil, container.NewVScroll(v.Choose))
	right := container.NewBorder(container.NewVBox(container.NewHBox(v.CompareBt, v.ExportBt, v.FleetExportBt),
		container.NewHBox(widget.NewLabel("Statistics"), v.StatsPick, v.AACheck), v.Status), nil, nil, nil, v.Tabs)
	split := container.NewHSplit(left, right)
	split.Offset = 0.24
	v.Object = split
	return v
}

func (v *CompareView) rowCount() int {
	if v.Result == nil {
		return 0
	}
	return len(v.Result.Cells)
}

func (v *CompareView) cell(r, c int) string {
	if v.Result == nil || r >= len(v.Result.Cells) || c >= len(v.Result.Cells[r]) {
		return ""
	}
	return v.Result.Cells[r][c]
}

// SetStudies offers the throughput, capacity and concurrency studies of list (others cannot
// be compared cell by cell yet; the service refuses a mix of kinds), keeping what was chosen.
func (v *CompareView) SetStudies(list []StudySummary) {
	var opts []string
	v.ids = map[string]int64{}
	for _, s := range list {
		if s.Kind != kinds.Throughput && s.Kind != "" && s.Kind != kinds.Capacity && s.Kind != kinds.Concurrency {
			continue
		}
		o := fmt.Sprintf("%d · %s (%s)", s.ID, s.Name, s.Status)
		v.ids[o] = s.ID
		opts = append(opts, o)
	}
	var keep []string
	for _, o := range v.Choose.Selected {
		if _, ok := v.ids[o]; ok {
			keep = append(keep, o)
		}
	}
	v.Choose.Options = opts
	v.Choose.Selected = keep
	v.Choose.Refresh()
	v.updateButtons()
	v.loadFleets()
	if len(v.onLoad) > 0 {
		ids := v.onLoad
		v.onLoad = nil
		v.ChooseIDs(ids...)
		v.Compare()
	}
}

// Chosen are the chosen studies, oldest (the baseline) first.
func (v *CompareView) Chosen() []int64 {
	var ids []int64
	for _, o := range v.Choose.Selected {
		if id, ok := v.ids[o]; ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// ChooseIDs ticks the studies ids (the window's --compare, tests).
func (v *CompareView) ChooseIDs(ids ...int64) {
	var sel []string
	for _, o := range v.Choose.Options {
		if slices.Contains(ids, v.ids[o]) {
			sel = append(sel, o)
		}
	}
	v.Choose.SetSelected(sel)
}

func (v *CompareView) updateButtons() {
	ok := v.svc != nil && !v.running && len(v.Chosen()) >= 2
	setEnabled(v.CompareBt, ok)
	setEnabled(v.ExportBt, ok)
}

func (v *CompareView) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}

// Compare compares the chosen studies in the background and shows the result, or why there is
// none (fewer than two studies, no shared cell: the service's reason).
func (v *CompareView) Compare() {
	ids := v.Chosen()
	if v.svc == nil || len(ids) < 2 {
		v.Status.SetText(fmt.Sprintf("choose two or more throughput studies to compare (%d chosen)", len(ids)))
		v.signal()
		return
	}
	v.running = true
	v.updateButtons()
	v.Status.SetText(fmt.Sprintf("comparing %d studies…", len(ids)))
	svc, o := v.svc, v.Options()
	go func() {
		res, err := svc.Compare(context.Background(), ids, o)
		onUI(func() {
			v.running = false
			v.updateButtons()
			if err != nil {
				v.Result = nil
				v.Status.SetText("not compared: " + err.Error())
				v.ChartPick.Options = nil
				v.ChartPick.ClearSelected()
				v.Chart.Clear("no comparison: " + err.Error())
			} else {
				v.show(res)
			}
			v.Table.Refresh()
			v.signal()
		})
	}()
}

func (v *CompareView) show(res *Comparison) {
	v.Result = res
	status := fmt.Sprintf("%s\n%d shared cell(s), %d shared prediction(s)", strings.Join(res.Studies, "\n"), len(res.Cells), len(res.Verdicts))
	if res.Footer != "" {
		status += "\n" + res.Footer
	}
	v.Status.SetText(status)
	text := strings.Join(res.Verdicts, "\n")
	if len(res.Verdicts) == 0 {
		text = "the studies share no prediction (the same ID about the same figure)"
	}
	if len(res.Notes) > 0 {
		text += "\n\n" + strings.Join(res.Notes, "\n")
	}
	v.Verdicts.SetText(text)
	if res.AA != "" {
		v.AAText.SetText(res.AA)
	} else {
		v.AAText.SetText("tick A/A control and compare: every cell against itself, split in halves")
	}
	var names []string
	for _, c := range res.charts() {
		names = append(names, c.Name)
	}
	v.ChartPick.Options = names
	v.ChartPick.ClearSelected()
	if len(names) > 0 {
		v.ChartPick.SetSelected(names[0]) // shows it
	} else {
		v.ChartPick.Refresh()
		v.Chart.Clear("this comparison has no charts")
	}
}

// showChart shows the comparison's chart of that name (the picker's choice).
func (v *CompareView) showChart(name string) {
	for _, c := range v.Result.charts() {
		if c.Name == name {
			v.Chart.Show(c.Chart)
			return
		}
	}
}

func (v *CompareView) exportDialog() {
	ids := v.Chosen()
	pickFolder(prefLastReceipts, v.win, func(dir string) {
		out := filepath.Join(dir, compareBundleName(ids))
		v.Export(ids, out, func(x ReceiptExport, err error) {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			dialog.ShowInformation("Comparison receipt written", x.Summary, v.win)
		})
	})
}

// compareBundleName is the folder a comparison's receipt is written to: compare-1-2-3.
func compareBundleName(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return "compare-" + strings.Join(parts, "-")
}

// Export writes the comparison's receipt of ids to out in the background; done runs on the UI
// goroutine.
func (v *CompareView) Export(ids []int64, out string, done func(ReceiptExport, error)) {
	svc, o := v.svc, v.Options()
	go func() {
		x, err := svc.ExportComparison(context.Background(), ids, out, o)
		onUI(func() {
			done(x, err)
			v.signal()
		})
	}()
}

// loadFleets offers the notebook's fleet runs (in the background; the picker is filled on the
// UI goroutine).
func (v *CompareView) loadFleets() {
	fl, ok := v.svc.(FleetLister)
	if !ok {
		return
	}
	v.fleetGen++
	gen := v.fleetGen
	go func() {
		list, err := fl.Fleets(context.Background())
		onUI(func() {
			if gen != v.fleetGen { // a newer listing is on its way
				return
			}
			v.fleets = map[string]FleetChoice{}
			var opts []string
			for _, f := range list {
				o := f.ID + " — " + f.Line
				v.fleets[o] = f
				opts = append(opts, o)
			}
			v.FleetPick.Options = opts
			switch {
			case err != nil:
				v.FleetPick.PlaceHolder = "fleets not read: " + err.Error()
			case len(opts) == 0:
				v.FleetPick.PlaceHolder = "no fleet runs"
			default:
				v.FleetPick.PlaceHolder = fmt.Sprintf("%d fleet run(s): pick one to compare its hosts", len(opts))
			}
			v.FleetPick.Refresh()
			v.signal()
		})
	}()
}

// pickFleet ticks a fleet's complete members and compares them.
func (v *CompareView) pickFleet(o string) {
	f, ok := v.fleets[o]
	if !ok {
		return
	}
	v.fleetPicked(f)
	if len(f.Members) < 2 {
		v.Status.SetText(fmt.Sprintf("fleet %q has %d complete member(s): a comparison needs two or more", f.ID, len(f.Members)))
		v.signal()
		return
	}
	v.ChooseIDs(f.Members...)
	v.Compare()
}

// Options are the statistics chosen (the part before ":" of the pick) and whether the A/A
// control is asked for.
func (v *CompareView) Options() CompareOptions {
	stats, _, _ := strings.Cut(v.StatsPick.Selected, ":")
	return CompareOptions{Stats: stats, AA: v.AACheck.Checked}
}
