package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/capacity"
	"sparkbench/plots"
)

// CapacityEstimator estimates a capacity plan's duration from the notebook's history of its
// models; a CapacityService that implements it gives the capacity form its estimated duration.
type CapacityEstimator interface {
	EstimateCapacity(ctx context.Context, p *capacity.Plan) (capacity.Estimate, error)
}

// CapacityService registers, shows and runs capacity and concurrency studies: cmd wires it to
// the notebook and llama-server (the same calls as `sparkbench capacity register|show|run`),
// tests to fakes. RunCapacity blocks until the run ends and calls onEvent and onLine
// synchronously from its own goroutine; a complete run of a study with KV arms ends with their
// KV cache quality check (as `capacity run` does), its lines to onLine, and a complete study
// whose arms lack the check gets the check alone.
type CapacityService interface {
	RegisterCapacity(ctx context.Context, p *capacity.Plan) (capacity.Registration, error)
	ShowCapacity(ctx context.Context, id int64) (*CapacityStudy, error)
	RunCapacity(ctx context.Context, id int64, onEvent func(capacity.RunEvent), onLine func(string)) (*capacity.RunSummary, error)
}

// CapacityStudy is a capacity or concurrency study as the notebook records it: the report of
// `capacity show`, its registered plan, and the assembled result's charts (slots first, then
// one envelope per candidate; none before a trusted assembled result).
type CapacityStudy struct {
	Report *capacity.Report
	Plan   *capacity.Plan
	Charts []plots.Chart
	// ServingCharts are a serving plan's open-loop charts, as its receipt draws them: latency
	// against offered rate, goodput against rate, and the search trace when it searched.
	ServingCharts []plots.Chart
}

// capRow is one row of the envelope table: an assembled cell, or — while a run goes on — one
// pass of a cell under that pass's load-SLO gates.
type capRow struct {
	Candidate, Pass string
	Slots, Clients  int
	Rate            *float64
	TTFT, E2E       *float64
	RSS             float64
	Verdict         string
	Failures        []string
}

// CapacityPanel shows one capacity or concurrency study in the Studies section: its envelope
// (every cell with PASS/FAIL and the failure codes), the selected points, the verdicts, and —
// while it runs — progress, a live console, the slots chart and the envelope grid filling in.
type CapacityPanel struct {
	Object fyne.CanvasObject

	Title, Status, Selected *widget.Label
	KV                      *widget.Label // the KV arms' KL divergence beside their speed change (hidden: none)
	RunButton, AbortButton  *widget.Button
	RunOn                   *widget.Select // this machine, or a bench host for the servers (capacity_host.go)
	receiptPane                            // Export receipt…, as .tar.gz, its progress and Cancel export; the Receipt tab
	Progress                *widget.ProgressBar
	ProgressMsg, Gates      *widget.Label
	Envelope                *widget.Table
	Verdicts                *widget.Table
	Chart, Grid             *ChartView
	Serving                 *servingTab // in Tabs only while a serving study is shown
	Console                 *widget.List
	Follow                  *widget.Check
	CopyConsole             *widget.Button
	Tabs                    *container.AppTabs

	// Updated receives after each background load or run has been shown (tests wait on it).
	Updated chan struct{}

	app     fyne.App
	win     fyne.Window
	svc     CapacityService
	receipt func(id int64)    // Export receipt… (the Studies section's)
	busy    func() bool       // another run is going on in the window
	meta    func() plots.Meta // the build and machine for chart titles (from the doctor)

	panelLoad
	kvOnly bool // the run is the KV cache check alone (every cell was measured before)
	study  *CapacityStudy
	rows   []capRow

	runSession // the running study; its mu guards the live state below
	console    []string
	live       *liveCapacity
	text       *Throttle
}

func newCapacityPanel(a fyne.App, win fyne.Window, svc CapacityService, receipt func(int64), busy func() bool) *CapacityPanel {
	v := &CapacityPanel{app: a, win: win, svc: svc, receipt: receipt, busy: busy, Updated: make(chan struct{}, 32),
		Title:       widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		Status:      widget.NewLabel(""),
		Selected:    widget.NewLabel(""),
		KV:          widget.NewLabel(""),
		Progress:    widget.NewProgressBar(),
		ProgressMsg: widget.NewLabel(""),
		Gates:       widget.NewLabel("gates: no run yet"),
		text:        NewThrottle(capTextInterval)}
	for _, l := range []*widget.Label{v.Status, v.Selected, v.KV, v.ProgressMsg, v.Gates} {
		l.Wrapping = fyne.TextWrapWord
	}
	v.RunButton = widget.NewButton("Run", v.Run)
	v.newRunOn()
	v.AbortButton = widget.NewButton("Abort", v.confirmAbort)
	v.receiptPane = newReceiptPane(func() {
		if v.receipt != nil && v.id != 0 {
			v.receipt(v.id)
		}
	})
	v.RunButton.Disable()
	v.AbortButton.Disable()
	v.Envelope = newItemTable(envelopeCols, func() []capRow { return v.rows })
	v.Verdicts = newTable([]column{{"Prediction", 90}, {"Outcome", 110}, {"Observed", 110}, {"Detail", 520}},
		func() int { return v.verdictRows() }, func(r, c int) string { return v.verdictCell(r, c) })
	var consoleTab fyne.CanvasObject
	v.Console, v.Follow, v.CopyConsole, consoleTab = newConsoleTab(a, &v.mu, &v.console)
	v.Chart = NewChartView(760, 420)
	v.Grid = NewChartView(760, 420)
	v.Serving = newServingTab()
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Envelope", v.Envelope),
		container.NewTabItem("Grid", v.Grid.Object),
		container.NewTabItem("Slots", v.Chart.Object),
		container.NewTabItem("Verdicts", v.Verdicts),
		container.NewTabItem("Console", consoleTab),
		v.receiptTab(),
	)
	v.Tabs.OnSelected = func(*container.TabItem) { v.refreshConsole() }
	v.Progress.Hide()
	v.KV.Hide()
	head := container.NewVBox(v.Title, container.NewHBox(append([]fyne.CanvasObject{v.RunButton, v.RunOn, v.AbortButton}, v.exportControls()...)...),
		v.Status, v.Selected, v.KV, v.Progress, v.ExportBar, v.ProgressMsg, v.Gates)
	v.Object = container.NewBorder(head, nil, nil, nil, v.Tabs)
	return v
}

func (v *CapacityPanel) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}

// Study is the study shown (nil before the first load).
func (v *CapacityPanel) Study() *CapacityStudy { return v.study }

// Rows is a copy of the envelope table's rows.
func (v *CapacityPanel) Rows() []capRow { return append([]capRow(nil), v.rows...) }

// ConsoleLines is a copy of the console.
func (v *CapacityPanel) ConsoleLines() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.console...)
}

// Show loads study id (the latest call wins when loads finish out of order).
func (v *CapacityPanel) Show(id int64) {
	if v.id != id {
		v.mu.Lock()
		if v.running != id {
			v.console = nil
		}
		v.mu.Unlock()
		v.Console.Refresh()
		v.study, v.rows = nil, nil
		v.Envelope.Refresh()
		v.Verdicts.Refresh()
		v.loadHosts()
	}
	if v.svc == nil {
		v.unavailable(id, v.updateButtons, v.Status, v.signal, "capacity studies are unavailable here (no llama-server service): use `sparkbench capacity show "+fmt.Sprint(id)+"`")
		return
	}
	showStudy(&v.panelLoad, id, v.win, v.Status, v.updateButtons, v.signal, v.RunButton, v.Run,
		func(ctx context.Context) (*CapacityStudy, error) { return v.svc.ShowCapacity(ctx, id) }, v.show)
}

func (v *CapacityPanel) show(cs *CapacityStudy) {
	v.study = cs
	r := cs.Report
	s := r.Study
	v.Title.SetText(fmt.Sprintf("%s (study %d, %s)", s.Name, s.ID, s.Kind))
	status := fmt.Sprintf("%s · %d server lifetime(s) recorded · plan sha256 %s", s.Status, len(r.Legs), short(s.PlanSHA256))
	if s.LastHalt != "" {
		status += " · last halt: " + s.LastHalt
	}
	if r.Run != nil && !r.Trusted {
		status += " · NOT TRUSTED: " + r.Problem
	}
	v.Status.SetText(status)
	var sel []string
	for _, p := range r.Selected {
		if p.Slots == nil || p.Clients == nil {
			sel = append(sel, fmt.Sprintf("%s: nothing selected (%s)", p.Candidate, p.Note))
			continue
		}
		line := fmt.Sprintf("%s: selected P%d/C%d", p.Candidate, *p.Slots, *p.Clients)
		if p.GenerationRate != nil {
			line += fmt.Sprintf(" at %.2f tok/s", *p.GenerationRate)
		}
		if p.Gain != nil {
			line += fmt.Sprintf(" (%+.1f%% vs P%d/C%d)", *p.Gain*100, p.BaseSlots, p.BaseClients)
		}
		sel = append(sel, line)
	}
	if len(sel) == 0 {
		sel = append(sel, "no assembled result yet: Run measures every cell, then assembles and selects")
	}
	v.Selected.SetText(strings.Join(sel, "\n"))
	v.KV.SetText(kvText(r))
	setVisible(v.KV, v.KV.Text != "")
	if !v.Running() {
		v.rows = assembledRows(r)
		v.Envelope.Refresh()
		if len(cs.Charts) > 0 {
			v.Chart.Show(withMeta(cs.Charts[0], v.chartMeta()))
		}
		if len(cs.Charts) > 1 {
			v.Grid.Show(withMeta(cs.Charts[1], v.chartMeta()))
		}
	}
	v.showServing(cs)
	switch {
	case v.kvPending():
		v.RunButton.SetText("Run the KV cache check (the cells are kept)")
	case s.Status == capacity.StatusComplete:
		v.RunButton.SetText("Run again (nothing left to run)")
	default:
		v.RunButton.SetText("Run")
	}
	v.Verdicts.Refresh()
	v.updateButtons()
}

func assembledRows(r *capacity.Report) []capRow {
	var rows []capRow
	for _, e := range r.Envelope {
		for _, c := range e.Cells {
			verdict := "FAIL"
			if c.Passed {
				verdict = "PASS"
			}
			if e.Selected != nil && e.Selected.Slots == c.Slots && e.Selected.Clients == c.Clients {
				verdict += " ★"
			}
			rows = append(rows, capRow{Candidate: e.Candidate, Pass: "both", Slots: c.Slots, Clients: c.Clients,
				Rate: c.GenerationRate, TTFT: c.TTFTMsP95, E2E: c.E2EMsP95, RSS: c.PeakRSSMiB, Verdict: verdict, Failures: c.Failures})
		}
	}
	return rows
}

func fmtPtr(f *float64, prec int) string {
	if f == nil {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, *f)
}

var envelopeCols = []col[capRow]{
	{"Candidate", 130, func(x capRow) string { return x.Candidate }},
	{"Pass", 80, func(x capRow) string { return x.Pass }},
	{"P", 40, func(x capRow) string { return fmt.Sprint(x.Slots) }},
	{"C", 40, func(x capRow) string { return fmt.Sprint(x.Clients) }},
	{"tok/s", 90, func(x capRow) string { return fmtPtr(x.Rate, 2) }},
	{"TTFT p95 ms", 100, func(x capRow) string { return fmtPtr(x.TTFT, 1) }},
	{"E2E p95 ms", 100, func(x capRow) string { return fmtPtr(x.E2E, 1) }},
	{"Peak RSS MiB", 100, func(x capRow) string {
		if x.RSS == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f", x.RSS)
	}},
	{"Verdict", 90, func(x capRow) string { return x.Verdict }},
	{"Failures", 420, func(x capRow) string { return strings.Join(x.Failures, ", ") }},
}

func (v *CapacityPanel) envelopeCell(r, c int) string { return cellText(envelopeCols, v.rows, r, c) }

func (v *CapacityPanel) verdictRows() int {
	if v.study == nil {
		return 0
	}
	return len(v.study.Report.Verdicts) + len(v.study.Report.Pending)
}

func (v *CapacityPanel) verdictCell(r, c int) string {
	if v.study == nil {
		return ""
	}
	rep := v.study.Report
	if r < len(rep.Verdicts) {
		x := rep.Verdicts[r]
		return [...]string{x.Prediction, x.Outcome, fmtPtr(x.Observed, 3), x.Detail}[c]
	}
	if r -= len(rep.Verdicts); r < len(rep.Pending) {
		return [...]string{rep.Pending[r], "PENDING", "—", "no verdict journaled yet: the run assembles and judges it"}[c]
	}
	return ""
}

func (v *CapacityPanel) updateButtons() {
	v.mu.Lock()
	running := v.running != 0
	v.mu.Unlock()
	complete := v.study != nil && v.study.Report.Study.Status == capacity.StatusComplete
	setEnabled(v.RunButton, v.id != 0 && v.svc != nil && !running && v.study != nil && (!complete || v.kvPending()))
	setEnabled(v.AbortButton, running)
	setEnabled(v.ReceiptButton, complete && v.receipt != nil)
}

// Run runs (or re-runs, when the last run halted) the shown study in the background.
func (v *CapacityPanel) Run() {
	id := v.id
	if id == 0 || v.svc == nil || v.study == nil {
		return
	}
	if v.busy != nil && v.busy() {
		showOneAtATime(v.win)
		return
	}
	ctx, cancel, ok := v.claim(id, func() {
		v.console = nil
		v.live = newLiveCapacity(v.study.Plan)
	})
	if !ok {
		return
	}
	v.kvOnly = v.kvPending()
	start := "starting: the KV cache check (every cell was measured before)…"
	if !v.kvOnly {
		start = "starting: verifying the model and prompt-plan files…"
		v.rows = nil
		v.Envelope.Refresh()
		v.Gates.SetText("gates: nothing measured yet")
	}
	v.updateButtons()
	d := runDisplay{v.app, v.Progress, v.ProgressMsg, v.Tabs}
	host := v.RunOn.Selected
	v.launch(d, cancel, v.study.Report.Study.Name, start, func() (func() string, string) {
		sum, err := v.runOn(ctx, id, host)
		headline := ""
		if cs, serr := v.svc.ShowCapacity(ctx, id); err == nil && serr == nil {
			headline = capacity.Headline(cs.Report)
		}
		return func() string { return v.runOutcome(sum, err) }, headline
	}, func() { v.Show(id) })
}

// runOutcome says how a run ended (and shows an error dialog when nothing was run), and shows
// the run's last gate lights. UI goroutine.
func (v *CapacityPanel) runOutcome(sum *capacity.RunSummary, err error) string {
	v.mu.Lock()
	if v.live != nil && !v.kvOnly {
		if gates := v.live.gates(); gates != "" {
			v.Gates.SetText(gates)
		}
	}
	v.mu.Unlock()
	if msg, ok := kvOutcome(v.kvOnly, err); ok {
		return msg
	}
	switch {
	case errors.Is(err, capacity.ErrRunStopped) || errors.Is(err, context.Canceled):
		return "stopped by you: the running server lifetime is recorded as halted; Run resumes the study at its first unfinished server lifetime (the finished ones are kept)."
	case err != nil && (sum == nil || capacity.IsRefusal(err)):
		// Refused before anything ran (no llama-server, a changed model file, a bad
		// folder): the notebook is as it was.
		dialog.ShowError(fmt.Errorf("the study was not run: %w. Nothing was recorded; fix it and run again", err), v.win)
		return "not run: " + err.Error()
	}
	rawFiles := ""
	if sum != nil && sum.RunDir != "" {
		rawFiles = " (raw files in " + sum.RunDir + ")"
	}
	if _, ok := capacity.IsIncomplete(err); ok {
		// The run is over, but some lifetimes have no results: Run re-runs only those.
		return err.Error() + ". Run runs those server lifetimes again and keeps the ones that have results" + rawFiles
	}
	if err != nil {
		return "halted: " + err.Error() + rawFiles
	}
	return fmt.Sprintf("finished: %s, %d server lifetime(s), %d verdict(s); run folder %s", sum.Status, sum.Legs, len(sum.Verdicts), sum.RunDir)
}

func (v *CapacityPanel) chartMeta() plots.Meta {
	if v.meta == nil {
		return plots.Meta{}
	}
	return v.meta()
}

// withMeta names the build and machine in a capacity chart's title where it names none.
func withMeta(c plots.Chart, m plots.Meta) plots.Chart {
	set := func(x *plots.Meta) {
		if x.Build == "" {
			x.Build = m.Build
		}
		if x.Machine == "" {
			x.Machine = m.Machine
		}
	}
	switch x := c.(type) {
	case plots.EnvelopeChart:
		set(&x.Meta)
		return x
	case plots.SlotsChart:
		set(&x.Meta)
		return x
	case plots.LatencyChart:
		set(&x.Meta)
		return x
	}
	return c
}

func (v *CapacityPanel) confirmAbort() {
	dialog.ShowConfirm("Abort the study?", "Requests in flight are cancelled and the server is stopped; the server lifetime is recorded and the study halted. Nothing is assembled. Run resumes at the first unfinished server lifetime: the finished ones are kept.",
		func(ok bool) {
			if ok {
				v.Abort()
			}
		}, v.win)
}

func (v *CapacityPanel) close() {
	v.Abort()
	v.text.Stop()
	v.Chart.Close()
	v.Grid.Close()
	v.Serving.close()
}

// onEvent runs on the run's goroutine: it records and schedules a throttled update.
func (v *CapacityPanel) onEvent(ev capacity.RunEvent) {
	line := capacity.ProgressLine(ev)
	if ev.Type == capacity.ServerLine {
		line = fmt.Sprintf("%s │ %s", ev.Lifetime, ev.Line)
		if ev.Dropped > 0 {
			line += fmt.Sprintf("   [%d earlier log line(s) not shown: the console fell behind; the server log keeps them]", ev.Dropped)
		}
	}
	var slots, grid plots.Chart
	v.mu.Lock()
	v.console = appendConsole(v.console, line)
	lv := v.live
	changed := lv != nil && lv.observe(ev)
	if changed {
		slots, grid = lv.slotsChart(), lv.gridChart()
	}
	v.mu.Unlock()
	if slots != nil {
		v.Chart.Show(withMeta(slots, v.chartMeta()))
	}
	if grid != nil {
		v.Grid.Show(withMeta(grid, v.chartMeta()))
	}
	p := ev.Progress
	v.text.Submit(func() {
		if !v.Running() {
			return // the run has ended: its final message stands
		}
		if p.CellsTotal > 0 {
			setProgress(v.Progress, float64(p.CellsDone)/float64(p.CellsTotal))
		}
		eta := "ETA unknown"
		if p.ETA >= 0 && p.CellsDone > 0 {
			eta = "ETA " + etaText(p.ETA)
		}
		cur := ev.Lifetime
		if ev.Clients > 0 {
			cur += fmt.Sprintf(" C=%d", ev.Clients)
		}
		setText(v.ProgressMsg, fmt.Sprintf("configurations %d/%d · cells %d/%d · %s · %s", p.LifetimesDone, p.LifetimesTotal, p.CellsDone, p.CellsTotal, cur, eta))
		if st := v.study; st != nil && st.Report != nil {
			setText(v.Status, fmt.Sprintf("running · %d/%d server lifetime(s) · plan sha256 %s", p.LifetimesDone, p.LifetimesTotal, short(st.Report.Study.PlanSHA256)))
		}
		// The gate lights and rows as they are now, not as this event left them: the throttle
		// runs the first and then only the latest update, and either may come from an event
		// that added no row, or run after later events.
		v.mu.Lock()
		if v.live != nil {
			setText(v.Gates, v.live.gates())
			if len(v.live.rows) != len(v.rows) {
				v.rows = append([]capRow(nil), v.live.rows...)
				v.Envelope.Refresh()
			}
		}
		v.mu.Unlock()
		v.refreshConsole()
	})
}

// refreshConsole redraws the console when its tab is shown (switching to it redraws it).
func (v *CapacityPanel) refreshConsole() { refreshShownConsole(v.Tabs, v.Console, v.Follow) }
