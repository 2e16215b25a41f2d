package energy

import (
	"math"
	"time"

	"sparkbench/runner/telemetry"
)

// DeviceFigures is one device over a leg.
type DeviceFigures struct {
	Source  string  `json:"source"`
	Device  string  `json:"device"`
	Method  string  `json:"method,omitempty"` // counter or integrated; "" without energy
	EnergyJ float64 `json:"energy_j,omitempty"`
	AvgW    float64 `json:"avg_w,omitempty"`  // energy / the leg's time
	PeakW   float64 `json:"peak_w,omitempty"` // the highest power reading (or counter slope)
	// Clock and temperature ranges (MHz, °C) over the samples in the leg; the start clock is
	// the first reading, which the clock gate compares against.
	ClockStartMHz float64 `json:"clock_start_mhz,omitempty"`
	ClockMinMHz   float64 `json:"clock_min_mhz,omitempty"`
	ClockMaxMHz   float64 `json:"clock_max_mhz,omitempty"`
	TempMinC      float64 `json:"temp_min_c,omitempty"`
	TempMaxC      float64 `json:"temp_max_c,omitempty"`
	// Throttled counts samples with a thermal or hardware slowdown reason; PowerCapped those
	// with the software power cap (the normal state of a busy GPU: reported, not gated).
	Throttled   int `json:"throttled,omitempty"`
	PowerCapped int `json:"power_capped,omitempty"`
}

// Row is one llama-bench row as the energy split needs it.
type Row struct {
	Seq    int           `json:"seq"`
	Test   string        `json:"test"`   // pp512, tg128 @ d4096, pp512+tg128
	Kind   string        `json:"kind"`   // pp, tg, pg
	Tokens int           `json:"tokens"` // per repetition: n_prompt (pp), n_gen (tg), both (pg)
	Reps   int           `json:"reps"`
	TestNs int64         `json:"test_ns"` // llama-bench's own time of the repetitions (sum of samples_ns)
	At     time.Duration `json:"at_ns"`   // when the row arrived, on the leg's clock
}

// RowFigures is the energy of one row's tokens.
type RowFigures struct {
	Seq  int    `json:"seq"`
	Test string `json:"test"`
	Kind string `json:"kind"`
	// WindowJ is the energy from the previous row's arrival (the leg's start for the first) to
	// this one's; its mean power times llama-bench's own test time is the energy of the
	// measured repetitions, which over their tokens gives JPerToken.
	WindowJ    float64 `json:"window_j"`
	MeanW      float64 `json:"mean_w"`
	JPerToken  float64 `json:"j_per_token"`
	TokensPerJ float64 `json:"tokens_per_j"`
}

// LegFigures is a leg's energy.
type LegFigures struct {
	Seconds    float64         `json:"seconds"`
	EnergyJ    float64         `json:"energy_j"`
	Method     string          `json:"method"`
	Devices    []DeviceFigures `json:"devices"`
	Rows       []RowFigures    `json:"rows,omitempty"`
	Unreadable int             `json:"unreadable,omitempty"` // samples that carried an error
	Samples    int             `json:"samples"`
}

// Leg computes a leg's figures over w. Rows are split as RowFigures says; a row whose window
// or test time is empty gets no figure. HasEnergy is false when no device measured energy.
func Leg(samples []telemetry.Sample, w Window, rows []Row) (LegFigures, bool) {
	tl := NewTimeline(samples)
	f := LegFigures{Seconds: round(w.Seconds(), 6), Unreadable: tl.Unreadable, Samples: len(samples)}
	for _, d := range tl.devices {
		f.Devices = append(f.Devices, d.figures(w))
	}
	total, method, ok := tl.Total(w)
	f.EnergyJ, f.Method = round(total, 6), method
	if !ok {
		return f, false
	}
	prev := w.From
	for _, r := range rows {
		win := Window{From: prev, To: r.At}
		prev = r.At
		if win.Seconds() <= 0 || r.TestNs <= 0 || r.Tokens <= 0 || r.Reps <= 0 {
			continue
		}
		j, _, _ := tl.Total(win)
		mean := j / win.Seconds()
		perTok := mean * float64(r.TestNs) / 1e9 / float64(r.Tokens*r.Reps)
		rf := RowFigures{Seq: r.Seq, Test: r.Test, Kind: r.Kind, WindowJ: round(j, 6), MeanW: round(mean, 4),
			JPerToken: round(perTok, 9)}
		if perTok > 0 {
			rf.TokensPerJ = round(1/perTok, 6)
		}
		f.Rows = append(f.Rows, rf)
	}
	return f, true
}

func (d *device) figures(w Window) DeviceFigures {
	df := DeviceFigures{Source: d.source, Device: d.name}
	if j, m, ok := d.energy(w); ok {
		df.Method, df.EnergyJ = m, round(j, 6)
		if w.Seconds() > 0 {
			df.AvgW = round(j/w.Seconds(), 4)
		}
		df.PeakW = round(d.peak(w), 4)
	}
	if c := d.m[telemetry.ClockSMMHz]; c != nil {
		if v := c.in(w); len(v) > 0 {
			df.ClockStartMHz = v[0]
			df.ClockMinMHz, df.ClockMaxMHz = minMax(v)
		}
	}
	if t := d.m[telemetry.TempC]; t != nil {
		if v := t.in(w); len(v) > 0 {
			df.TempMinC, df.TempMaxC = minMax(v)
		}
	}
	if th := d.m[telemetry.ThrottleHot]; th != nil {
		for _, v := range th.in(w) {
			if v != 0 {
				df.Throttled++
			}
		}
	}
	if r := d.m[telemetry.Throttle]; r != nil {
		for _, v := range r.in(w) {
			if uint64(v)&telemetry.ReasonSwPowerCap != 0 {
				df.PowerCapped++
			}
		}
	}
	return df
}

// peak is the highest power reading in w, or without readings the steepest slope of the
// energy counter between consecutive samples.
func (d *device) peak(w Window) float64 {
	if p := d.m[telemetry.PowerW]; p != nil {
		if v := p.in(w); len(v) > 0 {
			_, mx := minMax(v)
			return mx
		}
	}
	c := d.m[telemetry.EnergyJ]
	best := 0.0
	for i := 1; c != nil && i < len(c.t); i++ {
		if c.t[i] < w.From || c.t[i-1] > w.To || c.t[i] == c.t[i-1] {
			continue
		}
		best = math.Max(best, (c.v[i]-c.v[i-1])/(c.t[i]-c.t[i-1]).Seconds())
	}
	return best
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}
