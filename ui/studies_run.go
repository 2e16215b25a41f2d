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

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
	"sparkbench/plots"
)

const maxConsoleLines = 2000

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
	if v.quantShown {
		v.Quant.Run()
		return
	}
	if (v.Cap != nil && v.Cap.Running()) || (v.Quant != nil && v.Quant.Running()) {
		showOneAtATime(v.win)
		return
	}
	ctx, cancel, ok := v.claim(id, func() {
		v.console = nil
		v.liveRows = map[string][]plots.DepthPoint{}
		v.gates = gateCounts{}
		v.tel, v.telStudy = newLiveTelemetry(), id
	})
	if !ok {
		return
	}
	v.Telemetry.Object.Hide() // until this run's first reading
	v.Chart.Hold(true)        // chart frames are shown with the text updates (showLive)
	v.updateButtons()
	d := runDisplay{v.app, v.Progress, v.ProgressMsg, v.Tabs}
	v.launch(d, cancel, v.Title.Text, "starting…", func() (func() string, string) {
		sum, err := v.svc.Run(ctx, id, v.onEvent)
		headline := ""
		if rep, serr := v.svc.Show(ctx, id); err == nil && serr == nil {
			headline = study.Headline(rep)
		}
		return func() string { return v.runOutcome(sum, err) }, headline
	}, func() {
		v.Chart.Hold(false)
		v.showTelemetry() // the machine card says the run has ended
		v.Select(id)
	})
}

// runOutcome says how a run ended (and shows an error dialog when it could not run), and shows
// the run's gate lights. UI goroutine.
func (v *StudiesView) runOutcome(sum study.RunSummary, err error) string {
	v.mu.Lock()
	v.Gates.SetText(v.gates.String())
	v.mu.Unlock()
	switch {
	case errors.Is(err, study.ErrStopped) || errors.Is(err, context.Canceled):
		return "stopped by you; the running leg is recorded as stopped_by_user. Run resumes at the first unfinished leg."
	case err != nil:
		dialog.ShowError(fmt.Errorf("the study could not run: %w. Legs that finished are kept; fix it and press Run to resume", err), v.win)
		return "could not run: " + err.Error()
	case sum.Halted:
		return fmt.Sprintf("halted after %d/%d legs: %s", sum.LegsDone, sum.LegsTotal, sum.Reason)
	case len(sum.Incomplete) > 0:
		return incompleteMessage(sum)
	}
	return fmt.Sprintf("finished: %d/%d legs, %d verdict(s) in %s", sum.LegsDone, sum.LegsTotal, len(sum.Verdicts), sum.Elapsed.Round(10*time.Millisecond))
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
	switch e.Kind {
	case study.EventTelemetry: // the samplers' goroutines: the timeline and the machine card only
		v.observeTelemetry(e)
		return
	case study.EventLegStarted:
		v.observeTelemetry(e)
	}
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
		v.Chart.Show(chart) // drawn now, shown by the next showLive
	}
	// Everything the run view shows changes in one throttled update (textInterval): each
	// change of the shown text repaints the whole window, and the chart's newest frame is shown
	// in the same repaint (ChartView.Hold).
	v.text.Submit(v.showLive)
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
	v.Chart.ShowHeld()
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

func (v *StudiesView) signal() {
	select {
	case v.Updated <- struct{}{}:
	default:
	}
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

// newConsoleTab is a run view's Console tab: the console list of *lines (under mu), its follow
// check (ticked) and Copy button above it.
func newConsoleTab(a fyne.App, mu *sync.Mutex, lines *[]string) (*widget.List, *widget.Check, *widget.Button, fyne.CanvasObject) {
	list := newConsoleList(mu, lines)
	follow := widget.NewCheck("follow", nil)
	follow.SetChecked(true)
	copyBtn := widget.NewButton("Copy", func() {
		mu.Lock()
		text := strings.Join(*lines, "\n")
		mu.Unlock()
		a.Clipboard().SetContent(text)
	})
	return list, follow, copyBtn, container.NewBorder(container.NewHBox(follow, copyBtn), nil, nil, nil, list)
}

// gateCounts are the run's gate lights: rows measured, rows a CV gate flagged, legs that
// crashed (with the canary's verdict), legs that ended otherwise than ok.
type gateCounts struct {
	rows, flagged, legsOK, legsBad int
	crashes                        []string
	canary                         string
	// backends counts the rows by the backend evidence llama-bench printed with them (where the
	// row ran, GPU layers offloaded, GPU): rows that asked for the same devices and disagree
	// mean the build or the device changed under the study. asked groups the evidence by the
	// devices value the rows asked for (a study that sweeps devices has one group per device).
	backends map[string]int
	asked    map[string]map[string]bool
}

// mixed says whether rows that asked for the same devices disagree on where they ran.
func (g *gateCounts) mixed() bool {
	for _, keys := range g.asked {
		if len(keys) > 1 {
			return true
		}
	}
	return false
}

func (g *gateCounts) observe(e study.Event) {
	switch e.Kind {
	case study.EventSample:
		g.rows++
		if sm := e.Sample; sm != nil {
			r := sm.Result
			key := r.RanOn() // llama-bench's backends field names every backend the build has
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
			asked := r.AskedDevices()
			if g.asked == nil {
				g.asked = map[string]map[string]bool{}
			}
			if g.asked[asked] == nil {
				g.asked[asked] = map[string]bool{}
			}
			g.asked[asked][key] = true
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
	switch {
	case len(g.backends) == 0:
	case g.mixed():
		s += " · backend evidence ●MIXED (rows disagree: check the build and device)"
	case len(g.backends) == 1:
		for k := range g.backends {
			s += " · backend evidence ●ok " + k
		}
	default:
		s += fmt.Sprintf(" · backend evidence ●ok (%d devices)", len(g.asked))
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
		switch {
		case g.mixed():
			s += " · backend evidence ●MIXED (rows disagree: check the build and device): " + strings.Join(parts, "; ")
		case len(keys) == 1:
			s += " · backend evidence ●ok " + parts[0] + " rows"
		default:
			s += " · backend evidence ●ok, one per device asked for: " + strings.Join(parts, "; ")
		}
	}
	return s
}
