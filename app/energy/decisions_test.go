package energy

// Boundary tests of the figures and gates (issue 29, mutation testing): each one pins a
// comparison at the value where the two sides of it differ.

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/telemetry"
)

const sec = time.Second

// reading is one point of one device at t.
type reading struct {
	t              time.Duration
	source, device string
	metric         string
	v              float64
}

func samplesOf(rs ...reading) []telemetry.Sample {
	var out []telemetry.Sample
	for _, r := range rs {
		out = append(out, telemetry.Sample{Source: r.source, T: r.t, Points: []telemetry.Point{{Device: r.device, Metric: r.metric, Value: r.v}}})
	}
	return out
}

// gpu readings of one metric of nvml GPU0: pairs of (seconds, value).
func gpu(metric string, tv ...float64) []reading {
	var out []reading
	for i := 0; i+1 < len(tv); i += 2 {
		out = append(out, reading{time.Duration(tv[i] * float64(sec)), "nvml", "GPU0", metric, tv[i+1]})
	}
	return out
}

func cat(rs ...[]reading) []telemetry.Sample {
	var all []reading
	for _, r := range rs {
		all = append(all, r...)
	}
	return samplesOf(all...)
}

func TestWindowSeconds(t *testing.T) {
	if got := (Window{From: sec, To: 3500 * time.Millisecond}).Seconds(); got != 2.5 {
		t.Fatalf("got %v, want 2.5", got)
	}
}

// at interpolates between readings, holds the ends, and at a reading's own time (even one
// read twice) gives that reading (the first of a repeated time).
func TestSeriesAt(t *testing.T) {
	s := &series{}
	for _, p := range [][2]float64{{1, 10}, {2, 20}, {2, 30}, {4, 50}} {
		s.add(time.Duration(p[0]*float64(sec)), p[1])
	}
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{{0, 10}, {sec, 10}, {1500 * time.Millisecond, 15}, {2 * sec, 20}, {3 * sec, 40}, {3500 * time.Millisecond, 45}, {4 * sec, 50}, {5 * sec, 50}} {
		if got := s.at(c.t); got != c.want {
			t.Errorf("at(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// The trapezoidal integral over a window that starts between readings and ends past the last.
func TestSeriesIntegral(t *testing.T) {
	s := &series{}
	s.add(0, 0)
	s.add(sec, 10)
	s.add(2*sec, 30)
	// points 0.5 s (5), 1 s (10), 2 s (30), 3 s (30): 3.75 + 20 + 30
	if got := s.integral(Window{From: 500 * time.Millisecond, To: 3 * sec}); math.Abs(got-53.75) > 1e-12 {
		t.Fatalf("integral %v, want 53.75", got)
	}
	// a reading exactly at a window's end adds no segment and changes nothing
	if got := s.integral(Window{From: sec, To: 2 * sec}); math.Abs(got-20) > 1e-12 {
		t.Fatalf("integral %v, want 20", got)
	}
}

// A device measures energy from its counter with two readings, else from its power with one;
// a single counter reading and no power is no measurement.
func TestDeviceEnergyMethod(t *testing.T) {
	w := Window{From: 0, To: 2 * sec}
	for _, c := range []struct {
		name   string
		s      []telemetry.Sample
		j      float64
		method string
		ok     bool
	}{
		{"two counter readings", cat(gpu(telemetry.EnergyJ, 0, 100, 2, 300), gpu(telemetry.PowerW, 0, 5)), 200, MethodCounter, true},
		{"one counter reading and power", cat(gpu(telemetry.EnergyJ, 0, 100), gpu(telemetry.PowerW, 0, 50)), 100, MethodIntegrated, true},
		{"one power reading", cat(gpu(telemetry.PowerW, 1, 50)), 100, MethodIntegrated, true},
		{"one counter reading", cat(gpu(telemetry.EnergyJ, 0, 100)), 0, "", false},
	} {
		j, m, ok := NewTimeline(c.s).devices[0].energy(w)
		if j != c.j || m != c.method || ok != c.ok {
			t.Errorf("%s: %v %q %v, want %v %q %v", c.name, j, m, ok, c.j, c.method, c.ok)
		}
	}
}

// Samples in any order are arranged by time (equal times keep their order), devices by
// source then name; samples with an error are counted.
func TestNewTimelineOrder(t *testing.T) {
	s := samplesOf(
		reading{2 * sec, "rapl", "a", telemetry.PowerW, 1},
		reading{sec, "nvml", "z", telemetry.ClockSMMHz, 1800},
		reading{sec, "nvml", "z", telemetry.ClockSMMHz, 1700},
		reading{0, "nvml", "z", telemetry.ClockSMMHz, 1900},
		reading{0, "nvml", "b", telemetry.PowerW, 1},
	)
	s = append(s, telemetry.Sample{Source: "host", T: sec, Err: "gone"}, telemetry.Sample{Source: "nvml", T: 2 * sec, Err: "gone"},
		telemetry.Sample{Source: telemetry.SourceMark, T: sec, Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkRow}}})
	tl := NewTimeline(s)
	var names []string
	for _, d := range tl.devices {
		names = append(names, d.source+"/"+d.name)
	}
	if got := strings.Join(names, ","); got != "nvml/b,nvml/z,rapl/a" {
		t.Fatalf("devices %s", got)
	}
	if tl.Unreadable != 2 {
		t.Fatalf("unreadable %d, want 2", tl.Unreadable)
	}
	c := tl.devices[1].m[telemetry.ClockSMMHz]
	if fmt.Sprint(c.t, c.v) != "[0s 1s 1s] [1900 1800 1700]" {
		t.Fatalf("clock series %v %v", c.t, c.v)
	}
}

// The total adds the counted devices, mixed when their methods differ.
func TestTotalMixed(t *testing.T) {
	s := samplesOf(
		reading{0, "nvml", "GPU0", telemetry.EnergyJ, 1000}, reading{2 * sec, "nvml", "GPU0", telemetry.EnergyJ, 1300},
		reading{0, "rapl", "package-0", telemetry.PowerW, 20},
		reading{0, "rapl", "package-0/core", telemetry.PowerW, 500},
		reading{0, "hwmon", "k10temp", telemetry.PowerW, 500},
	)
	j, m, ok := NewTimeline(s).Total(Window{To: 2 * sec})
	if j != 340 || m != MethodMixed || !ok {
		t.Fatalf("total %v %q %v, want 340 mixed", j, m, ok)
	}
	j, m, ok = NewTimeline(s[:2]).Total(Window{To: 2 * sec})
	if j != 300 || m != MethodCounter || !ok {
		t.Fatalf("total %v %q %v, want 300 counter", j, m, ok)
	}
}

func TestRound(t *testing.T) {
	if got := round(2.123456789, 4); got != 2.1235 {
		t.Fatalf("round %v", got)
	}
	if got := round(-1.25, 1); got != -1.3 {
		t.Fatalf("round %v", got)
	}
}

func TestMarks(t *testing.T) {
	s := []telemetry.Sample{
		{Source: telemetry.SourceMark, T: sec, Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkRow, Value: 0}}},
		{Source: "nvml", T: 2 * sec, Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkEnd, Value: 0}}},
		{Source: telemetry.SourceMark, T: 3 * sec, Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkRow, Value: 1}}},
	}
	rows, _, ok := Marks(s)
	if ok || fmt.Sprint(rows) != "map[0:1s 1:3s]" {
		t.Fatalf("rows %v, end %v", rows, ok)
	}
	s = append(s, telemetry.Sample{Source: telemetry.SourceMark, T: 4 * sec, Points: []telemetry.Point{{Device: "leg", Metric: telemetry.MarkEnd}}})
	if _, end, ok := Marks(s); !ok || end != 4*sec {
		t.Fatalf("end %v %v", end, ok)
	}
}

// A row gets a figure only with a window, a test time, tokens and repetitions; every row,
// figured or not, moves the next window's start.
func TestLegRowsNeedEveryPart(t *testing.T) {
	var s []telemetry.Sample
	for i := 0; i <= 40; i++ {
		s = append(s, samplesOf(reading{time.Duration(i) * 100 * time.Millisecond, "nvml", "GPU0", telemetry.PowerW, 100})...)
	}
	rows := []Row{
		{Seq: 0, Tokens: 100, Reps: 1, TestNs: 1e9, At: sec},
		{Seq: 1, Tokens: 100, Reps: 1, TestNs: 1e9, At: sec},          // empty window
		{Seq: 2, Tokens: 100, Reps: 1, TestNs: 0, At: 2 * sec},        // no test time
		{Seq: 3, Tokens: 0, Reps: 1, TestNs: 1e9, At: 3 * sec},        // no tokens
		{Seq: 4, Tokens: 100, Reps: 0, TestNs: 1e9, At: 3500 * 1e6},   // no repetitions
		{Seq: 5, Tokens: 25, Reps: 2, TestNs: 250e6, At: 4 * sec},     // 0.5 s window, 50 J
		{Seq: 6, Tokens: 100, Reps: 1, TestNs: 1e9, At: 3 * sec},      // window backwards
		{Seq: 7, Tokens: 100, Reps: 1, TestNs: -1, At: 3500 * 1e6},    // negative test time
		{Seq: 8, Tokens: -100, Reps: -1, TestNs: 1e9, At: 3600 * 1e6}, // negative counts
	}
	f, ok := Leg(s, Window{To: 4 * sec}, rows)
	if !ok {
		t.Fatal("no energy")
	}
	if f.Seconds != 4 || f.EnergyJ != 400 || f.Samples != 41 {
		t.Fatalf("leg %+v", f)
	}
	want := "[{0 100 100 1 1} {5 50 100 0.5 2}]"
	var got []string
	for _, r := range f.Rows {
		got = append(got, fmt.Sprintf("{%d %v %v %v %v}", r.Seq, r.WindowJ, r.MeanW, r.JPerToken, r.TokensPerJ))
	}
	if g := "[" + strings.Join(got, " ") + "]"; g != want {
		t.Fatalf("rows %s, want %s", g, want)
	}
}

// A row that drew no energy has no tokens per Joule (not an infinity).
func TestLegRowWithoutEnergy(t *testing.T) {
	s := cat(gpu(telemetry.PowerW, 0, 0, 2, 0))
	f, ok := Leg(s, Window{To: 2 * sec}, []Row{{Tokens: 10, Reps: 1, TestNs: 1e9, At: sec}})
	if !ok || len(f.Rows) != 1 || f.Rows[0].JPerToken != 0 || f.Rows[0].TokensPerJ != 0 {
		t.Fatalf("%+v", f)
	}
}

// A zero-length leg has energy 0 and no average power (not NaN).
func TestFiguresZeroWindow(t *testing.T) {
	s := cat(gpu(telemetry.EnergyJ, 0, 0, 4, 40))
	f, ok := Leg(s, Window{From: 2 * sec, To: 2 * sec}, nil)
	if !ok || len(f.Devices) != 1 || f.Devices[0].AvgW != 0 || f.Devices[0].EnergyJ != 0 || f.Devices[0].Method != MethodCounter {
		t.Fatalf("%+v", f)
	}
	f, _ = Leg(s, Window{From: 2 * sec, To: 3 * sec}, nil)
	if d := f.Devices[0]; d.AvgW != 10 || d.EnergyJ != 10 || d.PeakW != 10 {
		t.Fatalf("%+v", d)
	}
}

// Clock and temperature ranges count the readings at both ends of the window and none
// outside; throttle samples count nonzero thermal flags and the power-cap bit.
func TestDeviceFiguresRanges(t *testing.T) {
	s := cat(
		gpu(telemetry.ClockSMMHz, 0.5, 100, 1, 2000, 2, 1500, 3, 2500, 3.5, 3000),
		gpu(telemetry.TempC, 0.5, 10, 1, 60, 2, 70, 3, 65, 3.5, 99),
		gpu(telemetry.ThrottleHot, 0.5, 1, 1, 0, 1.5, 1, 2, 0, 2.5, 2, 2.7, 0, 3, 0, 3.5, 1),
		gpu(telemetry.Throttle, 0.5, 4, 1, 4, 1.5, 5, 2, 1, 2.5, 0, 2.7, 4, 3, 12, 3.5, 4),
	)
	f, ok := Leg(s, Window{From: sec, To: 3 * sec}, nil)
	if ok || len(f.Devices) != 1 {
		t.Fatalf("%+v %v", f, ok)
	}
	d := f.Devices[0]
	got := fmt.Sprintf("clock %v %v..%v temp %v..%v throttled %d capped %d", d.ClockStartMHz, d.ClockMinMHz, d.ClockMaxMHz, d.TempMinC, d.TempMaxC, d.Throttled, d.PowerCapped)
	if want := "clock 2000 1500..2500 temp 60..70 throttled 2 capped 4"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	// No reading in the window: no range (and no reading taken from outside it).
	f, _ = Leg(s, Window{From: 4 * sec, To: 5 * sec}, nil)
	if d := f.Devices[0]; d != (DeviceFigures{Source: "nvml", Device: "GPU0"}) {
		t.Fatalf("no reading in the window: %+v", d)
	}
}

// Peak power: the highest reading in the window; without readings in it, the steepest
// counter slope over the segments that touch the window (one ending at its start or starting
// at its end included), repeated times skipped.
func TestDevicePeak(t *testing.T) {
	w := Window{From: sec, To: 3 * sec}
	for _, c := range []struct {
		name string
		s    []telemetry.Sample
		want float64
	}{
		{"readings in the window", cat(gpu(telemetry.PowerW, 0, 900, 1, 100, 2, 300, 3, 200, 4, 900)), 300},
		{"no reading in the window, no counter", cat(gpu(telemetry.PowerW, 0, 50, 10, 50)), 0},
		{"segment ending at the start", cat(gpu(telemetry.EnergyJ, 0, 0, 1, 100, 2, 150, 3, 200, 4, 210)), 100},
		{"segment starting at the end", cat(gpu(telemetry.EnergyJ, 0, 0, 1, 10, 2, 20, 3, 30, 4, 230)), 200},
		{"segments outside", cat(gpu(telemetry.EnergyJ, 0, 0, 0.5, 500, 1.5, 520, 2.5, 540, 3.5, 560, 4, 1000)), 20},
		{"a repeated time", cat(gpu(telemetry.EnergyJ, 0, 0, 2, 60, 2, 70, 4, 130)), 30},
	} {
		d := NewTimeline(c.s).devices[0]
		if got := d.peak(w); got != c.want {
			t.Errorf("%s: peak %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRowsFrom(t *testing.T) {
	results := []benchfmt.Result{
		{NPrompt: 512, SamplesNs: []int64{100, 200}},
		{NPrompt: 512, NGen: 128, SamplesNs: []int64{1000, 3000, 5000}},
		{NGen: 128, SamplesNs: []int64{1}}, // no mark
		{NGen: 64},                         // no repetitions
	}
	rows := RowsFrom(results, map[int]time.Duration{0: sec, 1: 2 * sec, 3: 3 * sec})
	if got := fmt.Sprint(rows); got != "[{0 pp512 pp 512 2 300 1s} {1 pp512+tg128 pg 640 3 9000 2s}]" {
		t.Fatalf("rows %s", got)
	}
}

// A cell needs both marks with its end after its start.
func TestCellWindowsAndFigures(t *testing.T) {
	mark := func(t time.Duration, metric string, c float64) telemetry.Sample {
		return telemetry.Sample{Source: telemetry.SourceMark, T: t, Points: []telemetry.Point{{Device: "clients", Metric: metric, Value: c}}}
	}
	s := cat(gpu(telemetry.PowerW, 0, 100, 10, 100))
	s = append(s, mark(sec, MarkCellStart, 4), mark(3*sec, MarkCellEnd, 4),
		mark(4*sec, MarkCellStart, 1), mark(5*sec, MarkCellEnd, 1),
		mark(6*sec, MarkCellStart, 2), mark(6*sec, MarkCellEnd, 2), // empty
		mark(7*sec, MarkCellStart, 3), // no end
		mark(7*sec, "other", 5), telemetry.Sample{Source: "nvml", T: 8 * sec, Points: []telemetry.Point{{Device: "clients", Metric: MarkCellEnd, Value: 3}}})
	if got := fmt.Sprint(CellWindows(s)); got != "map[1:{4s 5s} 4:{1s 3s}]" {
		t.Fatalf("windows %s", got)
	}
	cells := Cells(s)
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%d %v s %v J %s %v W", c.Clients, c.Seconds, c.EnergyJ, c.Method, c.MeanW))
	}
	if g := strings.Join(got, "; "); g != "1 1 s 100 J integrated 100 W; 4 2 s 200 J integrated 100 W" {
		t.Fatalf("cells %s", g)
	}
	if len(Cells(s[2:])) != 0 { // marks only: no device measures energy
		t.Fatal("cells without energy")
	}
}

func TestCellPerTokenAndText(t *testing.T) {
	c := CellFigures{EnergyJ: 200, Seconds: 2, Method: MethodIntegrated, MeanW: 100}
	c.PerToken(0)
	if c.JPerToken != 0 || c.TokensPerJ != 0 || strings.Contains(c.Text(), "per generated token") {
		t.Fatalf("no rate: %+v %s", c, c.Text())
	}
	z := CellFigures{MeanW: 0}
	z.PerToken(50)
	if z.JPerToken != 0 || z.TokensPerJ != 0 {
		t.Fatalf("no power: %+v", z)
	}
	c.PerToken(50)
	if c.JPerToken != 2 || c.TokensPerJ != 0.5 {
		t.Fatalf("%+v", c)
	}
	if got := c.Text(); got != "200.000 J over 2.000 s (integrated), 100.0 W mean, 2 J per generated token" {
		t.Fatalf("text %q", got)
	}
}

type reporter []telemetry.Status

func (r reporter) Statuses() []telemetry.Status { return r }

func TestStatuses(t *testing.T) {
	if Statuses(nil) != nil || Statuses(42) != nil {
		t.Fatal("not a reporter")
	}
	if got := Statuses(reporter{{Source: "nvml", Available: true}}); len(got) != 1 || got[0].Source != "nvml" {
		t.Fatalf("%v", got)
	}
}

func TestPlanValidateBoundaries(t *testing.T) {
	for _, c := range []struct {
		p    Plan
		bad  string // the path that is wrong, "" none
		want time.Duration
	}{
		{Plan{IntervalMS: 0}, "", telemetry.DefaultInterval},
		{Plan{IntervalMS: 10}, "", 10 * time.Millisecond},
		{Plan{IntervalMS: 9}, ".interval_ms", 0},
		{Plan{IntervalMS: -1}, ".interval_ms", 0},
		{Plan{IntervalMS: 60000}, "", time.Minute},
		{Plan{IntervalMS: 60001}, ".interval_ms", 0},
		{Plan{Gates: Gates{ClockDropMax: 0}}, "", 0},
		{Plan{Gates: Gates{ClockDropMax: 0.999}}, "", 0},
		{Plan{Gates: Gates{ClockDropMax: 1}}, ".gates.clock_drop_max", 0},
		{Plan{Gates: Gates{ClockDropMax: -0.01}}, ".gates.clock_drop_max", 0},
		{Plan{Gates: Gates{TempMaxC: 150}}, "", 0},
		{Plan{Gates: Gates{TempMaxC: 150.5}}, ".gates.temp_max_c", 0},
		{Plan{Gates: Gates{TempMaxC: -0.5}}, ".gates.temp_max_c", 0},
	} {
		var paths []string
		for _, pr := range c.p.Validate("t") {
			paths = append(paths, strings.TrimPrefix(pr.Path, "t"))
		}
		if got := strings.Join(paths, ","); got != c.bad {
			t.Errorf("%+v: problems at %q, want %q", c.p, got, c.bad)
		}
		if c.want != 0 && c.p.Interval() != c.want {
			t.Errorf("%+v: interval %v, want %v", c.p, c.p.Interval(), c.want)
		}
	}
}

// Each gate fires only past its limit, and not at all when off.
func TestGatesCheckBoundaries(t *testing.T) {
	w := Window{To: 3 * sec}
	clock := cat(gpu(telemetry.ClockSMMHz, 0, 2000, 1, 1500, 2, 1900)) // a 25% drop
	hot := cat(gpu(telemetry.TempC, 0, 60, 1, 80, 2, 70))
	throttled := cat(gpu(telemetry.ThrottleHot, 0, 0, 1, 1, 2, 0))
	calm := cat(gpu(telemetry.ThrottleHot, 0, 0, 1, 0), gpu(telemetry.ClockSMMHz, 0, 2000, 1, 2000), gpu(telemetry.TempC, 0, 50))
	for _, c := range []struct {
		name string
		g    Gates
		s    []telemetry.Sample
		want string
	}{
		{"clock drop at the limit", Gates{ClockDropMax: 0.25}, clock, ""},
		{"clock drop past the limit", Gates{ClockDropMax: 0.2}, clock,
			"clock:GPU0 clock:drop_above_maximum 0.25/0.2 nvml GPU0: shader clock fell to 1500 MHz, 25.0% below the leg's start (2000 MHz; limit 20.0%)"},
		{"clock gate off", Gates{}, clock, ""},
		{"temperature at the limit", Gates{TempMaxC: 80}, hot, ""},
		{"temperature past the limit", Gates{TempMaxC: 79.5}, hot,
			"thermal:GPU0 thermal:temperature_above_maximum 80/79.5 nvml GPU0: 80.0 °C, above the limit 79.5 °C"},
		{"temperature gate off", Gates{}, hot, ""},
		{"one throttled sample", Gates{}, throttled,
			"thermal:GPU0 thermal:throttled 1/0 nvml GPU0: a thermal or hardware slowdown reason in 1 sample(s) of the leg"},
		{"nothing wrong", Gates{ClockDropMax: 0.01, TempMaxC: 60}, calm, ""},
	} {
		var got []string
		for _, b := range c.g.Check(c.s, w) {
			got = append(got, fmt.Sprintf("%s %s %v/%v %s", b.Name, b.Code, b.Observed, b.Limit, b.Reason))
		}
		if g := strings.Join(got, "\n"); g != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, g, c.want)
		}
	}
}
