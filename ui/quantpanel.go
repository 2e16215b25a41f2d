package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/plots"
)

// QuantPanel shows one quantization ladder in the Studies section: its candidates with the
// rule's verdicts, the speed-against-KLD (Pareto) chart, and — while it runs — progress, a live
// console and the chart redrawn as each candidate's record arrives; a finished ladder hands
// its selected quant and runner-up off as a capacity plan (Make a capacity plan…).
type QuantPanel struct {
	Object fyne.CanvasObject

	Title, Status, Selected *widget.Label
	RunButton, AbortButton  *widget.Button
	HandOffButton           *widget.Button
	HandOffMsg              *widget.Label // the last hand-off: the plan's path and SHA-256, or why not
	receiptPane                           // Export receipt…, as .tar.gz, its progress and Cancel export; the Receipt tab
	Progress                *widget.ProgressBar
	ProgressMsg             *widget.Label
	Candidates              *widget.Table
	Verdicts                *widget.Table // the predictions' answers from the result shown
	Chart                   *ChartView
	Console                 *widget.List
	Follow                  *widget.Check
	CopyConsole             *widget.Button
	Tabs                    *container.AppTabs

	// Updated receives after each background load, run or hand-off has been shown (tests wait on it).
	Updated chan struct{}

	app     fyne.App
	win     fyne.Window
	svc     QuantService
	receipt func(id int64)    // Export receipt… (the Studies section's)
	busy    func() bool       // another run is going on in the window
	meta    func() plots.Meta // the build and machine for chart titles (from the doctor)

	panelLoad
	study    *QuantStudy
	rows     []quantRow
	verdicts []study.Verdict

	runSession // the running study; its mu guards the live state below
	console    []string
	live       []quant.Record    // this run's records so far
	liveRes    *quant.Result     // assembled from them
	liveLine   string            // the latest progress line
	shownChart plots.ParetoChart // the chart last submitted to Chart
	text       *Throttle
}

// quantRow is one candidate of the table: its figures and what the rule made of it.
type quantRow struct {
	cand    quant.Candidate
	figure  string // the rule's maximize figure
	verdict string
}

func newQuantPanel(a fyne.App, win fyne.Window, svc QuantService, receipt func(int64), busy func() bool) *QuantPanel {
	v := &QuantPanel{app: a, win: win, svc: svc, receipt: receipt, busy: busy, Updated: make(chan struct{}, 32),
		Title:  widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		Status: widget.NewLabel(""), Selected: widget.NewLabel(""), HandOffMsg: widget.NewLabel(""),
		Progress: widget.NewProgressBar(), ProgressMsg: widget.NewLabel(""), text: NewThrottle(capTextInterval)}
	for _, l := range []*widget.Label{v.Status, v.Selected, v.HandOffMsg, v.ProgressMsg} {
		l.Wrapping = fyne.TextWrapWord
	}
	v.RunButton = widget.NewButton("Run", v.Run)
	v.AbortButton = widget.NewButton("Abort", v.confirmAbort)
	v.HandOffButton = widget.NewButton("Make a capacity plan…", v.handOffDialog)
	v.receiptPane = newReceiptPane(func() {
		if v.receipt != nil && v.id != 0 {
			v.receipt(v.id)
		}
	})
	v.RunButton.Disable()
	v.AbortButton.Disable()
	v.HandOffButton.Disable()
	v.ReceiptButton.Disable()
	v.Candidates = newItemTable(quantCols, func() []quantRow { return v.rows })
	v.Verdicts = newItemTable(quantVerdictCols, func() []study.Verdict { return v.verdicts })
	v.Chart = NewChartView(760, 420)
	var consoleTab fyne.CanvasObject
	v.Console, v.Follow, v.CopyConsole, consoleTab = newConsoleTab(a, &v.mu, &v.console)
	v.Tabs = container.NewAppTabs(
		container.NewTabItem("Candidates", v.Candidates),
		container.NewTabItem("Pareto", v.Chart.Object),
		container.NewTabItem("Predictions", v.Verdicts),
		container.NewTabItem("Console", consoleTab),
		v.receiptTab(),
	)
	v.Tabs.OnSelected = func(*container.TabItem) { v.refreshConsole() }
	v.Progress.Hide()
	head := container.NewVBox(v.Title, container.NewHBox(append([]fyne.CanvasObject{v.RunButton, v.AbortButton, v.HandOffButton}, v.exportControls()...)...),
		v.Status, v.Selected, v.HandOffMsg, v.Progress, v.ExportBar, v.ProgressMsg)
	v.Object = container.NewBorder(head, nil, nil, nil, v.Tabs)
	return v
}

var quantCols = []col[quantRow]{
	{"Type", 90, func(x quantRow) string { return x.cand.Type }},
	{"File MiB", 80, func(x quantRow) string { return optNum(x.cand.FileBytes > 0, x.cand.FileMiB(), 1) }},
	{"Bits/weight", 80, func(x quantRow) string { return optNum(x.cand.BitsPerWeight > 0, x.cand.BitsPerWeight, 2) }},
	{"Speed t/s", 90, func(x quantRow) string { s, ok := x.cand.Speed[x.figure]; return optNum(ok, s, 2) }},
	{"Mean KLD", 90, func(x quantRow) string { return kldText(x.cand.KLD, func(k *quant.KLD) float64 { return k.Mean }, 6) }},
	{"KLD p99", 90, func(x quantRow) string { return kldText(x.cand.KLD, func(k *quant.KLD) float64 { return k.P99 }, 5) }},
	{"Same top p", 90, func(x quantRow) string {
		return kldText(x.cand.KLD, func(k *quant.KLD) float64 { return k.SameTopP }, 4)
	}},
	{"PPL ratio", 80, func(x quantRow) string {
		return kldText(x.cand.KLD, func(k *quant.KLD) float64 { return k.PPLRatio }, 4)
	}},
	{"Peak RSS MiB", 100, func(x quantRow) string { return fmtPtr(x.cand.PeakRSSMiB, 0) }},
	{"Verdict", 420, func(x quantRow) string { return x.verdict }},
}

var quantVerdictCols = []col[study.Verdict]{
	{"Prediction", 90, func(x study.Verdict) string { return x.Prediction }},
	{"Outcome", 110, func(x study.Verdict) string { return string(x.Outcome) }},
	{"Observed", 110, func(x study.Verdict) string { return fmtPtr(x.Value, 4) }},
	{"Expected", 160, func(x study.Verdict) string { return x.Expected }},
	{"Detail", 480, func(x study.Verdict) string { return orText(x.Problem, x.Detail) }},
}

// setResult shows a result's candidates and verdicts in the tables.
func (v *QuantPanel) setResult(res *quant.Result) {
	v.rows, v.verdicts = quantRows(res), nil
	if res != nil {
		v.verdicts = res.Verdicts
	}
	v.Candidates.Refresh()
	v.Verdicts.Refresh()
}

func optNum(ok bool, f float64, prec int) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, f)
}

func kldText(k *quant.KLD, f func(*quant.KLD) float64, prec int) string {
	if k == nil {
		return "—"
	}
	return fmt.Sprintf("%.*f", prec, f(k))
}

// quantRows are a result's candidates with the rule's verdict on each: selected, runner-up,
// rejected (with its codes), on the frontier or dominated, or tied-out.
func quantRows(res *quant.Result) []quantRow {
	if res == nil {
		return nil
	}
	sel := res.Selection
	var rows []quantRow
	for _, c := range res.Candidates {
		var words []string
		switch {
		case sel.Selected != "" && c.Type == sel.Selected:
			words = append(words, "SELECTED ★")
		case sel.RunnerUp != "" && c.Type == sel.RunnerUp:
			words = append(words, "runner-up")
		}
		if i := slices.IndexFunc(sel.Pending, func(p quant.Pending) bool { return p.Type == c.Type }); i >= 0 {
			words = append(words, "pending: "+pendingText(sel.Pending[i]))
		}
		if i := slices.IndexFunc(sel.Rejected, func(r quant.Rejection) bool { return r.Type == c.Type }); i >= 0 {
			words = append(words, "rejected: "+strings.Join(sel.Rejected[i].Codes, ", "))
		}
		if slices.Contains(sel.Frontier, c.Type) {
			words = append(words, "on the frontier")
		} else if by := sel.Dominated[c.Type]; len(by) > 0 {
			words = append(words, "dominated by "+strings.Join(by, ", "))
		}
		rows = append(rows, quantRow{cand: c, figure: res.Rule.Maximize, verdict: strings.Join(words, " · ")})
	}
	return rows
}

func (v *QuantPanel) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
}

// Study is the study shown (nil before the first load).
func (v *QuantPanel) Study() *QuantStudy { return v.study }

// Rows are the candidate table's types and verdicts, "TYPE: VERDICT" each.
func (v *QuantPanel) Rows() []string {
	var out []string
	for _, r := range v.rows {
		out = append(out, r.cand.Type+": "+r.verdict)
	}
	return out
}

// ConsoleLines is a copy of the console.
func (v *QuantPanel) ConsoleLines() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.console...)
}

// Show loads study id (the latest call wins when loads finish out of order).
func (v *QuantPanel) Show(id int64) {
	if v.id != id {
		v.mu.Lock()
		if v.running != id {
			v.console = nil
		}
		v.mu.Unlock()
		v.Console.Refresh()
		v.study = nil
		v.setResult(nil)
		v.HandOffMsg.SetText("")
	}
	if v.svc == nil {
		v.unavailable(id, v.updateButtons, v.Status, v.signal, fmt.Sprintf("quantization ladders are unavailable here (the notebook is not open): use `sparkbench study show %d`", id))
		return
	}
	showStudy(&v.panelLoad, id, v.win, v.Status, v.updateButtons, v.signal, v.RunButton, v.Run,
		func(ctx context.Context) (*QuantStudy, error) { return v.svc.ShowQuant(ctx, id) }, v.show)
}

func (v *QuantPanel) show(qs *QuantStudy) {
	v.study = qs
	v.Title.SetText(fmt.Sprintf("%s (study %d, quant)", qs.Name, qs.ID))
	refName := ""
	if qs.Plan != nil {
		refName = filepath.Base(qs.Plan.Reference.Path)
	}
	v.Status.SetText(fmt.Sprintf("%s · ladder of %s · plan sha256 %s", qs.Status, refName, short(qs.PlanSHA256)))
	v.Selected.SetText(selectionText(qs.Result))
	if !v.Running() {
		v.setResult(qs.Result)
		if qs.Result != nil {
			v.showChart(quant.Chart(qs.Result, v.chartMeta(qs.Plan)))
		}
	}
	if qs.Status == "complete" {
		v.RunButton.SetText("Run again (derived models are reused)")
	} else {
		v.RunButton.SetText("Run")
	}
	v.updateButtons()
}

// selectionText says what the rule chose, or that nothing is measured yet.
func selectionText(res *quant.Result) string {
	if res == nil {
		return ""
	}
	measured := slices.ContainsFunc(res.Records, func(r quant.Record) bool { return !slices.Contains(r.Incomplete, "not run") })
	switch sel := res.Selection; {
	case !measured:
		return "nothing measured yet: Run quantizes each type, measures its KLD and speed, and the rule chooses"
	case sel.Incomplete:
		return fmt.Sprintf("incomplete, no selection: %d candidate(s) pending (%s); Run measures what is missing", len(sel.Pending), sel.Missing())
	case sel.Selected == "":
		return "no candidate selected: " + sel.Why
	default:
		return fmt.Sprintf("selected %s (runner-up %s): %s", sel.Selected, orText(sel.RunnerUp, "none"), sel.Why)
	}
}

func (v *QuantPanel) chartMeta(p *quant.Plan) plots.Meta {
	var m plots.Meta
	if v.meta != nil {
		m = v.meta()
	}
	if p != nil {
		m.Model = filepath.Base(p.Reference.Path)
	}
	return m
}

func (v *QuantPanel) updateButtons() {
	running := v.Running()
	setEnabled(v.RunButton, v.id != 0 && v.svc != nil && !running && v.study != nil)
	setEnabled(v.AbortButton, running)
	why := handOffBlocked(v.study)
	setEnabled(v.HandOffButton, v.id != 0 && v.svc != nil && !running && v.study != nil && why == "")
	if v.study != nil && why != "" && (v.HandOffMsg.Text == "" || strings.HasPrefix(v.HandOffMsg.Text, handOffDisabled)) {
		v.HandOffMsg.SetText(handOffDisabled + why)
	} else if why == "" && strings.HasPrefix(v.HandOffMsg.Text, handOffDisabled) {
		v.HandOffMsg.SetText("")
	}
	setEnabled(v.ReceiptButton, v.id != 0 && v.receipt != nil && !running && v.study != nil)
}

// Run runs the shown ladder in the background (a run resumes the last one: what it measured is
// kept, its missing legs run; the derived models in the cache are reused).
func (v *QuantPanel) Run() {
	id := v.id
	if id == 0 || v.svc == nil || v.study == nil || v.study.Plan == nil {
		return
	}
	if v.busy != nil && v.busy() {
		showOneAtATime(v.win)
		return
	}
	ctx, cancel, ok := v.claim(id, func() {
		v.console, v.live, v.liveRes, v.liveLine = nil, nil, nil, ""
	})
	if !ok {
		return
	}
	plan := v.study.Plan
	v.setResult(mustAssemble(plan, nil))
	v.updateButtons()
	d := runDisplay{v.app, v.Progress, v.ProgressMsg, v.Tabs}
	v.launch(d, cancel, v.study.Name, "starting: checking the reference and the corpus…", func() (func() string, string) {
		done, err := v.svc.RunQuant(ctx, id, v.onLine, func(r quant.Record) { v.onRecord(plan, r) })
		headline := ""
		if qs, serr := v.svc.ShowQuant(ctx, id); err == nil && serr == nil {
			headline = quant.Headline(qs.Result)
		}
		return func() string { return v.runOutcome(done, err) }, headline
	}, func() { v.Show(id) })
}

// mustAssemble is the plan's result from recs (nil when the records do not fit the plan).
func mustAssemble(p *quant.Plan, recs []quant.Record) *quant.Result {
	res, err := quant.Assemble(p, "", recs)
	if err != nil {
		return nil
	}
	return res
}

// runOutcome says how a run ended (and shows an error dialog when it could not run). UI goroutine.
func (v *QuantPanel) runOutcome(done QuantRunDone, err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "stopped by you: the running leg is recorded; Run runs the ladder again (derived models already made are reused)."
	case err != nil:
		dialog.ShowError(fmt.Errorf("the ladder could not run: %w. Fix it and press Run again (derived models already made are reused)", err), v.win)
		return "could not run: " + err.Error()
	}
	msg := strings.Join(done.Lines, "\n")
	if msg == "" {
		msg = done.Status
	}
	if !done.Complete {
		return "not complete (" + done.Status + "): " + msg
	}
	return "finished: " + msg
}

// onLine runs on the run's goroutine: a progress line for the console and the progress message.
func (v *QuantPanel) onLine(line string) {
	v.mu.Lock()
	v.console = appendConsole(v.console, line)
	v.liveLine = line
	v.mu.Unlock()
	v.text.Submit(v.showLive)
}

// onRecord runs on the run's goroutine: a candidate was measured; the chart is redrawn from
// the records so far, assembled under the plan's rule as the finished ladder will be.
func (v *QuantPanel) onRecord(p *quant.Plan, r quant.Record) {
	v.mu.Lock()
	v.live = append(v.live, r)
	res := mustAssemble(p, v.live)
	if res != nil {
		v.liveRes = res
	}
	v.liveLine = fmt.Sprintf("%s measured (%d of %d candidates)", r.Type, len(v.live), len(p.Quants))
	v.console = appendConsole(v.console, v.liveLine)
	v.mu.Unlock()
	if res != nil {
		v.showChart(quant.Chart(res, v.chartMeta(p)))
	}
	v.text.Submit(v.showLive)
}

// showLive shows the run as it stands: the latest line, the candidates measured so far, the
// console if shown (the throttle runs the latest update: it reads the state, not an event).
func (v *QuantPanel) showLive() {
	v.mu.Lock()
	live := v.running != 0
	line, res, n := v.liveLine, v.liveRes, len(v.live)
	v.mu.Unlock()
	if !live {
		return // the run has ended: its final message stands
	}
	setText(v.ProgressMsg, line)
	if st := v.study; st != nil && st.Plan != nil {
		setProgress(v.Progress, float64(n)/float64(max(len(st.Plan.Quants), 1)))
	}
	if res != nil {
		v.setResult(res)
	}
	v.refreshConsole()
}

// showChart submits a Pareto chart to the chart view (any goroutine).
func (v *QuantPanel) showChart(c plots.ParetoChart) {
	v.mu.Lock()
	v.shownChart = c
	v.mu.Unlock()
	v.Chart.Show(c)
}

// ChartShown is the Pareto chart last submitted (live: the records so far).
func (v *QuantPanel) ChartShown() plots.ParetoChart {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.shownChart
}

func (v *QuantPanel) refreshConsole() { refreshShownConsole(v.Tabs, v.Console, v.Follow) }

func (v *QuantPanel) confirmAbort() {
	dialog.ShowConfirm("Abort the ladder?", "The running llama.cpp process is stopped and its leg recorded; the study is halted. Run runs the ladder again, reusing the derived models already made.",
		func(ok bool) {
			if ok {
				v.Abort()
			}
		}, v.win)
}

func (v *QuantPanel) close() {
	v.Abort()
	v.text.Stop()
	v.Chart.Close()
}

// handOffDisabled starts the hand-off line while the ladder cannot hand off (handOffBlocked).
const handOffDisabled = "Make a capacity plan is disabled: "

// handOffBlocked says why a ladder cannot hand off its choice ("": it can): it is not complete
// (an incomplete ladder selects nothing; the legs it misses are named), or it selected nothing.
func handOffBlocked(st *QuantStudy) string {
	if st == nil {
		return "no ladder is shown"
	}
	if st.Status != "complete" && st.Status != "incomplete" {
		return fmt.Sprintf("study %d is %s: a ladder hands off its choice once it is complete", st.ID, st.Status)
	}
	if st.Result != nil && st.Result.Selection.Incomplete {
		return fmt.Sprintf("the ladder is incomplete, no selection (%s); Run measures what is missing", st.Result.Selection.Missing())
	}
	if st.Status != "complete" {
		return fmt.Sprintf("study %d is %s: a ladder hands off its choice once it is complete", st.ID, st.Status)
	}
	if st.Result == nil || st.Result.Selection.Selected == "" {
		return "the rule selected no candidate: there is nothing to hand off"
	}
	return ""
}

// pendingText is what a pending candidate misses: its legs, or why (records written before
// the legs were named).
func pendingText(p quant.Pending) string {
	if len(p.Legs) > 0 {
		return "missing " + strings.Join(p.Legs, ", ")
	}
	return strings.Join(p.Why, "; ")
}
