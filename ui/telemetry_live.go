package ui

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"sparkbench/app/study"
	"sparkbench/plots"
)

// The timeline's metrics, as the chooser under the live chart names them.
const (
	telPower = "power (W)"
	telClock = "clock (MHz)"
	telTemp  = "temperature (°C)"
)

// telMetrics are the chooser's choices in order, with what each draws.
var telMetrics = []struct{ choice, name, unit string }{
	{telPower, "power", "W"}, {telClock, "clock", "MHz"}, {telTemp, "temperature", "°C"},
}

// maxTelPoints bounds each device's kept readings (about 28 hours at 100 ms); the oldest half
// is thinned to every other reading when it is reached.
const maxTelPoints = 1 << 20

// liveTelemetry is a run's telemetry readings as they arrive (study.EventTelemetry): each
// device's power, clock and temperature against seconds since the run's first reading, the
// legs' starts, and the latest reading of each device and metric. Guarded by the run view's mu.
type liveTelemetry struct {
	first    time.Time
	series   map[string]map[string][]plots.TimePoint // chooser choice -> device label -> readings
	latest   map[string]LiveReading                  // device label + metric -> the newest reading
	legs     []plots.TimelineMark
	legNames map[int64]string
	pending  map[int64]bool // legs started whose first reading has not come yet
	samples  int            // samples seen, whatever they read
}

// LiveReading is one device's newest reading of one metric, as the machine card shows it.
type LiveReading struct {
	Device string // "nvml GPU0", "cpufreq (mean of 16 cores)"
	Metric string // telPower, telClock, telTemp
	Value  float64
	At     time.Time
}

func newLiveTelemetry() *liveTelemetry {
	return &liveTelemetry{series: map[string]map[string][]plots.TimePoint{}, latest: map[string]LiveReading{},
		legNames: map[int64]string{}, pending: map[int64]bool{}}
}

// legStarted notes a leg's name; its start is marked at its first reading (the sampler starts
// with the leg).
func (l *liveTelemetry) legStarted(e study.Event) {
	l.legNames[e.LegID] = e.Leg
	l.pending[e.LegID] = true
}

// observe adds an EventTelemetry's readings: power and GPU clock and each temperature sensor
// per device, the CPU cores' frequencies as one mean.
func (l *liveTelemetry) observe(e study.Event) {
	s := e.Telemetry
	if s == nil {
		return
	}
	l.samples++
	at := e.At
	if l.first.IsZero() {
		l.first = at
	}
	t := at.Sub(l.first).Seconds()
	if l.pending[e.LegID] {
		delete(l.pending, e.LegID)
		l.legs = append(l.legs, plots.TimelineMark{T: t, Label: l.legNames[e.LegID]})
	}
	var freqSum float64
	var freqN int
	for _, p := range s.Points {
		switch p.Metric {
		case study.TelemetryPowerW:
			l.add(telPower, s.Source+" "+p.Device, t, p.Value, at)
		case study.TelemetryClockMHz:
			l.add(telClock, s.Source+" "+p.Device, t, p.Value, at)
		case study.TelemetryTempC:
			l.add(telTemp, s.Source+" "+p.Device, t, p.Value, at)
		case study.TelemetryCPUFreqMHz:
			freqSum += p.Value
			freqN++
		}
	}
	if freqN > 0 {
		l.add(telClock, fmt.Sprintf("%s (mean of %d cores)", s.Source, freqN), t, freqSum/float64(freqN), at)
	}
}

func (l *liveTelemetry) add(metric, device string, t, v float64, at time.Time) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if l.series[metric] == nil {
		l.series[metric] = map[string][]plots.TimePoint{}
	}
	pts := append(l.series[metric][device], plots.TimePoint{T: t, Value: v})
	if len(pts) >= maxTelPoints {
		half := len(pts) / 2
		kept := pts[:0:0]
		for i := 0; i < half; i += 2 {
			kept = append(kept, pts[i])
		}
		pts = append(kept, pts[half:]...)
	}
	l.series[metric][device] = pts
	l.latest[device+"\x00"+metric] = LiveReading{Device: device, Metric: metric, Value: v, At: at}
}

// chart is a snapshot of one metric's timeline (copies: the renderer draws it later).
func (l *liveTelemetry) chart(choice string, meta plots.Meta) plots.TimelineChart {
	c := plots.TimelineChart{Meta: meta, Legs: append([]plots.TimelineMark(nil), l.legs...)}
	c.Meta.Model = "live, this run"
	for _, m := range telMetrics {
		if m.choice == choice {
			c.Metric, c.Unit = m.name, m.unit
		}
	}
	devs := make([]string, 0, len(l.series[choice]))
	for d := range l.series[choice] {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	for _, d := range devs {
		c.Series = append(c.Series, plots.TimelineSeries{Label: d, Points: append([]plots.TimePoint(nil), l.series[choice][d]...)})
	}
	return c
}

// Latest lists the newest reading of every device and metric, power first, then clock, then
// temperature, each by device.
func (l *liveTelemetry) Latest() []LiveReading {
	out := make([]LiveReading, 0, len(l.latest))
	for _, r := range l.latest {
		out = append(out, r)
	}
	rank := map[string]int{telPower: 0, telClock: 1, telTemp: 2}
	sort.Slice(out, func(i, j int) bool {
		if a, b := rank[out[i].Metric], rank[out[j].Metric]; a != b {
			return a < b
		}
		return out[i].Device < out[j].Device
	})
	return out
}

// readingText is one reading in words: "nvml GPU0 212 W".
func readingText(r LiveReading) string {
	unit := ""
	for _, m := range telMetrics {
		if m.choice == r.Metric {
			unit = m.unit
		}
	}
	return fmt.Sprintf("%s %s %s", r.Device, strings.TrimSuffix(fmt.Sprintf("%.1f", r.Value), ".0"), unit)
}

// TelemetryPane is the timeline under the live throughput chart: the chooser (power, clock,
// temperature), the chart and the newest readings. It stays hidden until the running study
// sends readings, which only a plan with a telemetry block does.
type TelemetryPane struct {
	Object fyne.CanvasObject
	Metric *widget.RadioGroup
	Chart  *ChartView
	Latest *widget.Label
}

func newTelemetryPane(onMetric func()) *TelemetryPane {
	p := &TelemetryPane{Chart: NewChartView(760, 300), Latest: widget.NewLabel("")}
	p.Latest.Wrapping = fyne.TextWrapWord
	choices := make([]string, len(telMetrics))
	for i, m := range telMetrics {
		choices[i] = m.choice
	}
	p.Metric = widget.NewRadioGroup(choices, func(string) { onMetric() })
	p.Metric.Horizontal = true
	p.Metric.Required = true
	p.Metric.SetSelected(telPower)
	p.Object = container.NewVBox(widget.NewLabelWithStyle("Telemetry during the run", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		p.Metric, p.Chart.Object, p.Latest)
	p.Object.Hide()
	return p
}

// observeTelemetry records a reading or a leg's start (the run's goroutines) and schedules the
// pane's update.
func (v *StudiesView) observeTelemetry(e study.Event) {
	v.mu.Lock()
	if v.tel == nil {
		v.tel = newLiveTelemetry()
	}
	if e.Kind == study.EventLegStarted {
		v.tel.legStarted(e)
		v.mu.Unlock()
		return
	}
	v.tel.observe(e)
	v.telStudy = e.StudyID
	v.mu.Unlock()
	v.telText.Submit(v.showTelemetry)
}

// showTelemetry shows the run's readings: the timeline of the chosen metric, the newest
// readings, and hands them to the machine card. UI goroutine.
func (v *StudiesView) showTelemetry() {
	v.mu.Lock()
	tel, sid, meta := v.tel, v.telStudy, v.meta
	var ch plots.TimelineChart
	var latest []LiveReading
	samples := 0
	if tel != nil {
		ch = tel.chart(v.Telemetry.Metric.Selected, meta)
		latest, samples = tel.Latest(), tel.samples
	}
	running := v.running == sid
	v.mu.Unlock()
	if samples == 0 { // a plan without a telemetry block: no timeline, and the card says so
		if v.onTelemetry != nil {
			v.onTelemetry(sid, nil, false)
		}
		return
	}
	setVisible(v.Telemetry.Object, v.selected == sid)
	v.Telemetry.Chart.Show(ch)
	parts := make([]string, len(latest))
	for i, r := range latest {
		parts[i] = readingText(r)
	}
	text := "no power, clock or temperature reading: the samplers of this machine read none (see Bench)"
	if len(parts) > 0 {
		text = "newest: " + strings.Join(parts, " · ")
	}
	setText(v.Telemetry.Latest, text)
	if v.onTelemetry != nil {
		v.onTelemetry(sid, latest, running)
	}
}

// syncTelemetryPane shows the timeline with the study whose run sent readings, and hides it
// with any other study. UI goroutine.
func (v *StudiesView) syncTelemetryPane(id int64) {
	v.mu.Lock()
	on := v.tel != nil && v.tel.samples > 0 && v.telStudy == id
	v.mu.Unlock()
	setVisible(v.Telemetry.Object, on)
}
