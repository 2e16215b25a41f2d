package capacity

import (
	"slices"
	"strings"
	"testing"
)

// override returns a spec that changes one client level of the matching lifetimes.
func override(p *Plan, match func(LifetimeKey) bool, clients int, lv levelSpec) spec {
	return func(k LifetimeKey) []levelSpec {
		out := okLevels(p)(k)
		if match(k) {
			for i, c := range p.ClientLevels(k.Slots) {
				if c == clients {
					out[i] = lv
				}
			}
		}
		return out
	}
}

func is(pass, cand string, slots int) func(LifetimeKey) bool {
	return func(k LifetimeKey) bool {
		return (pass == "" || k.Pass == pass) && k.Candidate == cand && k.Slots == slots
	}
}

func wantFailures(t *testing.T, cell CellResult, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(cell.Failures, want) || cell.Passed != (len(want) == 0) {
		t.Errorf("P%d/C%d failures %q, want %q", cell.Slots, cell.Clients, cell.Failures, want)
	}
}

// Every other cell of the small plan must stay clean: the gate hits only what it should.
func wantOthersPass(t *testing.T, r Result, cand string, slots, clients int) {
	t.Helper()
	for _, c := range r.Candidates {
		for _, cell := range c.Cells {
			if (c.ID != cand || cell.Slots != slots || cell.Clients != clients) && !cell.Passed {
				t.Errorf("%s P%d/C%d fails %v too", c.ID, cell.Slots, cell.Clients, cell.Failures)
			}
		}
	}
}

func TestGateForwardTTFT(t *testing.T) {
	p := smallPlan()
	// TTFT 1001 ms > 1000 in the forward pass; E2E (1002 vs 1000 ms) and rate barely move.
	in := fixture{levels: override(p, is(PassForward, "a", 1), 1, uniform(1, 8, 1001, 1002, 0))}.inputs(t, p)
	r := mustAssemble(t, p, in)
	cell := cellOf(t, r, "a", 1, 1)
	wantFailures(t, cell, "forward:ttft_ms_p95_above_maximum", CodePassesFailedLoadSLO)
	if g := cell.Checks[0]; g.Gate != "forward:ttft_ms_p95" || *g.Observed != 1001 || *g.Limit != 1000 || g.Failure != "forward:ttft_ms_p95_above_maximum" {
		t.Errorf("check %+v", g)
	}
	wantOthersPass(t, r, "a", 1, 1)
}

func TestGateReverseTTFTOnly(t *testing.T) {
	p := smallPlan()
	// Same E2E, TTFT above the limit in the reverse pass only: rate and E2E unchanged.
	in := fixture{levels: override(p, is(PassReverse, "b", 2), 2, uniform(2, 8, 1001, 1100, 0))}.inputs(t, p)
	p.Limits.E2EMsP95Max = 5000
	r := mustAssemble(t, p, in)
	wantFailures(t, cellOf(t, r, "b", 2, 2), "reverse:ttft_ms_p95_above_maximum", CodePassesFailedLoadSLO)
	wantOthersPass(t, r, "b", 2, 2)
}

func TestGateE2EInBothPasses(t *testing.T) {
	p := smallPlan()
	p.Limits.E2EMsP95Max = 999 // every cell's E2E is 1000 ms
	r := mustAssemble(t, p, fixture{}.inputs(t, p))
	for _, c := range r.Candidates {
		for _, cell := range c.Cells {
			wantFailures(t, cell, "forward:e2e_latency_ms_p95_above_maximum", "reverse:e2e_latency_ms_p95_above_maximum", CodePassesFailedLoadSLO)
		}
		if c.Selected != nil || c.SelectionNote != "no cell passes every gate" {
			t.Errorf("%s selected %+v (%s)", c.ID, c.Selected, c.SelectionNote)
		}
	}
	// A limit equal to the observed value passes: "above" means strictly above.
	p.Limits.E2EMsP95Max = 1000
	r = mustAssemble(t, p, fixture{}.inputs(t, p))
	wantFailures(t, cellOf(t, r, "a", 1, 1))
}

func TestGateCompletionRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		lv   func(levelSpec) levelSpec
	}{
		{"http 500", func(l levelSpec) levelSpec { l.status = map[int]int{3: 500}; return l }},
		{"short answer", func(l levelSpec) levelSpec { l.tokens = map[int]int{3: 63}; return l }},
		{"stream error", func(l levelSpec) levelSpec { l.errs = map[int]string{3: "invalid UTF-8"}; return l }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := smallPlan()
			in := fixture{levels: override(p, is(PassForward, "a", 2), 1, tc.lv(uniform(1, 8, 200, 1000, 0)))}.inputs(t, p)
			r := mustAssemble(t, p, in)
			cell := cellOf(t, r, "a", 2, 1)
			wantFailures(t, cell, "forward:completion_rate_below_minimum", CodePassesFailedLoadSLO)
			if cell.CompletionRateWorst != 7.0/8 || cell.Passes[0].Completed != 7 || cell.Passes[0].Attempted != 8 {
				t.Errorf("completion %+v", cell.Passes[0])
			}
			// A plan that tolerates one failure in eight passes the cell.
			p.Limits.CompletionRateMin = 0.875
			wantFailures(t, cellOf(t, mustAssemble(t, p, in), "a", 2, 1))
		})
	}
}

func TestGateGenerationRateSpread(t *testing.T) {
	p := smallPlan()
	// Reverse pass: same requests, 200 ms pauses between them: rate 54.5 vs 64 tok/s, spread
	// 16.1% > 15%, E2E unchanged.
	in := fixture{levels: override(p, is(PassReverse, "a", 1), 1, uniform(1, 8, 200, 1000, 200))}.inputs(t, p)
	r := mustAssemble(t, p, in)
	cell := cellOf(t, r, "a", 1, 1)
	wantFailures(t, cell, CodeRateSpreadAbove)
	if s := *cell.GenerationRateSpread; s < 0.16 || s > 0.162 {
		t.Errorf("spread %g, want (64 - 54.47) / 59.23 = 0.161", s)
	}
	wantOthersPass(t, r, "a", 1, 1)
	p.Limits.GenRateSpreadMax = 0.17
	wantFailures(t, cellOf(t, mustAssemble(t, p, in), "a", 1, 1))
}

func TestGateE2ESpread(t *testing.T) {
	p := smallPlan()
	// Reverse: E2E 1500 ms; forward: E2E 1000 ms with pauses so both windows are 12 s: equal
	// rates, E2E spread 500 / 1250 = 40%.
	in := fixture{levels: func(k LifetimeKey) []levelSpec {
		out := okLevels(p)(k)
		if k.Candidate == "b" && k.Slots == 2 {
			if k.Pass == PassReverse {
				out[0] = uniform(1, 8, 200, 1500, 0)
			} else {
				out[0] = uniform(1, 8, 200, 1000, 4000.0/7)
			}
		}
		return out
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	cell := cellOf(t, r, "b", 2, 1)
	wantFailures(t, cell, CodeE2ESpreadAbove)
	if *cell.E2EP95Spread != 0.4 {
		t.Errorf("E2E spread %g, want 0.4", *cell.E2EP95Spread)
	}
	wantOthersPass(t, r, "b", 2, 1)
}

func TestGatePeakRSSWorstPass(t *testing.T) {
	p := smallPlan()
	in := fixture{rss: func(k LifetimeKey) []byte {
		if k == (LifetimeKey{PassForward, "a", 2}) { // the first pass: "worst", not "last"
			return rssRecord(5 * 1024 * 1024) // 5120 MiB, the project's own record format
		}
		return rssTimeV(3 * 1024 * 1024)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "a", 2, c)
		wantFailures(t, cell, CodePeakRSSAbove)
		if cell.PeakRSSMiB != 5120 {
			t.Errorf("peak RSS %g MiB, want the worst pass 5120", cell.PeakRSSMiB)
		}
		wantFailures(t, cellOf(t, r, "a", 1, c))
	}
	for _, l := range candOf(t, r, "a").Lifetimes {
		want := RSSFormatGNUTime
		if l.Pass == PassForward && l.Slots == 2 {
			want = RSSFormatRecord
		}
		if l.RSSFormat != want {
			t.Errorf("%s p%d RSS format %s, want %s", l.Pass, l.Slots, l.RSSFormat, want)
		}
	}
}

const kleidi = "CPU_KLEIDIAI model buffer size =   812.00 MiB"

func markerPlan() *Plan {
	p := smallPlan()
	p.Candidates[0].Markers = Markers{Must: []string{`CPU_KLEIDIAI model buffer`}}
	p.Candidates[1].Markers = Markers{MustNot: []string{`CPU_KLEIDIAI model buffer`}}
	return p
}

func TestGateMarkerMissingUsesLastLoadBlock(t *testing.T) {
	p := markerPlan()
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "a" && k.Pass == PassReverse && k.Slots == 1 {
			return serverLog([]string{kleidi}, nil) // only in the dry fitting pass: does not count
		}
		if k.Candidate == "a" {
			return serverLog(nil, []string{kleidi})
		}
		return serverLog(nil, nil)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "a", 1, c)
		wantFailures(t, cell, CodeMarkerMissing)
		g := cell.Checks[len(cell.Checks)-1]
		if g.Gate != "backend_markers_required" || !strings.Contains(g.Detail, "reverse:") || strings.Contains(g.Detail, "forward:") {
			t.Errorf("check %+v", g)
		}
		wantFailures(t, cellOf(t, r, "a", 2, c))
		wantFailures(t, cellOf(t, r, "b", 1, c))
	}
	l := candOf(t, r, "a").Lifetimes[0]
	if l.LoadBlocks != 2 || l.LoadBlockLine != 8 || !l.Markers[0].Found || l.Markers[0].Line != 10 {
		t.Errorf("forward p1 lifetime %+v", l)
	}
}

func TestGateMarkerForbiddenPresent(t *testing.T) {
	p := markerPlan()
	in := fixture{logs: func(k LifetimeKey) []byte {
		switch {
		case k.Candidate == "a":
			return serverLog(nil, []string{kleidi})
		case k.Slots == 2 && k.Pass == PassForward:
			return serverLog(nil, []string{kleidi}) // in the real load: forbidden
		case k.Slots == 1:
			return serverLog([]string{kleidi}, nil) // only in the dry pass: allowed
		}
		return serverLog(nil, nil)
	}}.inputs(t, p)
	r := mustAssemble(t, p, in)
	for _, c := range []int{1, 2} {
		cell := cellOf(t, r, "b", 2, c)
		wantFailures(t, cell, CodeMarkerForbidden)
		if g := cell.Checks[len(cell.Checks)-1]; !strings.Contains(g.Detail, "forward:") || !strings.Contains(g.Detail, "present (line 10)") {
			t.Errorf("check %+v", g)
		}
		wantFailures(t, cellOf(t, r, "b", 1, c))
	}
}

func TestGateMarkersNeedALoadBlock(t *testing.T) {
	p := markerPlan()
	in := fixture{logs: func(k LifetimeKey) []byte {
		if k.Candidate == "b" && k.Slots == 2 && k.Pass == PassReverse { // default log level: no load lines
			return []byte("0.00.033.737 I srv    load_model: loading model '/srv/models/tiny.gguf'\n0.00.328.614 I srv  llama_server: model loaded\n")
		}
		return serverLog(nil, []string{kleidi})
	}}.inputs(t, p)
	p.Candidates[1].Markers = Markers{} // no markers: the log is fingerprinted, not read
	if _, err := Assemble(p, in); err != nil {
		t.Fatal(err)
	}
	p = markerPlan()
	_, err := Assemble(p, in)
	if err == nil || !strings.Contains(err.Error(), "--server-log reverse/b/p2: log/reverse/b/p2.log:1: no model-load block") || !strings.Contains(err.Error(), "-lv 4") {
		t.Fatalf("err = %v", err)
	}
}

func qualityFiles(p *Plan, outcomes func(QualityKey) string) map[QualityKey]InputFile {
	m := map[QualityKey]InputFile{}
	for _, c := range p.Candidates {
		for _, s := range p.Slots {
			k := QualityKey{c.ID, s}
			var b strings.Builder
			b.WriteString(`{"schema":"` + SchemaQuality + `","candidate":"` + c.ID + `","slots":` + string(rune('0'+s)) + `,"cases":[`)
			for i, o := range outcomes(k) {
				if i > 0 {
					b.WriteString(",")
				}
				out := "pass"
				if o == 'F' {
					out = "fail"
				}
				b.WriteString(`{"id":"c` + string(rune('a'+i)) + `","outcome":"` + out + `"}`)
			}
			b.WriteString("]}")
			m[k] = InputFile{"quality/" + k.String() + ".json", []byte(b.String())}
		}
	}
	return m
}

func qualityPlan(floor, retention float64) *Plan {
	p := smallPlan()
	p.Limits.QualityFloor, p.Limits.QualityRetentionMin = &floor, &retention
	p.Defaults()
	return p
}

func TestGateQualityFloor(t *testing.T) {
	p := qualityPlan(0.75, 0.5)
	in := fixture{}.inputs(t, p)
	in.Quality = qualityFiles(p, func(k QualityKey) string {
		if k.Candidate == "b" {
			return "PPPFFFPP" // 5/8 = 0.625 < 0.75
		}
		return "PPPPPPPF"
	})
	r := mustAssemble(t, p, in)
	for _, cell := range candOf(t, r, "b").Cells {
		wantFailures(t, cell, CodeQualityFailed)
	}
	for _, cell := range candOf(t, r, "a").Cells {
		wantFailures(t, cell)
	}
	q := candOf(t, r, "b").Quality[0]
	if q.Score != 5 || q.Cases != 8 || !slices.Equal(q.Why, []string{"below_floor"}) || *q.Retention != 5.0/7 {
		t.Errorf("quality %+v", q)
	}
	if candOf(t, r, "b").Selected != nil {
		t.Error("b selected despite failing quality everywhere")
	}
}

func TestGateQualityRetention(t *testing.T) {
	p := qualityPlan(0.5, 0.95)
	in := fixture{}.inputs(t, p)
	in.Quality = qualityFiles(p, func(k QualityKey) string {
		if k.Candidate == "b" {
			return "PPPPPPFF" // 6/8 vs a's 7/8: retention 85.7% < 95%
		}
		return "PPPPPPPF"
	})
	r := mustAssemble(t, p, in)
	wantFailures(t, cellOf(t, r, "b", 1, 1), CodeQualityFailed)
	wantFailures(t, cellOf(t, r, "a", 1, 1))
	if q := candOf(t, r, "b").Quality[1]; !slices.Equal(q.Why, []string{"retention_below_minimum"}) || q.Reference != "a" {
		t.Errorf("quality %+v", q)
	}
}

func TestGateQualityStability(t *testing.T) {
	p := qualityPlan(0.5, 0.5)
	in := fixture{}.inputs(t, p)
	in.Quality = qualityFiles(p, func(k QualityKey) string {
		if k.Candidate == "a" && k.Slots == 2 {
			return "PPPPPPFP" // same score, a different case failed: unstable
		}
		return "PPPPPPPF"
	})
	r := mustAssemble(t, p, in)
	for _, cell := range candOf(t, r, "a").Cells {
		wantFailures(t, cell, CodeQualityFailed)
	}
	for _, q := range candOf(t, r, "a").Quality {
		if q.Stable || !slices.Equal(q.Why, []string{"outcomes_unstable"}) {
			t.Errorf("quality %+v", q)
		}
	}
	wantFailures(t, cellOf(t, r, "b", 2, 2))
}

// TestGateOrder: a cell failing every gate lists every code, in the fixed order.
func TestGateOrder(t *testing.T) {
	p := markerPlan()
	p.Candidates[0].Markers.MustNot = []string{`CPU_Mapped`}
	floor := 0.9
	p.Limits.QualityFloor = &floor
	p.Defaults()
	in := fixture{
		levels: func(k LifetimeKey) []levelSpec {
			out := okLevels(p)(k)
			if k.Candidate == "a" && k.Slots == 1 {
				lv := uniform(1, 8, 1500, 6000, 0)
				if k.Pass == PassReverse {
					lv = uniform(1, 8, 3000, 9000, 0)
				}
				lv.status = map[int]int{7: 503}
				out[0] = lv
			}
			return out
		},
		rss: func(k LifetimeKey) []byte { return rssTimeV(8 * 1024 * 1024) },
	}.inputs(t, p)
	in.Quality = qualityFiles(p, func(QualityKey) string { return "PPPPPPPF" })
	r := mustAssemble(t, p, in)
	wantFailures(t, cellOf(t, r, "a", 1, 1),
		"forward:ttft_ms_p95_above_maximum", "forward:e2e_latency_ms_p95_above_maximum", "forward:completion_rate_below_minimum",
		"reverse:ttft_ms_p95_above_maximum", "reverse:e2e_latency_ms_p95_above_maximum", "reverse:completion_rate_below_minimum",
		CodePassesFailedLoadSLO, CodeRateSpreadAbove, CodeE2ESpreadAbove, CodePeakRSSAbove, CodeQualityFailed,
		CodeMarkerMissing, CodeMarkerForbidden)
	var gates []string
	for _, g := range cellOf(t, r, "a", 1, 1).Checks {
		gates = append(gates, g.Gate)
	}
	want := []string{"forward:ttft_ms_p95", "forward:e2e_latency_ms_p95", "forward:completion_rate",
		"reverse:ttft_ms_p95", "reverse:e2e_latency_ms_p95", "reverse:completion_rate", "load_slo_every_pass",
		"generation_rate_spread", "e2e_p95_spread", "peak_rss_mib", "quality", "backend_markers_required", "backend_markers_forbidden"}
	if !slices.Equal(gates, want) {
		t.Errorf("gates %v\nwant  %v", gates, want)
	}
}

// TestGateNoCompletedRequest: with every request failed the p95s are undefined and fail.
func TestGateNoCompletedRequest(t *testing.T) {
	p := smallPlan()
	lv := uniform(1, 8, 200, 1000, 0)
	lv.status = map[int]int{}
	for i := range 8 {
		lv.status[i] = 503
	}
	in := fixture{levels: override(p, is(PassForward, "a", 1), 1, lv)}.inputs(t, p)
	cell := cellOf(t, mustAssemble(t, p, in), "a", 1, 1)
	wantFailures(t, cell, "forward:ttft_ms_p95_above_maximum", "forward:e2e_latency_ms_p95_above_maximum",
		"forward:completion_rate_below_minimum", CodePassesFailedLoadSLO, CodeRateSpreadAbove, CodeE2ESpreadAbove)
	if cell.Passes[0].GenerationRate == nil || *cell.Passes[0].GenerationRate != 0 || cell.Passes[0].TTFTMsP95 != nil || cell.Checks[0].Detail == "" {
		t.Errorf("forward pass %+v, check %+v", cell.Passes[0], cell.Checks[0])
	}
}
