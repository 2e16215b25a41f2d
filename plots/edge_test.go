package plots

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func hasNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

var (
	nan = math.NaN()
	inf = math.Inf(1)
)

// TestEdgeData draws odd data with every kind: each must render at the window size without
// panicking and say in its notes what is missing.
func TestEdgeData(t *testing.T) {
	meta := Meta{Model: "m", Build: "b", Machine: "x"}
	var fifty []DepthSeries
	var fiftySlots []SlotsSeries
	for i := range 50 {
		fifty = append(fifty, DepthSeries{Label: fmt.Sprintf("config %02d", i), Points: []DepthPoint{
			{Depth: 0, Mean: 90 - float64(i), SD: 0.5, N: 5}, {Depth: 8192, Mean: 70 - float64(i)/2, SD: 0.4, N: 5},
		}})
		fiftySlots = append(fiftySlots, SlotsSeries{Label: fmt.Sprintf("arm %02d", i), Points: []SlotsPoint{
			{Slots: 1, Aggregate: 60 + float64(i), PerStream: 70}, {Slots: 4, Aggregate: 120 + float64(i), PerStream: 30},
		}})
	}
	allFail := EnvelopeGrid{Candidate: "c", Slots: []int{1, 2}, Clients: []int{1, 2}, Cells: [][]EnvelopeCell{
		{{Rate: 30, E2EP95: 9000, TTFTP95: 4000, Failures: []string{"forward:ttft_ms_p95_above_maximum"}}, {Rate: 31, E2EP95: 9100, TTFTP95: 4100, Failures: []string{"peak_rss_above_maximum"}}},
		{{Rate: 32, E2EP95: 9200, TTFTP95: 4200}, {Rate: nan, E2EP95: inf, TTFTP95: 0}},
	}}
	at := func(h int) time.Time { return time.Date(2026, 7, 4, h, 0, 0, 0, time.UTC) }

	cases := []struct {
		name  string
		chart Chart
		notes []string // substrings that some note must contain
	}{
		{"depth/empty", DepthChart{}, []string{"no series given", "title lacks the model, build and machine"}},
		{"depth/one point", DepthChart{Meta: meta, Metric: "tg128", RefLine: 70, Series: []DepthSeries{{Label: "solo", Points: []DepthPoint{{Depth: 0, Mean: 92.1, SD: 0.4, N: 5}}}}}, []string{"solo: one depth only"}},
		{"depth/missing depth", DepthChart{Meta: meta, Metric: "tg128", Series: []DepthSeries{
			{Label: "A", Points: []DepthPoint{{Depth: 0, Mean: 90, SD: 1, N: 5}, {Depth: 8192, Missing: true}, {Depth: 16384, Mean: 50, SD: 1, N: 5}}},
			{Label: "B", Points: []DepthPoint{{Depth: 0, Mean: 80, SD: 1, N: 5}, {Depth: 8192, Mean: 60, SD: 1, N: 5}}},
		}}, []string{"A: no data at d8K", "B: not measured at d16K"}},
		{"depth/nan inf zero", DepthChart{Meta: meta, Metric: "pp512", Series: []DepthSeries{{Label: "odd", Points: []DepthPoint{
			{Depth: 0, Mean: nan}, {Depth: 2048, Mean: inf}, {Depth: 4096, Mean: 0, SD: nan, N: 5}, {Depth: 8192, Mean: 500, SD: inf, N: 1}, {Depth: -1, Mean: 3},
		}}}}, []string{"NaN/Inf value at d0, d2K", "0 t/s at d4K", "depth -1 is negative"}},
		{"depth/no points", DepthChart{Meta: meta, Series: []DepthSeries{{Label: "empty"}}}, []string{"empty: no measured point", "no series has a measured point"}},
		{"depth/50 series", DepthChart{Meta: meta, Metric: "tg128", RefLine: 70, Series: fifty}, []string{"legend lists", "more series are drawn but not listed"}},
		{"depth/sd fallback", DepthChart{Meta: meta, Series: []DepthSeries{{Label: "n1", Points: []DepthPoint{{Depth: 0, Mean: 90, SD: 2, N: 1}, {Depth: 4096, Mean: 80, SD: 2, N: 1}}}}}, nil},

		{"slots/empty", SlotsChart{}, []string{"no series given"}},
		{"slots/one point", SlotsChart{Meta: meta, Knee: 0.2, Series: []SlotsSeries{{Label: "P1 only", Points: []SlotsPoint{{Slots: 1, Aggregate: 72, PerStream: 88}}}}}, []string{"one slot count only"}},
		{"slots/bad values", SlotsChart{Meta: meta, Series: []SlotsSeries{{Label: "bad", Points: []SlotsPoint{
			{Slots: 0, Aggregate: 1}, {Slots: 1, Aggregate: nan, PerStream: inf}, {Slots: 2, Aggregate: 0, PerStream: 0}, {Slots: 4, Aggregate: 130, PerStream: -1},
		}}}}, []string{"slot count 0 is not positive", "no valid aggregate rate at P1", "no valid per-stream rate at P1, P4", "0 t/s at P2"}},
		{"slots/50 series", SlotsChart{Meta: meta, Series: fiftySlots}, []string{"legend lists"}},

		{"latency/empty", LatencyChart{}, []string{"no series given", "no TTFT limit given", "no E2E limit given"}},
		{"latency/bad values", LatencyChart{Meta: meta, TTFTLimitMs: 1000, E2ELimitMs: 5000, Series: []LatencySeries{{Slots: 2, Points: []LatencyPoint{
			{Clients: 1, TTFTP95Ms: 0, E2EP95Ms: nan}, {Clients: 0, TTFTP95Ms: 100}, {Clients: 2, TTFTP95Ms: 400, E2EP95Ms: 3000},
		}}}}, []string{"TTFT at C1", "E2E at C1", "clients 0"}},
		{"latency/one point ttft only", LatencyChart{Meta: meta, Metric: "ttft", TTFTLimitMs: 1000, Series: []LatencySeries{{Slots: 1, Points: []LatencyPoint{{Clients: 1, TTFTP95Ms: 224.8}}}}}, []string{"one client level only"}},

		{"envelope/all failing", EnvelopeChart{Meta: meta, Grid: allFail}, []string{"no cell passes every gate"}},
		{"envelope/empty", EnvelopeChart{}, []string{"empty grid", "candidate not named"}},
		{"envelope/ragged and missing", EnvelopeChart{Meta: meta, Grid: EnvelopeGrid{Candidate: "c", Slots: []int{1, 2}, Clients: []int{1, 2, 4},
			Cells: [][]EnvelopeCell{{{Pass: true, Rate: 35}}, {{Missing: true}, {Pass: true, Rate: 38}, {Pass: true, Rate: 80}, {Pass: true}}}, Selected: &[2]int{8, 8}}},
			[]string{"no result for P1/C2, P1/C4, P2/C1", "selected point P8/C8 is not in the grid", "P2: 1 cells beyond"}},
		{"envelope/selected failing", EnvelopeChart{Meta: meta, Grid: EnvelopeGrid{Candidate: "c", Slots: []int{1}, Clients: []int{1},
			Cells: [][]EnvelopeCell{{{Pass: false, Rate: 35}}}, Selected: &[2]int{1, 1}}}, []string{"selected point P1/C1 did not pass"}},

		{"ubatch/empty", UbatchChart{}, []string{"no series given"}},
		{"ubatch/odd", UbatchChart{Meta: meta, Series: []UbatchSeries{{Label: "x", Points: []UbatchPoint{
			{Ubatch: 0, Mean: 1}, {Ubatch: 128, Mean: nan}, {Ubatch: 256, Mean: 0, SD: 1, N: 5}, {Ubatch: 512, Missing: true},
		}}}}, []string{"prompt length not given", "ubatch 0 is not positive", "no valid value at ub 128, 512", "0 t/s at ub 256"}},

		{"repeat/empty", RepeatChart{}, []string{"no series given"}},
		{"repeat/one run", RepeatChart{Meta: meta, Series: []RepeatSeries{{Label: "leg", Points: []RepeatPoint{{At: at(2), Value: 92.4}}}}}, []string{"one run only"}},
		{"repeat/odd", RepeatChart{Meta: meta, Series: []RepeatSeries{{Label: "leg", Points: []RepeatPoint{
			{Value: 90}, {Value: nan}, {Value: inf}, {Value: 0}, {Value: 91, SD: 0.5, N: 5, Condition: "download"},
		}}}}, []string{"2 runs with NaN, Inf", "1 runs at 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.chart.Plot()
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range [][2]int{{800, 500}, {1920, 1080}} {
				if _, err := Render(p, size[0], size[1], 96); err != nil {
					t.Fatalf("render %v: %v", size, err)
				}
			}
			// At the smallest size a busy header may leave no room: that must be an error
			// that says so, not a hang or a panic.
			if _, err := Render(p, MinWidthPx, MinHeightPx, 96); err != nil && !strings.Contains(err.Error(), "does not fit") {
				t.Fatalf("render at the minimum size: %v", err)
			}
			notes := Notes(p)
			for _, want := range tc.notes {
				if !hasNote(notes, want) {
					t.Errorf("no note contains %q; notes: %q", want, notes)
				}
			}
		})
	}
}

// TestEdgeGolden keeps images of three edge cases, so that what the chart says about
// missing data is reviewed by eye once.
func TestEdgeGolden(t *testing.T) {
	missing := DepthChart{
		Meta: Meta{Model: "Qwen3-14B Q4_K_M; Qwen3-8B Q4_K_M", Build: "llama.cpp 067de937 Vulkan", Machine: "Radeon 8060S, 128 GB"}, Metric: "pp512", RefLine: 0, Interval: IntervalSD,
		Series: []DepthSeries{
			{Label: "Qwen3-14B Q4_K_M", Points: []DepthPoint{{Depth: 0, Mean: 633.72, SD: 1.39, N: 5}, {Depth: 2048, Mean: 520.4, SD: 3.1, N: 5}, {Depth: 4096, Missing: true}, {Depth: 8192, Mean: 282.30, SD: 7.35, N: 5}}},
			{Label: "Qwen3-8B Q4_K_M", Points: []DepthPoint{{Depth: 0, Mean: 1078.08, SD: 1.70, N: 5}, {Depth: 8192, Mean: 499.97, SD: 10.38, N: 5}, {Depth: 16384, Mean: 331.2, SD: 9.8, N: 5}}},
		},
	}
	var fifty []DepthSeries
	for i := range 50 {
		fifty = append(fifty, DepthSeries{Label: fmt.Sprintf("config %02d", i+1), Points: []DepthPoint{
			{Depth: 0, Mean: 95 - float64(i)*0.8, SD: 0.5, N: 5}, {Depth: 4096, Mean: 82 - float64(i)*0.7, SD: 0.4, N: 5}, {Depth: 8192, Mean: 71 - float64(i)*0.6, SD: 0.4, N: 5},
		}})
	}
	c := loadChart(t, KindEnvelope).(EnvelopeChart)
	allFail := c
	allFail.Grid.Cells = nil
	for _, row := range c.Grid.Cells {
		var r []EnvelopeCell
		for _, cell := range row {
			cell.Pass = false
			cell.Failures = append(cell.Failures, "peak_rss_above_maximum")
			r = append(r, cell)
		}
		allFail.Grid.Cells = append(allFail.Grid.Cells, r)
	}
	allFail.Grid.Selected = nil

	for name, chart := range map[string]Chart{
		"edge_depth_missing":     missing,
		"edge_depth_50_series":   DepthChart{Meta: Meta{Model: "50 configurations"}, Metric: "tg128", RefLine: 70, Series: fifty},
		"edge_envelope_all_fail": allFail,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := chart.Plot()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, exportBytes(t, p, PNG))
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, c := range map[string]Chart{
		"depth interval":   DepthChart{Interval: "iqr"},
		"depth ref":        DepthChart{RefLine: -70},
		"slots show":       SlotsChart{Show: "median"},
		"slots knee":       SlotsChart{Knee: nan},
		"latency metric":   LatencyChart{Metric: "itl"},
		"latency limit":    LatencyChart{TTFTLimitMs: -1},
		"ubatch interval":  UbatchChart{Interval: "ci99"},
		"repeat noise":     RepeatChart{NoiseFloor: 2},
		"repeat noise neg": RepeatChart{NoiseFloor: -0.01},
	} {
		if _, err := c.Plot(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestHalfWidth(t *testing.T) {
	cases := []struct {
		kind     IntervalKind
		sd       float64
		n        int
		want     float64
		wantKind IntervalKind
	}{
		{IntervalCI95, 0.53, 5, 2.7764451051977 * 0.53 / math.Sqrt(5), IntervalCI95}, // t(0.975, 4) = 2.776
		{IntervalCI95, 1, 2, 12.706204736174698 / math.Sqrt(2), IntervalCI95},        // t(0.975, 1) = 12.706
		{IntervalCI95, 1, 1, 1, IntervalSD},                                          // fallback
		{IntervalCI95, 1, 0, 1, IntervalSD},
		{"", 1, 30, 2.045229642132703 / math.Sqrt(30), IntervalCI95},
		{IntervalSD, 0.7, 5, 0.7, IntervalSD},
		{IntervalCI95, nan, 5, 0, IntervalCI95},
		{IntervalCI95, -1, 5, 0, IntervalCI95},
	}
	for _, c := range cases {
		got, kind := HalfWidth(c.kind, c.sd, c.n)
		if math.Abs(got-c.want) > 1e-9 || kind != c.wantKind {
			t.Errorf("HalfWidth(%q, %v, %d) = %v, %q; want %v, %q", c.kind, c.sd, c.n, got, kind, c.want, c.wantKind)
		}
	}
	var tally intervalTally
	tally.add(IntervalCI95, 1, 5)
	tally.add(IntervalCI95, 1, 1)
	if got := tally.caption(); got != "error bars: 95% t-interval of the mean (n = 5); ± 1 sd where n < 2" {
		t.Errorf("caption = %q", got)
	}
}

func TestCrossingDepth(t *testing.T) {
	pts := func(vals ...float64) []DepthPoint {
		var out []DepthPoint
		for i, v := range vals {
			out = append(out, DepthPoint{Depth: []int{0, 2048, 4096, 8192, 16384, 32768}[i], Mean: v})
		}
		return out
	}
	// The seed check: q8_0 KV leg, 75.34 at 4096 and 67.98 at 8192 cross 70 at about 7.07K.
	cr := CrossingDepth(pts(88.66, 79.64, 75.34, 67.98, 57.61, 43.75), 70)
	if cr.Status != Crosses || math.Abs(cr.Depth-7067.8) > 0.1 || fmtThousands(cr.Depth) != "7.07K" {
		t.Errorf("seed crossing = %+v (%s), want 7067.8 (7.07K)", cr, fmtThousands(cr.Depth))
	}
	if cr := CrossingDepth(pts(59.3, 55.29), 70); cr.Status != BelowAtStart || cr.Depth != 0 {
		t.Errorf("below at d0: %+v", cr)
	}
	if cr := CrossingDepth(pts(92, 88, 80), 70); cr.Status != NeverBelow {
		t.Errorf("never below: %+v", cr)
	}
	if cr := CrossingDepth(nil, 70); cr.Status != NoData {
		t.Errorf("no data: %+v", cr)
	}
	// A missing depth is skipped: interpolate between the bracketing measured depths.
	withGap := []DepthPoint{{Depth: 0, Mean: 90}, {Depth: 4096, Missing: true}, {Depth: 8192, Mean: 60}}
	if cr := CrossingDepth(withGap, 70); cr.Status != Crosses || math.Abs(cr.Depth-8192*2.0/3) > 1e-9 {
		t.Errorf("across a gap: %+v", cr)
	}
}

func TestFormatting(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1024: "1K", 8192: "8K", 1536: "1.5K", 3000: "3000", 32768: "32K", 512: "512"} {
		if got := fmtTokens(v); got != want {
			t.Errorf("fmtTokens(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{84.94: "84.94", 193.5: "193.5", 1883.3: "1883", nan: "n/a"} {
		if got := fmtNum(v); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", v, got, want)
		}
	}
	if got := failureSummary([]string{"one_or_more_passes_failed_load_slo", "forward:ttft_ms_p95_above_maximum", "forward:e2e_latency_ms_p95_above_maximum", "reverse:ttft_ms_p95_above_maximum", "custom_gate"}); got != "TTFT, E2E, custom_gate" {
		t.Errorf("failureSummary = %q", got)
	}
}
