package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/charts"
	"sparkbench/app/kinds"
	"sparkbench/app/study"
	"sparkbench/plots"
)

// StudySummary is one line of the studies list.
type StudySummary struct {
	ID          int64
	Name        string
	Kind        string
	Status      string
	Legs        int
	Predictions int
}

// StudyService is the study core the window drives; cmd wires it to the notebook and the
// runner, tests to fakes. Run blocks until the study ends, is halted or ctx is cancelled, and
// calls onEvent synchronously from its own goroutine.
type StudyService interface {
	List(ctx context.Context) ([]StudySummary, error)
	Show(ctx context.Context, id int64) (*study.Report, error)
	Run(ctx context.Context, id int64, onEvent func(study.Event)) (study.RunSummary, error)
	// EnsureDemo registers the embedded demo study once and returns its id.
	EnsureDemo(ctx context.Context) (int64, error)
	// HumanVerdict records a PASS / FAIL / NOTE with its rationale for a prediction.
	HumanVerdict(ctx context.Context, id int64, h study.HumanVerdict) error
	// AddFinding numbers (F1, F2, …) and records a finding linked to legs and predictions.
	AddFinding(ctx context.Context, id int64, f study.FindingRequest) (string, error)
	// Receipt writes the study's receipt bundle to out (a new folder, or FILE.tar.gz) and
	// returns what it wrote.
	Receipt(ctx context.Context, id int64, out string) (ReceiptExport, error)
}

// ReceiptExport is a written receipt bundle: the lines that say what was written, and every
// file of the bundle by its path in it (receipt.md and plots/NAME.png make the preview).
type ReceiptExport struct {
	Summary string
	Files   map[string][]byte
}

// StudiesView lists the notebook's studies and shows one: its predictions and verdicts, its
// results by depth with a chart, its legs, and — while it runs — progress, a live console and
// the chart filling in.
type StudiesView struct {
	Object fyne.CanvasObject

	List          *widget.List
	ListFilter    *widget.Entry  // keeps the studies whose id, name, kind or status match
	Sort          *widget.Select // newest first, oldest first, name, status
	ListCount     *widget.Label  // "3 of 5 studies"
	Title         *widget.Label
	Status        *widget.Label
	RunButton     *widget.Button
	AbortButton   *widget.Button
	HumanButton   *widget.Button
	FindingButton *widget.Button
	receiptPane   // Export receipt…, as .tar.gz, its progress and Cancel export; the Receipt tab
	Progress      *widget.ProgressBar
	ProgressMsg   *widget.Label
	Scoreboard    *widget.Table
	Results       *widget.Table
	Legs          *widget.Table
	Console       *widget.List
	Chart         *ChartView
	// Telemetry is the timeline under the live chart (telemetry_live.go); Energy the study's
	// energy per token against depth (studies_energy.go). Each hidden when it has nothing.
	Telemetry   *TelemetryPane
	Energy      *ChartView
	Gates       *widget.Label // gate lights of the running (or last) run: CV gate, canary, crashes
	Follow      *widget.Check // console follows new lines (untick to read back)
	CopyConsole *widget.Button
	Tabs        *container.AppTabs

	app fyne.App
	win fyne.Window
	svc StudyService

	studies  []StudySummary
	shown    []StudySummary // the list's rows: studies filtered and sorted (studies_list.go)
	stack    *fyne.Container
	selected int64
	report   *study.Report
	showGen  uint64 // counts Select calls: only the latest load is shown (loads may finish out of order)
	listGen  uint64 // the same for Reload's list
	listWant int64  // the study the pending Reload will select (a later Reload(0) keeps it)

	runSession // the running study; its mu guards the live state below
	console    []string
	text       *Throttle // the run view: progress, rows, gates, the console and the chart
	// liveProgress and liveStudy are the running study's latest progress (under mu).
	liveProgress study.Progress
	liveStudy    int64
	liveRows     map[string][]plots.DepthPoint // model|test -> points, while running
	tel          *liveTelemetry                // the run's telemetry readings (nil before any run)
	telStudy     int64                         // the study that sent them
	telText      *Throttle                     // the timeline and readings
	// onTelemetry hands the newest readings to the Bench machine card (UI goroutine): the
	// study, its readings, whether it still runs.
	onTelemetry func(id int64, latest []LiveReading, running bool)

	// Updated receives after each background load or run has been shown (tests wait on it).
	Updated chan struct{}

	// Cap shows capacity and concurrency studies in place of the throughput detail (nil until
	// SetCapacity).
	Cap      *CapacityPanel
	detail   fyne.CanvasObject // the throughput study's detail
	capShown bool
	// Quant shows quantization ladders in place of the throughput detail (nil until SetQuant).
	Quant      *QuantPanel
	quantShown bool
	runOnLoad  int64 // RunOnLoad: start this study as soon as it is shown (-1: the demo)
	showOnLoad int64 // ShowOnLoad: the study shown first
	gates      gateCounts
	meta       plots.Meta
	// onListed runs on the UI goroutine after each list has been read (the Compare section
	// offers the same studies).
	onListed func([]StudySummary)
}

// SetMeta names the build and machine in chart titles (from the doctor's report).
func (v *StudiesView) SetMeta(m plots.Meta) {
	v.mu.Lock()
	v.meta = m
	v.mu.Unlock()
}

// RunOnLoad starts study id (-1: the demo study) as soon as it has been shown.
func (v *StudiesView) RunOnLoad(id int64) { v.runOnLoad = id }

// ShowOnLoad opens the section on study id (without running it) instead of the demo.
func (v *StudiesView) ShowOnLoad(id int64) { v.showOnLoad = id }

func newStudiesView(a fyne.App, win fyne.Window, svc StudyService) *StudiesView {
	v := &StudiesView{app: a, win: win, svc: svc, Updated: make(chan struct{}, 32),
		Title:  widget.NewLabelWithStyle("no study selected", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		Status: widget.NewLabel(""), Progress: widget.NewProgressBar(), ProgressMsg: widget.NewLabel(""),
		text: NewThrottle(textInterval), telText: NewThrottle(textInterval)}
	v.Status.Wrapping = fyne.TextWrapWord
	v.ProgressMsg.Wrapping = fyne.TextWrapWord
	v.List = newStudyList(func() []StudySummary { return v.shown })
	v.List.OnSelected = func(i widget.ListItemID) {
		if id := v.shown[i].ID; id != v.selected {
			v.Select(id)
		}
	}

	v.RunButton = widget.NewButton("Run", v.RunSelected)
	v.HumanButton = widget.NewButton("Human verdict…", v.humanDialog)
	v.FindingButton = widget.NewButton("Add finding…", v.findingDialog)
	v.receiptPane = newReceiptPane(v.receiptDialog)
	v.AbortButton = widget.NewButton("Abort", v.confirmAbort)
	v.RunButton.Disable()
	v.AbortButton.Disable()

	v.Scoreboard = newItemTable(scoreCols, v.scores)
	v.Results = newItemTable(resultCols, v.results)
	v.Legs = newItemTable(legCols, v.legs)
	var consoleTab fyne.CanvasObject
	v.Console, v.Follow, v.CopyConsole, consoleTab = newConsoleTab(a, &v.mu, &v.console)
	v.Chart = NewChartView(760, 420)
	v.Telemetry = newTelemetryPane(func() {
		if v.Telemetry != nil {
			v.showTelemetry()
		}
	})
	v.Energy = NewChartView(760, 420)
	v.Energy.Object.Hide()
	v.Gates = widget.NewLabel("gates: no run yet")
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Predictions", v.Scoreboard),
		container.NewTabItem("Chart", container.NewVScroll(container.NewVBox(v.Chart.Object, v.Telemetry.Object, v.Energy.Object))),
		container.NewTabItem("Results", v.Results),
		container.NewTabItem("Legs", v.Legs),
		container.NewTabItem("Console", consoleTab),
		v.receiptTab(),
	)
	v.Tabs.OnSelected = func(*container.TabItem) { v.refreshConsole() }
	v.Progress.Hide()
	head := container.NewVBox(
		v.Title,
		container.NewHBox(append([]fyne.CanvasObject{v.RunButton, v.AbortButton, v.HumanButton, v.FindingButton}, v.exportControls()...)...),
		v.Status, v.Progress, v.ExportBar, v.ProgressMsg, v.Gates,
	)
	v.detail = container.NewBorder(head, nil, nil, nil, v.Tabs)
	v.stack = container.NewStack(v.detail)
	split := container.NewHSplit(v.listPane(), v.stack)
	split.Offset = 0.26
	v.Object = split
	v.ended = v.runEnded
	return v
}

// runEnded reads the studies' list again once a run of any kind has ended, so that the list,
// the Overview's recent studies and the Compare section say the study's state as it is now
// (not "registered · 0 legs" until Refresh); the study shown stays selected (UI goroutine).
func (v *StudiesView) runEnded(int64) { v.Reload(0) }

// SetCapacity lets the section show and run capacity and concurrency studies through svc.
func (v *StudiesView) SetCapacity(svc CapacityService) {
	v.Cap = newCapacityPanel(v.app, v.win, svc, func(int64) { v.receiptDialog() }, v.busy)
	v.Cap.meta = func() plots.Meta {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.meta
	}
	v.Cap.ended = v.runEnded
	v.Cap.Object.Hide()
	v.stack.Add(v.Cap.Object)
}

// SetQuant lets the section show and run quantization ladders through svc.
func (v *StudiesView) SetQuant(svc QuantService) {
	v.Quant = newQuantPanel(v.app, v.win, svc, func(int64) { v.receiptDialog() }, v.busy)
	v.Quant.meta = func() plots.Meta {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.meta
	}
	v.Quant.ended = v.runEnded
	v.Quant.Object.Hide()
	v.stack.Add(v.Quant.Object)
}

// busy says whether a study of any kind is running in the window.
func (v *StudiesView) busy() bool {
	v.mu.Lock()
	running := v.running != 0
	v.mu.Unlock()
	return running || (v.Cap != nil && v.Cap.Running()) || (v.Quant != nil && v.Quant.Running())
}

// kindOf is the listed kind of study id ("" when not listed).
func (v *StudiesView) kindOf(id int64) string {
	for _, s := range v.studies {
		if s.ID == id {
			return s.Kind
		}
	}
	return ""
}

// showPanel shows the detail of a study's kind: the capacity panel (capacity and
// concurrency), the quant panel (ladders) or the throughput view (neither).
func (v *StudiesView) showPanel(capOn, quantOn bool) {
	capOn, quantOn = capOn && v.Cap != nil, quantOn && v.Quant != nil
	v.capShown, v.quantShown = capOn, quantOn
	setVisible(v.detail, !capOn && !quantOn)
	if v.Cap != nil {
		setVisible(v.Cap.Object, capOn)
	}
	if v.Quant != nil {
		setVisible(v.Quant.Object, quantOn)
	}
}

// Start registers the demo study if needed and selects it (or the newest study).
func (v *StudiesView) Start() {
	if v.svc == nil {
		v.Status.SetText("the notebook is not open: studies are unavailable (see the Bench section)")
		return
	}
	go func() {
		id, err := v.svc.EnsureDemo(context.Background())
		onUI(func() {
			if err != nil {
				v.Status.SetText("could not prepare the demo study: " + err.Error())
			}
			if v.runOnLoad == -1 {
				v.runOnLoad = id
			}
			if v.runOnLoad > 0 {
				id = v.runOnLoad
			} else if v.showOnLoad > 0 && v.selected == 0 {
				id = v.showOnLoad
			} else if v.selected != 0 {
				id = 0 // the user chose a study meanwhile: keep it
			}
			v.Reload(id)
		})
	}()
}

// Reload refreshes the list and selects id (0: keep the selection).
func (v *StudiesView) Reload(id int64) {
	if v.svc == nil {
		return
	}
	if id == 0 {
		id = v.listWant
	}
	if id == 0 {
		id = v.selected
	}
	v.listWant = id
	v.listGen++
	gen := v.listGen
	go func() {
		list, err := v.svc.List(context.Background())
		onUI(func() {
			if gen != v.listGen {
				v.signal() // a later Reload will show its own, newer list
				return
			}
			v.listWant = 0
			if err != nil {
				v.Status.SetText("could not list studies: " + err.Error())
				dialog.ShowError(fmt.Errorf("the studies could not be listed: %w. Check the notebook in the Bench section, then Refresh", err), v.win)
				v.signal()
				return
			}
			v.studies = list
			v.applyList()
			if v.onListed != nil {
				v.onListed(list)
			}
			for _, s := range list {
				if s.ID == id {
					// The list may have reordered with the same index selected, in which case
					// OnSelected does not fire: show the study explicitly.
					if i := v.shownIndex(id); i >= 0 {
						v.List.Select(i)
					}
					v.Select(id)
					return
				}
			}
			if id == 0 && len(list) > 0 {
				first := list[0].ID
				if len(v.shown) > 0 {
					first = v.shown[0].ID
				}
				if i := v.shownIndex(first); i >= 0 {
					v.List.Select(i)
				}
				v.Select(first)
				return
			}
			v.signal()
		})
	}()
}

// Select shows study id.
func (v *StudiesView) Select(id int64) {
	kind := v.kindOf(id)
	if capOn, quantOn := v.Cap != nil && kinds.Server(kind), v.Quant != nil && kind == kinds.Quant; capOn || quantOn {
		v.selected = id
		v.showGen++ // a throughput load still under way is stale now
		v.report = nil
		v.updateButtons()
		v.showPanel(capOn, quantOn)
		runNow := v.runOnLoad == id
		if runNow {
			v.runOnLoad = 0
		}
		if capOn {
			if runNow {
				v.Cap.runOnLoad = id
			}
			v.Cap.Show(id)
		} else {
			if runNow {
				v.Quant.runOnLoad = id
			}
			v.Quant.Show(id)
		}
		v.signal()
		return
	}
	v.showPanel(false, false)
	if v.selected != id {
		v.mu.Lock()
		if v.running != id {
			v.console = nil
		}
		v.mu.Unlock()
		v.Console.Refresh()
	}
	v.selected = id
	v.showGen++
	gen := v.showGen
	v.updateButtons()
	// A later Select (another study, or a reload after a new verdict or finding) makes this
	// load stale: it may predate the latest write.
	loadStudy(v.win, v.Status, id, func() bool { return gen == v.showGen }, v.signal,
		func(ctx context.Context) (*study.Report, error) { return v.svc.Show(ctx, id) },
		func(rep *study.Report) {
			if v.selected != id {
				return
			}
			v.showReport(rep)
			if v.runOnLoad == id {
				v.runOnLoad = 0
				if !v.RunButton.Disabled() {
					v.RunSelected()
				}
			}
		})
}

// loadStudy reads a study off the UI goroutine and, back on it, shows it — unless current
// says a later load began meanwhile — or says in the status line and a dialog why it could
// not be read; signal runs last either way (tests wait on it). Both run views load so.
// panelLoad is what a study panel keeps of its loads: the study it shows, the load
// generation (the latest Show wins when loads finish out of order), and a study to run as soon
// as it has been shown (the window's --run).
type panelLoad struct {
	id        int64
	runOnLoad int64
	gen       uint64
}

// unavailable shows study id's refusal when the panel has no service to load it with.
func (pl *panelLoad) unavailable(id int64, updateButtons func(), status *widget.Label, signal func(), msg string) {
	pl.id = id
	pl.gen++
	updateButtons()
	status.SetText(msg)
	signal()
}

// showStudy loads study id in the background (a new generation; the buttons updated first)
// and shows it, then runs it when it was asked to run once shown and can.
func showStudy[T any](pl *panelLoad, id int64, win fyne.Window, status *widget.Label, updateButtons, signal func(),
	runBtn *widget.Button, run func(), load func(context.Context) (T, error), show func(T)) {
	pl.id = id
	pl.gen++
	gen := pl.gen
	updateButtons()
	loadStudy(win, status, id, func() bool { return gen == pl.gen }, signal, load, func(x T) {
		show(x)
		if pl.runOnLoad == id {
			pl.runOnLoad = 0
			if !runBtn.Disabled() {
				run()
			}
		}
	})
}

func loadStudy[T any](win fyne.Window, status *widget.Label, id int64, current func() bool, signal func(),
	load func(context.Context) (T, error), show func(T)) {
	go func() {
		x, err := load(context.Background())
		onUI(func() {
			if !current() {
				signal()
				return
			}
			if err != nil {
				status.SetText(fmt.Sprintf("study %d: %v", id, err))
				dialog.ShowError(fmt.Errorf("study %d could not be shown: %w. Check the notebook in the Bench section, then choose the study again", id, err), win)
			} else {
				show(x)
			}
			signal()
		})
	}()
}

func (v *StudiesView) showReport(r *study.Report) {
	v.report = r
	s := r.Study
	v.Title.SetText(fmt.Sprintf("%s (study %d)", s.Name, s.ID))
	status := fmt.Sprintf("%s · %d/%d legs · plan sha256 %s", s.Status, s.LegsDone, s.LegsTotal, short(s.PlanSHA256))
	if s.Halted != "" {
		status += " · halted: " + s.Halted
	}
	v.Status.SetText(status)
	if s.LegsDone < s.LegsTotal {
		v.RunButton.SetText("Run (resumes at the first unfinished leg)")
		if s.LegsDone == 0 {
			v.RunButton.SetText("Run")
		}
	} else {
		v.RunButton.SetText("Run again (nothing left to run)")
	}
	v.updateButtons()
	v.Scoreboard.Refresh()
	v.Results.Refresh()
	v.Legs.Refresh()
	if ch, err := charts.Depth(r, "tg", charts.CrossingLine(r, "tg")); err == nil {
		v.mu.Lock()
		ch.Meta.Build, ch.Meta.Machine = v.meta.Build, v.meta.Machine
		v.mu.Unlock()
		v.Chart.Show(ch)
	} else {
		v.Chart.Notes.SetText(err.Error())
	}
	v.showEnergy(r)
}

func (v *StudiesView) updateButtons() {
	v.mu.Lock()
	running := v.running != 0
	v.mu.Unlock()
	setEnabled(v.RunButton, v.selected != 0 && !running && v.report != nil && v.report.Study.LegsDone < v.report.Study.LegsTotal)
	setEnabled(v.AbortButton, running)
}

// ---- tables ----

// close stops a running study and the chart worker when the window closes.
func (v *StudiesView) close() {
	if v.Cap != nil {
		v.Cap.close()
	}
	if v.Quant != nil {
		v.Quant.close()
	}
	v.Abort()
	v.text.Stop()
	v.telText.Stop()
	v.Chart.Close()
	v.Telemetry.Chart.Close()
	v.Energy.Close()
}

// Report is the study shown (nil before the first load).
func (v *StudiesView) Report() *study.Report { return v.report }

// ConsoleLines is a copy of the console.
func (v *StudiesView) ConsoleLines() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.console...)
}
