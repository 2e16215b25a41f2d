package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/charts"
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
	Title         *widget.Label
	Status        *widget.Label
	RunButton     *widget.Button
	AbortButton   *widget.Button
	HumanButton   *widget.Button
	FindingButton *widget.Button
	ReceiptButton *widget.Button
	ExportTarGz   *widget.Check               // Export receipt… writes a .tar.gz instead of a folder
	ExportBar     *widget.ProgressBarInfinite // shown while a receipt is written
	CancelExport  *widget.Button              // cancels the receipt being written
	exportOps     *opCancel
	Progress      *widget.ProgressBar
	ProgressMsg   *widget.Label
	Scoreboard    *widget.Table
	Results       *widget.Table
	Legs          *widget.Table
	Console       *widget.List
	Chart         *ChartView
	Gates         *widget.Label // gate lights of the running (or last) run: CV gate, canary, crashes
	Follow        *widget.Check // console follows new lines (untick to read back)
	CopyConsole   *widget.Button
	Receipt       *widget.RichText // the last exported receipt.md, rendered
	ReceiptImgs   *fyne.Container  // its charts
	Tabs          *container.AppTabs

	app fyne.App
	win fyne.Window
	svc StudyService

	studies  []StudySummary
	stack    *fyne.Container
	selected int64
	report   *study.Report
	showGen  uint64 // counts Select calls: only the latest load is shown (loads may finish out of order)
	listGen  uint64 // the same for Reload's list
	listWant int64  // the study the pending Reload will select (a later Reload(0) keeps it)

	mu       sync.Mutex
	console  []string
	cancel   context.CancelFunc
	running  int64
	text     *Throttle // leg boundaries, flags, verdicts
	slowText *Throttle // rows, in-leg progress, transcript lines
	// liveProgress and liveStudy are the running study's latest progress (under mu).
	liveProgress study.Progress
	liveStudy    int64
	liveRows     map[string][]plots.DepthPoint // model|test -> points, while running

	// Updated receives after each background load or run has been shown (tests wait on it).
	Updated chan struct{}

	// Cap shows capacity and concurrency studies in place of the throughput detail (nil until
	// SetCapacity).
	Cap        *CapacityPanel
	detail     fyne.CanvasObject // the throughput study's detail
	capShown   bool
	runOnLoad  int64 // RunOnLoad: start this study as soon as it is shown (-1: the demo)
	showOnLoad int64 // ShowOnLoad: the study shown first
	gates      gateCounts
	meta       plots.Meta
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

const maxConsoleLines = 2000

func newStudiesView(a fyne.App, win fyne.Window, svc StudyService) *StudiesView {
	v := &StudiesView{app: a, win: win, svc: svc, Updated: make(chan struct{}, 32),
		Title:  widget.NewLabelWithStyle("no study selected", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		Status: widget.NewLabel(""), Progress: widget.NewProgressBar(), ProgressMsg: widget.NewLabel(""),
		text: NewThrottle(textInterval), slowText: NewThrottle(slowTextInterval)}
	v.Status.Wrapping = fyne.TextWrapWord
	v.ProgressMsg.Wrapping = fyne.TextWrapWord
	v.List = widget.NewList(func() int { return len(v.studies) },
		func() fyne.CanvasObject { return widget.NewLabel("") },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			s := v.studies[i]
			o.(*widget.Label).SetText(fmt.Sprintf("%d · %s (%s, %s)", s.ID, s.Name, s.Kind, s.Status))
		})
	v.List.OnSelected = func(i widget.ListItemID) { v.Select(v.studies[i].ID) }

	v.RunButton = widget.NewButton("Run", v.RunSelected)
	v.HumanButton = widget.NewButton("Human verdict…", v.humanDialog)
	v.FindingButton = widget.NewButton("Add finding…", v.findingDialog)
	v.ReceiptButton = widget.NewButton("Export receipt…", v.receiptDialog)
	v.ExportTarGz = widget.NewCheck("as .tar.gz", nil)
	v.ExportBar = widget.NewProgressBarInfinite()
	v.ExportBar.Stop()
	v.ExportBar.Hide()
	v.exportOps = newOpCancel("Cancel export")
	v.CancelExport = v.exportOps.Button
	v.AbortButton = widget.NewButton("Abort", v.confirmAbort)
	v.RunButton.Disable()
	v.AbortButton.Disable()

	v.Scoreboard = newTable([]column{
		{"Prediction", 80}, {"Claim", 300}, {"Expected", 200}, {"Verdict", 200}, {"Human", 120},
	}, func() int { return v.scoreRows() }, func(r, c int) string { return v.scoreCell(r, c) })
	v.Results = newTable([]column{
		{"Model", 110}, {"Test", 80}, {"Depth", 70}, {"Mean t/s", 110}, {"± sd", 90}, {"CV", 70}, {"Reps", 50}, {"Leg", 140}, {"Source", 150},
	}, func() int { return v.resultRows() }, func(r, c int) string { return v.resultCell(r, c) })
	v.Legs = newTable([]column{
		{"Leg", 170}, {"State", 90}, {"Class", 90}, {"Rows", 60}, {"Results", 70}, {"Duration", 90}, {"Reason", 360},
	}, func() int { return v.legRows() }, func(r, c int) string { return v.legCell(r, c) })
	v.Console = newConsoleList(&v.mu, &v.console)
	v.Chart = NewChartView(760, 420)
	v.Receipt = widget.NewRichTextFromMarkdown("Export the study's receipt (Export receipt…) to preview it here.")
	v.Receipt.Wrapping = fyne.TextWrapWord
	v.ReceiptImgs = container.NewVBox()
	v.Gates = widget.NewLabel("gates: no run yet")
	v.Follow = widget.NewCheck("follow", nil)
	v.Follow.SetChecked(true)
	v.CopyConsole = widget.NewButton("Copy", func() {
		v.app.Clipboard().SetContent(strings.Join(v.ConsoleLines(), "\n"))
	})
	consoleTab := container.NewBorder(container.NewHBox(v.Follow, v.CopyConsole), nil, nil, nil, v.Console)
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Predictions", v.Scoreboard),
		container.NewTabItem("Chart", v.Chart.Object),
		container.NewTabItem("Results", v.Results),
		container.NewTabItem("Legs", v.Legs),
		container.NewTabItem("Console", consoleTab),
		container.NewTabItem("Receipt", container.NewVScroll(container.NewVBox(v.ReceiptImgs, v.Receipt))),
	)
	v.Tabs.OnSelected = func(*container.TabItem) { v.refreshConsole() }
	v.Progress.Hide()
	head := container.NewVBox(
		v.Title,
		container.NewHBox(v.RunButton, v.AbortButton, v.HumanButton, v.FindingButton, v.ReceiptButton, v.ExportTarGz, v.CancelExport),
		v.Status, v.Progress, v.ExportBar, v.ProgressMsg, v.Gates,
	)
	v.detail = container.NewBorder(head, nil, nil, nil, v.Tabs)
	v.stack = container.NewStack(v.detail)
	left := container.NewBorder(heading("Studies"), widget.NewButton("Refresh", func() { v.Reload(0) }), nil, nil, v.List)
	split := container.NewHSplit(left, v.stack)
	split.Offset = 0.22
	v.Object = split
	return v
}

// SetCapacity lets the section show and run capacity and concurrency studies through svc.
func (v *StudiesView) SetCapacity(svc CapacityService) {
	v.Cap = newCapacityPanel(v.app, v.win, svc, func(int64) { v.receiptDialog() }, v.busy)
	v.Cap.meta = func() plots.Meta {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.meta
	}
	v.Cap.Object.Hide()
	v.stack.Add(v.Cap.Object)
}

// busy says whether a study of either kind is running in the window.
func (v *StudiesView) busy() bool {
	v.mu.Lock()
	running := v.running != 0
	v.mu.Unlock()
	return running || (v.Cap != nil && v.Cap.Running())
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

func isCapacityKind(kind string) bool { return kind == "capacity" || kind == "concurrency" }

// showCapacity swaps the detail between the throughput view and the capacity panel.
func (v *StudiesView) showCapacity(on bool) {
	if v.Cap == nil || on == v.capShown {
		return
	}
	v.capShown = on
	if on {
		v.detail.Hide()
		v.Cap.Object.Show()
	} else {
		v.Cap.Object.Hide()
		v.detail.Show()
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
			v.List.Refresh()
			for i, s := range list {
				if s.ID == id {
					// The list may have reordered with the same index selected, in which case
					// OnSelected does not fire: show the study explicitly.
					v.List.Select(i)
					v.Select(id)
					return
				}
			}
			if id == 0 && len(list) > 0 {
				v.List.Select(0)
				v.Select(list[0].ID)
				return
			}
			v.signal()
		})
	}()
}

// Select shows study id.
func (v *StudiesView) Select(id int64) {
	if v.Cap != nil && isCapacityKind(v.kindOf(id)) {
		v.selected = id
		v.showGen++ // a throughput load still under way is stale now
		v.report = nil
		v.updateButtons()
		v.showCapacity(true)
		if v.runOnLoad == id {
			v.runOnLoad = 0
			v.Cap.runOnLoad = id
		}
		v.Cap.Show(id)
		v.signal()
		return
	}
	v.showCapacity(false)
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
	go func() {
		rep, err := v.svc.Show(context.Background(), id)
		onUI(func() {
			if gen != v.showGen {
				// A later Select (another study, or a reload after a new verdict or
				// finding) is under way: this load may predate the latest write.
				v.signal()
				return
			}
			if err != nil {
				v.Status.SetText(fmt.Sprintf("study %d: %v", id, err))
				dialog.ShowError(fmt.Errorf("study %d could not be shown: %w. Check the notebook in the Bench section, then choose the study again", id, err), v.win)
			} else if v.selected == id {
				v.showReport(rep)
				if v.runOnLoad == id {
					v.runOnLoad = 0
					if !v.RunButton.Disabled() {
						v.RunSelected()
					}
				}
			}
			v.signal()
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
}

func (v *StudiesView) updateButtons() {
	v.mu.Lock()
	running := v.running != 0
	v.mu.Unlock()
	setEnabled(v.RunButton, v.selected != 0 && !running && v.report != nil && v.report.Study.LegsDone < v.report.Study.LegsTotal)
	setEnabled(v.AbortButton, running)
}

// RunSelected runs (or resumes) the selected study in the background.
func (v *StudiesView) RunSelected() {
	id := v.selected
	if id == 0 {
		return
	}
	if v.capShown {
		v.Cap.Run()
		return
	}
	if v.Cap != nil && v.Cap.Running() {
		showOneAtATime(v.win)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.mu.Lock()
	if v.running != 0 {
		v.mu.Unlock()
		cancel()
		return
	}
	v.running, v.cancel = id, cancel
	v.console = nil
	v.liveRows = map[string][]plots.DepthPoint{}
	v.gates = gateCounts{}
	v.mu.Unlock()
	v.Progress.SetValue(0)
	v.Progress.Show()
	v.ProgressMsg.SetText("starting…")
	v.Tabs.SelectIndex(1) // the chart fills in while it runs
	v.updateButtons()
	name := v.Title.Text
	go func() {
		sum, err := v.svc.Run(ctx, id, v.onEvent)
		cancel()
		onUI(func() {
			v.mu.Lock()
			v.running, v.cancel = 0, nil
			v.mu.Unlock()
			v.Progress.Hide()
			msg := fmt.Sprintf("finished: %d/%d legs, %d verdict(s) in %s", sum.LegsDone, sum.LegsTotal, len(sum.Verdicts), sum.Elapsed.Round(10*time.Millisecond))
			switch {
			case errors.Is(err, study.ErrStopped) || errors.Is(err, context.Canceled):
				msg = "stopped by you; the running leg is recorded as stopped_by_user. Run resumes at the first unfinished leg."
			case err != nil:
				msg = "could not run: " + err.Error()
				dialog.ShowError(fmt.Errorf("the study could not run: %w. Legs that finished are kept; fix it and press Run to resume", err), v.win)
			case sum.Halted:
				msg = fmt.Sprintf("halted after %d/%d legs: %s", sum.LegsDone, sum.LegsTotal, sum.Reason)
			case len(sum.Incomplete) > 0:
				msg = incompleteMessage(sum)
			}
			v.ProgressMsg.SetText(msg)
			v.mu.Lock()
			v.Gates.SetText(v.gates.String())
			v.mu.Unlock()
			v.app.SendNotification(fyne.NewNotification("sparkbench: "+name, msg))
			v.Select(id)
		})
	}()
}

// incompleteMessage says which legs of a finished run have no results and what Run does next.
func incompleteMessage(sum study.RunSummary) string {
	var retry, final []string
	for _, st := range sum.Incomplete {
		if st.Final {
			final = append(final, st.Leg)
		} else {
			retry = append(retry, st.Leg)
		}
	}
	msg := fmt.Sprintf("incomplete: %d of %d legs have no results", len(sum.Incomplete), sum.LegsTotal)
	if len(retry) > 0 {
		msg += "; Run tries again " + strings.Join(retry, ", ")
	}
	if len(final) > 0 {
		msg += "; out of retries: " + strings.Join(final, ", ")
	}
	return msg
}

// onEvent runs on the engine's goroutine: it only records and schedules a throttled update.
func (v *StudiesView) onEvent(e study.Event) {
	line := eventLine(e)
	var chart plots.Chart
	v.mu.Lock()
	v.console = appendConsole(v.console, line)
	v.gates.observe(e)
	if e.Kind == study.EventSample && e.Sample != nil && e.Sample.Kind == "tg" {
		test, _, _ := strings.Cut(e.Sample.Test, " @ ")
		key := strings.TrimSuffix(filepath.Base(e.Sample.Model), ".gguf") + " " + test
		v.liveRows[key] = append(v.liveRows[key], plots.DepthPoint{Depth: int(e.Sample.Depth), Mean: e.Sample.AvgTs,
			SD: e.Sample.Result.StddevTs, N: len(e.Sample.Result.SamplesTs)})
		chart = liveDepthChart(v.liveRows, v.meta)
	}
	v.liveProgress, v.liveStudy = e.Progress, e.StudyID
	v.mu.Unlock()
	if chart != nil {
		v.Chart.Show(chart)
	}
	// Leg boundaries, flags and verdicts show at once (within the text throttle); rows,
	// in-leg progress and transcript lines at most every slowTextInterval: each change of the
	// shown text repaints the window. Both show the latest state, whichever runs.
	switch e.Kind {
	case study.EventSample, study.EventLegProgress, study.EventLine:
		v.slowText.Submit(v.showLive)
	default:
		v.text.Submit(v.showLive)
	}
}

// showLive shows the run as it stands: progress, status, gate lights, the console if shown.
func (v *StudiesView) showLive() {
	v.mu.Lock()
	live := v.running != 0
	p, id, gates := v.liveProgress, v.liveStudy, v.gates.Live()
	v.mu.Unlock()
	if !live { // the run has ended: its final message stands
		return
	}
	if p.LegsTotal > 0 {
		setProgress(v.Progress, float64(p.LegsDone)/float64(p.LegsTotal))
	}
	eta := "ETA unknown"
	if p.ETA >= 0 {
		eta = "ETA " + etaText(p.ETA)
	}
	cur := p.Current
	if p.LegTests > 0 {
		cur += fmt.Sprintf(" (test %d/%d)", p.LegTest, p.LegTests)
	}
	setText(v.ProgressMsg, fmt.Sprintf("%d/%d legs · %s · %s", p.LegsDone, p.LegsTotal, cur, eta))
	if r := v.report; r != nil && r.Study.ID == id {
		setText(v.Status, "running · plan sha256 "+short(r.Study.PlanSHA256)) // the legs done are in the progress line
	}
	setText(v.Gates, gates)
	v.refreshConsole()
}

// refreshConsole redraws the console when its tab is shown (switching to it redraws it):
// a hidden console costs nothing while a run streams lines into it.
func (v *StudiesView) refreshConsole() { refreshShownConsole(v.Tabs, v.Console, v.Follow) }

// refreshShownConsole redraws a console list when its tab ("Console") is the one shown, and
// follows its end when follow is checked.
func refreshShownConsole(tabs *container.AppTabs, console *widget.List, follow *widget.Check) {
	if tabs.Selected() == nil || tabs.Selected().Text != "Console" {
		return
	}
	console.Refresh()
	if follow.Checked {
		console.ScrollToBottom()
	}
}

func eventLine(e study.Event) string {
	if e.Kind == study.EventDone {
		return e.At.Format("15:04:05") + " done"
	}
	text := study.EventText(e) // the CLI's wording: one renderer for both
	if text == "" {
		return ""
	}
	return e.At.Format("15:04:05") + " " + text
}

// liveDepthChart is the tg-by-depth chart from the rows seen so far in this run.
func liveDepthChart(rows map[string][]plots.DepthPoint, meta plots.Meta) plots.Chart {
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	meta.Model = "live, this run"
	c := &plots.DepthChart{Metric: "tg", Meta: meta}
	for _, k := range keys {
		pts := append([]plots.DepthPoint(nil), rows[k]...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].Depth < pts[j].Depth })
		c.Series = append(c.Series, plots.DepthSeries{Label: k, Points: dedupeDepths(pts)})
	}
	return c
}

// dedupeDepths keeps the last point per depth (a repeated leg measures a depth again).
func dedupeDepths(pts []plots.DepthPoint) []plots.DepthPoint {
	var out []plots.DepthPoint
	for _, p := range pts {
		if n := len(out); n > 0 && out[n-1].Depth == p.Depth {
			out[n-1] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

func (v *StudiesView) confirmAbort() {
	dialog.ShowConfirm("Abort the study?", "The running leg is stopped and recorded as stopped_by_user; its rows never count. Run resumes at the first unfinished leg.",
		func(ok bool) {
			if ok {
				v.Abort()
			}
		}, v.win)
}

// Abort stops the running study.
func (v *StudiesView) Abort() {
	v.mu.Lock()
	c := v.cancel
	v.mu.Unlock()
	if c != nil {
		c()
	}
}

func (v *StudiesView) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}

// ---- tables ----

type column struct {
	title string
	width float32
}

func newTable(cols []column, rows func() int, cell func(r, c int) string) *widget.Table {
	t := widget.NewTableWithHeaders(
		func() (int, int) { return rows(), len(cols) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(cell(id.Row, id.Col)) })
	t.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	t.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 {
			l.SetText(cols[id.Col].title)
			l.TextStyle.Bold = true
		} else {
			l.SetText(fmt.Sprint(id.Row + 1))
		}
	}
	for i, c := range cols {
		t.SetColumnWidth(i, c.width)
	}
	return t
}

func (v *StudiesView) scoreRows() int {
	if v.report == nil {
		return 0
	}
	return len(v.report.Scoreboard)
}

func (v *StudiesView) scoreCell(r, c int) string {
	s := v.report.Scoreboard[r]
	switch c {
	case 0:
		return s.Prediction
	case 1:
		return s.Text
	case 2:
		return s.Expected
	case 3:
		w := s.Word
		if len(s.Deviations) > 0 {
			w += " (DEVIATION recorded)"
		}
		return w
	case 4:
		if s.Human != nil {
			return s.Human.Outcome
		}
		return ""
	}
	return ""
}

func (v *StudiesView) resultRows() int {
	if v.report == nil {
		return 0
	}
	return len(v.report.Results)
}

func (v *StudiesView) resultCell(r, c int) string {
	x := v.report.Results[r]
	switch c {
	case 0:
		return x.Model
	case 1:
		return x.Test
	case 2:
		return fmt.Sprint(x.Depth)
	case 3:
		return fmt.Sprintf("%.2f", x.Mean)
	case 4:
		return fmt.Sprintf("%.2f", x.SD)
	case 5:
		return fmt.Sprintf("%.1f%%", x.CV*100)
	case 6:
		return fmt.Sprint(x.Reps)
	case 7:
		return x.Leg
	case 8:
		return x.Source
	}
	return ""
}

func (v *StudiesView) legRows() int {
	if v.report == nil {
		return 0
	}
	return len(v.report.Legs)
}

func (v *StudiesView) legCell(r, c int) string {
	l := v.report.Legs[r]
	switch c {
	case 0:
		return l.Label
	case 1:
		return l.State
	case 2:
		return l.Class
	case 3:
		return fmt.Sprint(l.Rows)
	case 4:
		return fmt.Sprint(l.Results)
	case 5:
		if l.Duration > 0 {
			return l.Duration.Round(time.Millisecond).String()
		}
		return ""
	case 6:
		return l.Reason
	}
	return ""
}

// close stops a running study and the chart worker when the window closes.
func (v *StudiesView) close() {
	if v.Cap != nil {
		v.Cap.close()
	}
	v.Abort()
	v.text.Stop()
	v.slowText.Stop()
	v.Chart.Close()
}

// Report is the study shown (nil before the first load).
func (v *StudiesView) Report() *study.Report { return v.report }

// ConsoleLines is a copy of the console.
func (v *StudiesView) ConsoleLines() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.console...)
}

// RecordHuman records a human verdict for the shown study and reloads it.
func (v *StudiesView) RecordHuman(h study.HumanVerdict, done func(error)) {
	id := v.selected
	go func() {
		err := v.svc.HumanVerdict(context.Background(), id, h)
		onUI(func() {
			done(err)
			if err == nil {
				v.Select(id)
			}
		})
	}()
}

// RecordFinding adds a finding to the shown study and reloads it.
func (v *StudiesView) RecordFinding(f study.FindingRequest, done func(string, error)) {
	id := v.selected
	go func() {
		label, err := v.svc.AddFinding(context.Background(), id, f)
		onUI(func() {
			done(label, err)
			if err == nil {
				v.Select(id)
			}
		})
	}()
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (v *StudiesView) humanDialog() {
	if v.report == nil || len(v.report.Scoreboard) == 0 {
		dialog.ShowInformation("Human verdict", "This study has no prediction to judge.", v.win)
		return
	}
	humanVerdictDialog(v.win, v.report.Scoreboard, v.RecordHuman)
}

func (v *StudiesView) findingDialog() {
	addFindingDialog(v.win, v.RecordFinding)
}

// humanVerdictDialog asks for a human verdict (PASS, FAIL or NOTE) on one of the predictions,
// with its rationale, and records it; an error is shown in a dialog.
func humanVerdictDialog(win fyne.Window, board []study.ReportScore, record func(study.HumanVerdict, func(error))) {
	var ids []string
	for _, s := range board {
		ids = append(ids, s.Prediction)
	}
	pred := widget.NewSelect(ids, nil)
	pred.SetSelected(ids[0])
	outcome := widget.NewRadioGroup([]string{"PASS", "FAIL", "NOTE"}, nil)
	outcome.SetSelected("PASS")
	why := widget.NewMultiLineEntry()
	why.SetPlaceHolder("the rationale: what the evidence shows and why this verdict")
	dialog.ShowForm("Human verdict", "Record", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Prediction", pred), widget.NewFormItem("Verdict", outcome), widget.NewFormItem("Rationale", why),
	}, func(ok bool) {
		if !ok {
			return
		}
		record(study.HumanVerdict{Prediction: pred.Selected, Outcome: outcome.Selected, Rationale: why.Text}, func(err error) {
			if err != nil {
				dialog.ShowError(err, win)
			}
		})
	}, win)
}

// addFindingDialog asks for a finding with the legs and predictions it rests on, and records
// it (numbered F1, F2, …); the number or the error is shown in a dialog.
func addFindingDialog(win fyne.Window, record func(study.FindingRequest, func(string, error))) {
	text := widget.NewMultiLineEntry()
	text.SetPlaceHolder("what was found")
	legs := widget.NewEntry()
	legs.SetPlaceHolder("legs it rests on, e.g. tiny/d128, moe/d0")
	preds := widget.NewEntry()
	preds.SetPlaceHolder("predictions it bears on, e.g. P1, P3")
	dialog.ShowForm("Add a finding", "Record", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Finding", text), widget.NewFormItem("Legs", legs), widget.NewFormItem("Predictions", preds),
	}, func(ok bool) {
		if !ok {
			return
		}
		record(study.FindingRequest{Text: text.Text, Legs: splitList(legs.Text), Predictions: splitList(preds.Text)}, func(label string, err error) {
			if err != nil {
				dialog.ShowError(err, win)
				return
			}
			dialog.ShowInformation("Finding recorded", label+" is in the notebook's journal.", win)
		})
	}, win)
}

// ExportReceipt writes the shown study's receipt bundle into a new folder under parent.
func (v *StudiesView) ExportReceipt(parent string, done func(string, error)) {
	id := v.selected
	name := fmt.Sprintf("study-%d-receipt", id)
	msg, bar, tgz, ops := v.ProgressMsg, v.ExportBar, v.ExportTarGz.Checked, v.exportOps
	switch {
	case v.capShown && v.Cap.study != nil:
		name = fmt.Sprintf("%s-%d-receipt", slugify(v.Cap.study.Report.Study.Name), id)
		msg, bar, tgz, ops = v.Cap.ProgressMsg, v.Cap.ExportBar, v.Cap.ExportTarGz.Checked, v.Cap.exportOps
	case v.report != nil:
		name = fmt.Sprintf("%s-%d-receipt", slugify(v.report.Study.Name), id)
	}
	out := filepath.Join(parent, name)
	if tgz {
		out += ".tar.gz"
	}
	msg.SetText("writing the receipt to " + out + "…")
	bar.Show()
	bar.Start()
	ctx, end := ops.start()
	go func() {
		x, err := v.svc.Receipt(ctx, id, out)
		summary := x.Summary
		md, imgs := receiptPreview(x.Files)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("the export was cancelled: nothing was written (%w)", err)
		}
		onUI(func() {
			end()
			bar.Stop()
			bar.Hide()
			if err == nil && v.capShown {
				v.Cap.ProgressMsg.SetText(summary)
				v.Cap.showReceipt(md, imgs)
			} else if err == nil {
				v.ProgressMsg.SetText(summary)
				v.showReceipt(md, imgs)
			} else {
				msg.SetText("the receipt was not written: " + err.Error())
			}
			done(summary, err)
		})
	}()
}

// receiptPreview is an exported bundle's receipt.md and chart PNGs (by name), for the preview.
func receiptPreview(files map[string][]byte) ([]byte, []fyne.Resource) {
	var imgs []fyne.Resource
	for name, b := range files {
		if strings.HasPrefix(name, "plots/") && strings.HasSuffix(name, ".png") {
			imgs = append(imgs, fyne.NewStaticResource(filepath.Base(name), b))
		}
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Name() < imgs[j].Name() })
	return files["receipt.md"], imgs
}

func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

func (v *StudiesView) receiptDialog() {
	if v.selected == 0 {
		return
	}
	pickFolder(prefLastReceipts, v.win, func(path string) {
		v.ExportReceipt(path, func(summary string, err error) {
			if err != nil {
				dialog.ShowError(err, v.win)
				return
			}
			dialog.ShowInformation("Receipt written", summary, v.win)
		})
	})
}

// showReceipt previews an exported receipt: its charts, then receipt.md rendered.
func (v *StudiesView) showReceipt(md []byte, imgs []fyne.Resource) {
	fillReceipt(v.ReceiptImgs, v.Receipt, md, imgs)
	v.Tabs.SelectIndex(len(v.Tabs.Items) - 1)
}

// appendConsole adds line ("" adds nothing), keeping the last maxConsoleLines lines.
func appendConsole(lines []string, line string) []string {
	if line == "" {
		return lines
	}
	lines = append(lines, line)
	if over := len(lines) - maxConsoleLines; over > 0 {
		lines = append([]string(nil), lines[over:]...)
	}
	return lines
}

// newConsoleList is a monospace list of *lines, read under mu (the run goroutine appends).
func newConsoleList(mu *sync.Mutex, lines *[]string) *widget.List {
	return widget.NewList(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(*lines)
	}, func() fyne.CanvasObject {
		l := widget.NewLabel("")
		l.TextStyle = fyne.TextStyle{Monospace: true}
		return l
	}, func(i widget.ListItemID, o fyne.CanvasObject) {
		mu.Lock()
		line := ""
		if i < len(*lines) {
			line = (*lines)[i]
		}
		mu.Unlock()
		o.(*widget.Label).SetText(line)
	})
}

// fillReceipt shows a receipt's charts, then its receipt.md rendered.
func fillReceipt(box *fyne.Container, text *widget.RichText, md []byte, imgs []fyne.Resource) {
	box.RemoveAll()
	for _, r := range imgs {
		img := canvas.NewImageFromResource(r)
		img.FillMode = canvas.ImageFillContain
		img.ScaleMode = canvas.ImageScaleFastest
		img.SetMinSize(fyne.NewSize(760, 475))
		box.Add(img)
	}
	text.ParseMarkdown(previewMarkdown(string(md)))
}

// previewMarkdown prepares receipt.md for Fyne's RichText, which renders no tables: each
// table becomes a fenced block of aligned columns (inline code marks and escapes removed), so
// the preview reads as the receipt does. Everything else is left as it is.
func previewMarkdown(md string) string {
	lines := strings.Split(md, "\n")
	var out []string
	fenced := false
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(strings.TrimSpace(line), "|") {
			// A paragraph's next line joins it with a space, as Markdown renderers show a soft
			// line break (RichText would glue the two lines together).
			if n := len(out); !fenced && n > 0 && isProse(line) && isProse(out[n-1]) {
				out[n-1] += " " + strings.TrimSpace(line)
			} else {
				out = append(out, line)
			}
			i++
			continue
		}
		var rows [][]string
		sep := -1
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			cells := splitTableRow(strings.TrimSpace(lines[i]))
			if isSeparatorRow(cells) {
				sep = len(rows)
				continue
			}
			rows = append(rows, cells)
		}
		widths := map[int]int{}
		for _, r := range rows {
			for j, c := range r {
				widths[j] = max(widths[j], utf8.RuneCountInString(c))
			}
		}
		out = append(out, "```")
		for k, r := range rows {
			if k == sep {
				var dash []string
				for j := range r {
					dash = append(dash, strings.Repeat("-", widths[j]))
				}
				out = append(out, strings.Join(dash, "  "))
			}
			padded := make([]string, len(r))
			for j, c := range r {
				padded[j] = c + strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			}
			out = append(out, strings.TrimRight(strings.Join(padded, "  "), " "))
		}
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// isProse says whether a Markdown line continues a paragraph: not blank, not a heading, list
// item, quote, table row, fence or indented code.
func isProse(line string) bool {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
		return false
	}
	for _, p := range []string{"#", "- ", "* ", "+ ", ">", "|", "```", "---", "==="} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	if i := strings.IndexByte(t, '.'); i > 0 && strings.Trim(t[:i], "0123456789") == "" {
		return false // "1. an ordered item"
	}
	return true
}

// splitTableRow splits "| a | b \| c |" into its cells, unescaped, without code marks.
func splitTableRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		case line[i] == '`':
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func isSeparatorRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cells) > 0
}

// gateCounts are the run's gate lights: rows measured, rows a CV gate flagged, legs that
// crashed (with the canary's verdict), legs that ended otherwise than ok.
type gateCounts struct {
	rows, flagged, legsOK, legsBad int
	crashes                        []string
	canary                         string
	// backends counts the rows by the backend evidence llama-bench printed with them
	// (backends, GPU layers offloaded, GPU): rows of one study that disagree mean the build or
	// the device changed under it.
	backends map[string]int
}

func (g *gateCounts) observe(e study.Event) {
	switch e.Kind {
	case study.EventSample:
		g.rows++
		if sm := e.Sample; sm != nil {
			r := sm.Result
			key := r.Backends
			if key == "" {
				key = "backend not reported"
			}
			key += fmt.Sprintf(", ngl %d", r.NGPULayers)
			if r.GPUInfo != "" {
				key += ", " + r.GPUInfo
			}
			if g.backends == nil {
				g.backends = map[string]int{}
			}
			g.backends[key]++
		}
	case study.EventFlagged:
		g.flagged++
	case study.EventLegFinished:
		if o := e.Outcome; o != nil {
			if o.Class == "ok" {
				g.legsOK++
			} else {
				g.legsBad++
				if o.Class == "crashed" || o.Class == "device_lost" || o.Class == "oom" {
					g.crashes = append(g.crashes, e.Leg+" "+o.Class)
				}
			}
		}
	case study.EventCanary:
		if c := e.Canary; c != nil {
			g.canary = "PASS"
			if !c.Pass {
				g.canary = "FAIL: " + c.Reason
			}
		}
	}
}

// Live is the gate lights while a run goes on: each light and only what is wrong, so the line
// changes when a gate does, not with every row (each change repaints the window). String,
// with the counts, is shown when the run ends.
func (g gateCounts) Live() string {
	s := "gates: CV ●ok"
	if g.flagged > 0 {
		s = fmt.Sprintf("gates: CV ●STOP (%d row(s) flagged)", g.flagged)
	}
	if g.legsBad == 0 {
		s += " · legs ●ok"
	} else {
		s += fmt.Sprintf(" · legs: %d not ok", g.legsBad)
	}
	if len(g.crashes) > 0 {
		s += " · crashes: " + strings.Join(g.crashes, ", ")
	}
	if g.canary != "" {
		s += " · canary " + g.canary
	}
	switch len(g.backends) {
	case 0:
	case 1:
		for k := range g.backends {
			s += " · backend evidence ●ok " + k
		}
	default:
		s += " · backend evidence ●MIXED (rows disagree: check the build and device)"
	}
	return s
}

func (g gateCounts) String() string {
	light := func(ok bool) string {
		if ok {
			return "●ok"
		}
		return "●STOP"
	}
	s := fmt.Sprintf("gates: CV %s (%d of %d rows flagged) · legs %d ok, %d not ok", light(g.flagged == 0), g.flagged, g.rows, g.legsOK, g.legsBad)
	if len(g.crashes) > 0 {
		s += " · crashes: " + strings.Join(g.crashes, ", ")
	}
	if g.canary != "" {
		s += " · canary " + g.canary
	}
	if len(g.backends) > 0 {
		keys := make([]string, 0, len(g.backends))
		for k := range g.backends {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s ×%d", k, g.backends[k])
		}
		if len(keys) == 1 {
			s += " · backend evidence ●ok " + parts[0] + " rows"
		} else {
			s += " · backend evidence ●MIXED (rows disagree: check the build and device): " + strings.Join(parts, "; ")
		}
	}
	return s
}

// showOneAtATime says why a second study does not start while one runs.
func showOneAtATime(win fyne.Window) {
	dialog.ShowInformation("Another study is running", "One study runs at a time (they would compete for the machine). Abort it or wait for it to finish, then run this one.", win)
}
