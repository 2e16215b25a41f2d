package capacity

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// queueRecords are the measured records of a made-up probe: requests due at the schedule's
// offsets (ms), served first come first served by `slots` slots taking serviceMs each, so a
// rate above slots/serviceMs builds a queue. Latencies stay far inside the test's SLO: only the
// sustain rule can tell a saturated probe from one that keeps up.
func queueRecords(due []float64, slots int, serviceMs float64, nPredict int) []ServingRecord {
	free := make([]float64, slots)
	var recs []ServingRecord
	for i, d := range due {
		k := 0
		for j := range free {
			if free[j] < free[k] {
				k = j
			}
		}
		start := max(d, free[k])
		end := start + serviceMs
		free[k] = end
		sched, ft := d, start+5
		recs = append(recs, ServingRecord{Phase: PhaseMeasured, Seq: i, ScheduledMs: &sched, SendMs: d, FirstTokenMs: &ft,
			EndMs: end, Tokens: nPredict, Events: nPredict, HTTPStatus: 200})
	}
	return recs
}

func constantDue(rate float64, n int) []float64 {
	var out []float64
	for i := range n {
		out = append(out, float64(i)*1000/rate)
	}
	return out
}

func wideSLOServing() *Serving {
	s := &Serving{Arrival: Arrival{Process: ArrivalConstant}, Rates: []float64{3, 6}, Requests: 16, Warmups: 0,
		SLO: SLO{TTFTMs: 600000, TPOTMs: 600000, Percentile: 95, CompletionRateMin: 1}, MaxInFlight: 256, ScheduleSlackMs: 10}
	return s
}

// TestSustainRule: a server that serves 4.5 req/s (2 slots, 444 ms a request) keeps up with 3
// req/s and passes; offered 6 req/s over the same window it answers every request within the
// (wide) SLO, yet its completions run at 4.5/s and its queue grows: the probe fails
// rate:not_sustained, naming both rates. A probe whose completions keep their pace but whose
// last third piles up in flight fails on the in-flight growth alone.
func TestSustainRule(t *testing.T) {
	s := wideSLOServing()
	ok := ProbeMetrics(s, 4, 0, ProbeSweep, 3, queueRecords(constantDue(3, 31), 2, 444, 4))
	if !ok.Passed || ok.Sustain == nil || !ok.Sustain.Sustained || math.Abs(*ok.Sustain.Ratio-1) > 0.02 {
		t.Errorf("3 req/s on a 4.5 req/s server: passed %v, sustain %+v, failures %v; want sustained (ratio ~1)", ok.Passed, ok.Sustain, ok.Failures)
	}
	sat := ProbeMetrics(s, 4, 1, ProbeSweep, 6, queueRecords(constantDue(6, 61), 2, 444, 4))
	sc := sat.Sustain
	if sat.Passed || !slices.Equal(sat.Failures, []string{CodeNotSustained}) || sc == nil || sc.Sustained {
		t.Fatalf("6 req/s on a 4.5 req/s server: passed %v, failures %v, sustain %+v; want only %s", sat.Passed, sat.Failures, sc, CodeNotSustained)
	}
	if math.Abs(*sc.DepartureRate-4.5) > 0.1 || math.Abs(*sc.OfferedRate-6) > 0.01 || sc.InFlightGrowth < 4 {
		t.Errorf("saturated: departures %v/s, offered %v/s, growth %v (limit %v); want 4.5, 6 and the queue growing (1.5/s over a third of 10 s: ~5)", *sc.DepartureRate, *sc.OfferedRate, sc.InFlightGrowth, sc.GrowthLimit)
	}
	g := sat.Checks[len(sat.Checks)-1]
	if g.Gate != "sustained" || g.Failure != CodeNotSustained || !strings.Contains(g.Detail, "4.5/s against arrivals 6/s") {
		t.Errorf("check %+v: want the sustained gate naming 4.5/s against 6/s", g)
	}
	if pt := sat.Point(); pt.Passed || !pt.Saturated {
		t.Errorf("point %+v: want failed and saturated", pt)
	}

	// In flight piles up in the last third while the completions' pace holds: 31 arrivals at 1/s,
	// the first 20 answered in 100 ms, the last 11 all at 30.5 s.
	due := constantDue(1, 31)
	recs := queueRecords(due, 1, 100, 4)
	for i := 20; i < len(recs); i++ {
		recs[i].EndMs = 30500
	}
	pile := ProbeMetrics(s, 4, 0, ProbeSweep, 1, recs)
	if pc := pile.Sustain; pile.Passed || pc.Sustained || *pc.Ratio < SustainRatioMin || pc.InFlightGrowth <= pc.GrowthLimit {
		t.Errorf("pile-up: passed %v, sustain %+v; want the ratio kept and the growth to fail it", pile.Passed, pc)
	} else if d := pile.Checks[len(pile.Checks)-1].Detail; !strings.Contains(d, "in flight grew") {
		t.Errorf("pile-up detail %q: want the in-flight growth named", d)
	}

	// Too few completions to show a pace: not sustained.
	none := queueRecords(constantDue(2, 20), 2, 100, 4)
	for i := 1; i < len(none); i++ {
		none[i].HTTPStatus, none[i].Error = 503, "busy"
	}
	if pr := ProbeMetrics(s, 4, 0, ProbeSweep, 2, none); pr.Sustain.Sustained || !slices.Contains(pr.Failures, CodeNotSustained) {
		t.Errorf("one completion of 20: sustain %+v, failures %v; want %s", pr.Sustain, pr.Failures, CodeNotSustained)
	}
}

// TestSweepStopsAtSaturation: the sweep stops climbing at its first unsustained rate (the
// rates above it are skipped); the search then bisects below it; a failure that is not
// saturation (an SLO) does not stop the sweep.
func TestSweepStopsAtSaturation(t *testing.T) {
	s := wideSLOServing()
	s.Rates = []float64{1, 2, 4, 8}
	if r, kind, done, _ := s.NextProbe([]ProbePoint{{Rate: 1, Passed: true}, {Rate: 2, Passed: false}}); done || kind != ProbeSweep || r != 4 {
		t.Errorf("after an SLO failure at 2: next %g %s done %v; want the sweep to go on to 4", r, kind, done)
	}
	if _, _, done, _ := s.NextProbe([]ProbePoint{{Rate: 1, Passed: true}, {Rate: 2, Passed: false, Saturated: true}}); !done {
		t.Error("after saturation at 2 with no search: want done, the sweep's 4 and 8 skipped")
	}
	s.Search = &RateSearch{Lo: 1, Hi: 64, Tolerance: 0.1, MaxProbes: 8}
	r, kind, done, _ := s.NextProbe([]ProbePoint{{Rate: 1, Passed: true}, {Rate: 2, Passed: false, Saturated: true}})
	if done || kind != ProbeSearch || r != 1.5 {
		t.Errorf("after saturation at 2: next %g %s done %v; want the search to bisect at 1.5", r, kind, done)
	}
}

// TestServingAssemblyReportsTheKnee: a simulated server saturating at 5 req/s: the sweep 1, 2,
// 8 finds 8 unsustained, the search brackets below it, and the lifetime's saturation names the
// knee; every passing probe was sustained and ran at least the window's minimum.
func TestServingAssemblyReportsTheKnee(t *testing.T) {
	p := servingPlan()
	p.Serving.Rates = []float64{1, 2, 8, 16}
	r := mustAssemble(t, p, servingInputs(t, p, simServer{capacity: 5}))
	sv := candOf(t, r, "a").Serving[0]
	sat := sv.Saturation
	if sat == nil || !sat.Found || sat.LowestUnsustained == nil || sat.KneeRate == nil || *sat.KneeRate > 5 || *sat.LowestUnsustained <= 5 {
		t.Fatalf("saturation %+v: want a knee at or below 5 and the lowest unsustained rate above it", sat)
	}
	if !slices.Equal(sat.SkippedSweepRates, []float64{16}) {
		t.Errorf("skipped sweep rates %v, want [16]: the sweep stops at 8", sat.SkippedSweepRates)
	}
	for _, pr := range sv.Probes {
		if pr.Passed && (pr.Sustain == nil || !pr.Sustain.Sustained) {
			t.Errorf("probe %d at %g passed without being sustained: %+v", pr.Probe, pr.OfferedRate, pr.Sustain)
		}
		if pr.Requests != p.Serving.ProbeRequests(pr.OfferedRate) || pr.Requests < DefaultSustainMinRequests {
			t.Errorf("probe %d at %g: %d requests, want %d", pr.Probe, pr.OfferedRate, pr.Requests, p.Serving.ProbeRequests(pr.OfferedRate))
		}
	}
	if r.Definitions["serving_sustained"] == "" {
		t.Error("no serving_sustained definition")
	}
}

// TestServingV1FileKeepsItsRules: a serving file written before the sustain rule
// (serving-requests/v1, every probe the plan's requests) is assembled as it was: no sustain
// check, no saturation, no new definition, so its bundle re-makes the same study.json.
func TestServingV1FileKeepsItsRules(t *testing.T) {
	p := servingPlan()
	p.Serving.Search = nil
	in := servingInputs(t, p, simServer{capacity: 100})
	k := LifetimeKey{PassForward, "a", 1}
	f := in.Serving[k]
	// Rewrite as a v1 file: the plan's 16 requests per probe.
	var lines [][]byte
	for i, ln := range bytes.Split(bytes.TrimSpace(f.Data), []byte("\n")) {
		if i == 0 {
			ln = bytes.Replace(ln, []byte(SchemaServingRequests), []byte(SchemaServingRequestsV1), 1)
			lines = append(lines, ln)
			continue
		}
		var r struct {
			Phase string `json:"phase"`
			Seq   int    `json:"seq"`
		}
		if err := json.Unmarshal(ln, &r); err != nil {
			t.Fatal(err)
		}
		if r.Phase == PhaseMeasured && r.Seq >= p.Serving.Requests {
			continue
		}
		lines = append(lines, ln)
	}
	f.Data = append(bytes.Join(lines, []byte("\n")), '\n')
	in.Serving[k] = f
	r := mustAssemble(t, p, in)
	sv := candOf(t, r, "a").Serving[0]
	if sv.Saturation != nil || r.Definitions["serving_sustained"] != "" {
		t.Errorf("v1 file: saturation %+v, definition %q; want neither", sv.Saturation, r.Definitions["serving_sustained"])
	}
	for _, pr := range sv.Probes {
		if pr.Sustain != nil || pr.Requests != 16 || slices.ContainsFunc(pr.Checks, func(g GateCheck) bool { return g.Gate == "sustained" }) {
			t.Errorf("v1 probe %d: sustain %+v, %d requests; want no sustain check and 16 requests", pr.Probe, pr.Sustain, pr.Requests)
		}
	}
	js, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte("sustain")) || bytes.Contains(js, []byte("saturation")) {
		t.Error("a v1 file's study.json mentions the sustain rule")
	}
}

// TestSustainWindowPlanFields: serving.sustain is written only when given (a plan without it
// keeps its SHA-256), each field too; an explicit zero is kept and refused with its range,
// never replaced by the default.
func TestSustainWindowPlanFields(t *testing.T) {
	base := servingPlan()
	sha0, b0, err := base.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b0, []byte("sustain")) {
		t.Errorf("a plan without sustain writes it: %s", b0)
	}
	if base.Serving.ProbeRequests(5) != 51 || base.Serving.ProbeRequests(0.5) != 32 || base.Serving.ProbeRequests(1e6) != 100000 {
		t.Errorf("default windows: %d %d %d; want 51 (5/s × 10 s + 1), 32, 100000", base.Serving.ProbeRequests(5), base.Serving.ProbeRequests(0.5), base.Serving.ProbeRequests(1e6))
	}
	// Decoded from JSON: an explicit zero is frozen as written and refused with its range.
	_, js, _ := base.SHA256()
	for _, c := range []struct{ field, path, want string }{
		{`"min_requests":0`, "serving.sustain.min_requests", "want 2 to 100000"},
		{`"min_seconds":0`, "serving.sustain.min_seconds", "want a window in (0, 3600]"},
	} {
		doc := bytes.Replace(js, []byte(`"serving":{`), []byte(`"serving":{"sustain":{`+c.field+`},`), 1)
		p, err := Decode("plan.json", doc)
		if err != nil {
			t.Fatalf("%s: %v", c.field, err)
		}
		p.Defaults()
		sha, frozen, _ := p.SHA256()
		if sha == sha0 || !bytes.Contains(frozen, []byte(c.field)) {
			t.Errorf("%s: frozen %s; want the zero kept", c.field, frozen)
		}
		var got []string
		for _, pr := range study.Errors(Validate(p, ValidateOptions{})) {
			if pr.Path == c.path {
				got = append(got, pr.Msg)
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s: problems at %s %v; want one with %q", c.field, c.path, got, c.want)
		}
	}
	one, five := 2, 0.5
	base.Serving.Sustain = &SustainWindow{MinRequests: &one, MinSeconds: &five}
	if errs := study.Errors(Validate(base, ValidateOptions{})); len(errs) > 0 {
		t.Errorf("a valid window refused: %v", errs)
	}
	if n := base.Serving.ProbeRequests(2); n != 16 {
		t.Errorf("requests 16, min_requests 2, min_seconds 0.5 at 2/s: %d requests, want 16", n)
	}
}

// unit is an arrival of a made-up probe: due at due ms, ended at end ms, completed or not.
func unit(due, end float64, completed bool) arrivalUnit {
	return arrivalUnit{due: due, end: end, completed: completed}
}

// TestSustainAtItsEdges: the sustain rule's figures on hand-made arrivals, each at an edge of
// the rule. The in-flight means are exact here: every count is constant over its third.
func TestSustainAtItsEdges(t *testing.T) {
	// In flight 1 over the middle third (500-1500-2500 ... 3500 ms: one arrival due at 1500
	// runs to 2500) and 4 over the last third: growth 3, exactly the floor of 3: sustained.
	edge := []arrivalUnit{unit(500, 501, true), unit(1500, 2500, true),
		unit(2500, 3500.5, true), unit(2500.5, 3500.5, true), unit(2501, 3500.5, true), unit(2501.5, 3500.5, true),
		unit(3500, 3501, true)}
	sc := Sustain(edge)
	if sc.Arrivals != 7 || sc.WindowS != 3 || sc.InFlightMiddle != 1 || sc.InFlightLast != 4 || sc.InFlightGrowth != 3 || sc.GrowthLimit != 3 {
		t.Errorf("edge: %+v; want 7 arrivals over 3 s, in flight 1 then 4, growth 3 at the limit 3", sc)
	}
	if sc.OfferedRate == nil || *sc.OfferedRate != 2 || sc.DepartureRate == nil || *sc.DepartureRate != 2 || sc.Ratio == nil || *sc.Ratio != 1 || !sc.Sustained {
		t.Errorf("edge: offered %s departures %s ratio %s sustained %v; want 2/s, 2/s, 1, sustained", ptrText(sc.OfferedRate), ptrText(sc.DepartureRate), ptrText(sc.Ratio), sc.Sustained)
	}
	// One more arrival in flight over the last third: growth 4 > 3, not sustained.
	more := append(slices.Clone(edge), unit(2502, 3500.5, true))
	if sc := Sustain(more); sc.InFlightGrowth != 4 || sc.Sustained {
		t.Errorf("growth 4: %+v; want not sustained", sc)
	}

	// Completions at exactly 95% of the arrivals' pace: 9 arrivals over 9.5 s, completions
	// over 10 s. Sustained (the rule is "at least").
	var pace []arrivalUnit
	for i := range 9 {
		pace = append(pace, unit(float64(i)*1187.5, 100+float64(i)*1250, true))
	}
	if sc := Sustain(pace); sc.Ratio == nil || *sc.Ratio != SustainRatioMin || !sc.Sustained {
		t.Errorf("ratio at the minimum: %+v; want ratio %g and sustained", sc, SustainRatioMin)
	}
	// 10 arrivals: the growth limit is still the floor; 100: 10% of them.
	if sc := Sustain(make([]arrivalUnit, 100)); sc.GrowthLimit != 10 {
		t.Errorf("100 arrivals: growth limit %v, want 10", sc.GrowthLimit)
	}

	// Two arrivals are enough to measure.
	two := Sustain([]arrivalUnit{unit(0, 100, true), unit(1000, 1100, true)})
	if two.OfferedRate == nil || *two.OfferedRate != 1 || two.DepartureRate == nil || *two.DepartureRate != 1 || !two.Sustained {
		t.Errorf("two arrivals: %+v; want 1/s both ways, sustained", two)
	}
	// Two arrivals due at the same instant, ending together: no span, no rate, nothing in flight
	// over an empty window.
	same := Sustain([]arrivalUnit{unit(500, 600, true), unit(500, 600, true)})
	if same.OfferedRate != nil || same.DepartureRate != nil || same.Ratio != nil || same.InFlightMiddle != 0 || same.InFlightLast != 0 || same.Sustained {
		t.Errorf("no span: %+v; want no rates, nothing in flight, not sustained", same)
	}
	// Exactly two of four completed: the departure rate is theirs.
	half := Sustain([]arrivalUnit{unit(0, 100, true), unit(1000, 1100, false), unit(2000, 2100, false), unit(3000, 2100.5+998, true)})
	if half.DepartureRate == nil || math.Abs(*half.DepartureRate-1000.0/2998.5) > 1e-12 {
		t.Errorf("two of four completed: departures %v, want 1 per 2998.5 ms", half.DepartureRate)
	}
	// One arrival: nothing measured.
	if one := Sustain([]arrivalUnit{unit(0, 100, true)}); one.OfferedRate != nil || one.Sustained || one.GrowthLimit != SustainGrowthFloor {
		t.Errorf("one arrival: %+v", one)
	}
}

// TestSustainGateDetail: the sustained check's words for each way the rule fails; a ratio at
// exactly the minimum is not the cause named when the growth failed.
func TestSustainGateDetail(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   SustainCheck
		want string
	}{
		{"sustained", SustainCheck{Arrivals: 5, OfferedRate: fp(2), DepartureRate: fp(2), Ratio: fp(1), Sustained: true}, ""},
		{"no span", SustainCheck{Arrivals: 5}, "the schedule's arrivals span no time: the window shows nothing sustained"},
		{"no completions", SustainCheck{Arrivals: 5, OfferedRate: fp(2)}, "fewer than 2 of 5 arrivals completed: completions did not keep up with arrivals at 2/s"},
		{"behind", SustainCheck{Arrivals: 21, WindowS: 10, OfferedRate: fp(2), DepartureRate: fp(1.5), Ratio: fp(0.75)},
			"completions 1.5/s against arrivals 2/s (75.0% < 95%) over 10 s: completions fell behind the arrivals"},
		{"growth at the ratio's minimum", SustainCheck{Arrivals: 21, WindowS: 10, OfferedRate: fp(2), DepartureRate: fp(1.9), Ratio: fp(SustainRatioMin),
			InFlightMiddle: 1, InFlightLast: 5, InFlightGrowth: 4, GrowthLimit: 3},
			"in flight grew from 1.0 (the window's middle third, time-averaged) to 5.0 (its last third), by 4.0, at most 3.0: completions fell behind the arrivals"},
	} {
		g := tc.sc.gate()
		if g.Gate != "sustained" || g.Passed != tc.sc.Sustained || g.Detail != tc.want || *g.Limit != SustainRatioMin || g.Observed != tc.sc.Ratio {
			t.Errorf("%s: %+v, detail %q; want %q", tc.name, g, g.Detail, tc.want)
		}
	}
}

// TestSaturationOf: the knee is the highest sustained rate below the lowest unsustained one
// (a sustained probe at that rate is not below it); the first probe at the lowest unsustained
// rate gives the departure rate; the sweep's rates after the probes it ran are the skipped ones.
func TestSaturationOf(t *testing.T) {
	s := wideSLOServing()
	s.Rates = []float64{1, 2, 4, 8}
	probe := func(kind string, rate float64, sustained bool, dep float64) ProbeResult {
		return ProbeResult{Kind: kind, OfferedRate: rate, Sustain: &SustainCheck{Sustained: sustained, DepartureRate: fp(dep)}}
	}
	st := saturationOf(s, []ProbeResult{
		probe(ProbeSweep, 1, true, 1), probe(ProbeSweep, 2, true, 2), probe(ProbeSweep, 4, false, 3.1),
		probe(ProbeSearch, 3, true, 3), probe(ProbeSearch, 3.5, false, 3.2), probe(ProbeSearch, 3.5, false, 9), probe(ProbeSearch, 3.5, true, 3.5),
		{Kind: ProbeSearch, OfferedRate: 0.5}, // judged before the sustain rule: not counted
	})
	if !st.Found || *st.KneeRate != 3 || *st.LowestUnsustained != 3.5 || *st.SaturatedRate != 3.2 || !slices.Equal(st.SkippedSweepRates, []float64{8}) ||
		st.Note != "saturates between 3/s (sustained) and 3.5/s (not sustained)" || st.MinRequests != DefaultSustainMinRequests || st.MinSeconds != DefaultSustainMinSeconds {
		t.Errorf("saturation %+v", st)
	}
	st = saturationOf(s, []ProbeResult{probe(ProbeSweep, 1, true, 1), probe(ProbeSweep, 2, true, 2), probe(ProbeSweep, 4, true, 4), probe(ProbeSweep, 8, true, 8)})
	if st.Found || *st.KneeRate != 8 || st.LowestUnsustained != nil || len(st.SkippedSweepRates) != 0 || st.Note != "every probe was sustained: saturation is above 8/s" {
		t.Errorf("all sustained: %+v", st)
	}
	st = saturationOf(s, []ProbeResult{probe(ProbeSweep, 1, false, 0.5)})
	if !st.Found || st.KneeRate != nil || *st.SaturatedRate != 0.5 || !slices.Equal(st.SkippedSweepRates, []float64{2, 4, 8}) || st.Note != "not sustained from the lowest rate probed (1/s)" {
		t.Errorf("saturated from the start: %+v", st)
	}
	if st := saturationOf(s, nil); st.Found || st.KneeRate != nil || st.Note != "no probe measured" || len(st.SkippedSweepRates) != 4 {
		t.Errorf("no probe: %+v", st)
	}
}

// TestArrivalUnits: a single-turn record is an arrival; a conversation is one arrival due at
// its first turn's schedule, ended at its last turn's end, completed when every turn was; a
// conversation whose first turn is missing and a record with no schedule are left out;
// conversations come in ID order after the single requests.
func TestArrivalUnits(t *testing.T) {
	at := func(x float64) *float64 { return &x }
	recs := []ServingRecord{
		{Conversation: 7, Turn: 2, ScheduledMs: at(250), EndMs: 400, HTTPStatus: 500},
		{Conversation: 7, Turn: 1, ScheduledMs: at(50), EndMs: 200, HTTPStatus: 200},
		{Turn: 0, ScheduledMs: at(0), EndMs: 100, HTTPStatus: 200},
		{Turn: 0, EndMs: 150, HTTPStatus: 200},
		{Conversation: 3, Turn: 2, ScheduledMs: at(10), EndMs: 60, HTTPStatus: 200},
		{Conversation: 5, Turn: 1, ScheduledMs: at(20), EndMs: 90, HTTPStatus: 200},
		{Conversation: 5, Turn: 2, ScheduledMs: at(95), EndMs: 300, HTTPStatus: 200},
	}
	got := arrivalUnits(recs, func(r ServingRecord) bool { return r.HTTPStatus == 200 })
	want := []arrivalUnit{unit(0, 100, true), unit(20, 300, true), unit(50, 400, false)}
	if !slices.Equal(got, want) {
		t.Errorf("units %+v, want %+v", got, want)
	}
}

// TestSustainWindowRange: serving.sustain's bounds are inclusive (2 to 100000 requests,
// up to 3600 s); one past either end is refused.
func TestSustainWindowRange(t *testing.T) {
	for _, tc := range []struct {
		n    int
		secs float64
		bad  []string
	}{
		{2, 3600, nil},
		{100000, 0.001, nil},
		{1, 10, []string{"serving.sustain.min_requests"}},
		{100001, 3600.5, []string{"serving.sustain.min_requests", "serving.sustain.min_seconds"}},
		{32, -1, []string{"serving.sustain.min_seconds"}},
	} {
		p := servingPlan()
		n, secs := tc.n, tc.secs
		p.Serving.Sustain = &SustainWindow{MinRequests: &n, MinSeconds: &secs}
		var got []string
		for _, pr := range study.Errors(Validate(p, ValidateOptions{})) {
			got = append(got, pr.Path)
		}
		if !slices.Equal(got, tc.bad) {
			t.Errorf("min_requests %d, min_seconds %g: problems at %v, want %v", n, secs, got, tc.bad)
		}
		if tc.bad == nil && (p.Serving.SustainMinRequests() != n || p.Serving.SustainMinSeconds() != secs) {
			t.Errorf("window %d, %g read back as %d, %g", n, secs, p.Serving.SustainMinRequests(), p.Serving.SustainMinSeconds())
		}
	}
	// Each field alone: the other keeps its default.
	p := servingPlan()
	n := 40
	p.Serving.Sustain = &SustainWindow{MinRequests: &n}
	if p.Serving.SustainMinRequests() != 40 || p.Serving.SustainMinSeconds() != DefaultSustainMinSeconds {
		t.Errorf("min_requests alone: %d, %g", p.Serving.SustainMinRequests(), p.Serving.SustainMinSeconds())
	}
	secs := 2.5
	p.Serving.Sustain = &SustainWindow{MinSeconds: &secs}
	if p.Serving.SustainMinRequests() != DefaultSustainMinRequests || p.Serving.SustainMinSeconds() != 2.5 {
		t.Errorf("min_seconds alone: %d, %g", p.Serving.SustainMinRequests(), p.Serving.SustainMinSeconds())
	}
	// probeRequests: a v1 file's probes sent the plan's requests, a v2 file's the window's.
	if got, want := p.Serving.probeRequests(ServingRulesV1, 50), p.Serving.Requests; got != want {
		t.Errorf("v1 rules at 50/s: %d requests, want the plan's %d", got, want)
	}
	if got := p.Serving.probeRequests(ServingRulesSustain, 50); got != 126 {
		t.Errorf("sustain rules at 50/s over 2.5 s: %d requests, want 126", got)
	}
}

// TestNextProbeSweepThenSearch: the sweep's rates in order until its last or its first
// saturated probe; then the search, whose own probes are counted from there (with one probe
// allowed, it still makes that one after a sweep of any length).
func TestNextProbeSweepThenSearch(t *testing.T) {
	s := wideSLOServing()
	s.Rates = []float64{1, 2, 4, 8}
	ok := func(r float64) ProbePoint { return ProbePoint{Rate: r, Passed: true} }
	sat := func(r float64) ProbePoint { return ProbePoint{Rate: r, Saturated: true} }
	for _, tc := range []struct {
		name   string
		search bool
		points []ProbePoint
		rate   float64
		kind   string
		done   bool
	}{
		{"first", false, nil, 1, ProbeSweep, false},
		{"second", false, []ProbePoint{ok(1)}, 2, ProbeSweep, false},
		{"last", false, []ProbePoint{ok(1), ok(2), ok(4)}, 8, ProbeSweep, false},
		{"sweep done, no search", false, []ProbePoint{ok(1), ok(2), ok(4), ok(8)}, 0, "", true},
		{"saturated first, no search", false, []ProbePoint{sat(1)}, 0, "", true},
		{"sweep done, search", true, []ProbePoint{ok(1), ok(2), ok(4), ok(8)}, 16, ProbeSearch, false},
		{"saturated at 2, search", true, []ProbePoint{ok(1), sat(2)}, 1.5, ProbeSearch, false},
		{"saturated at 1, search", true, []ProbePoint{sat(1)}, 0.5, ProbeSearch, false},
		{"search probe spent", true, []ProbePoint{ok(1), sat(2), ok(1.5)}, 0, ProbeSearch, true},
	} {
		s.Search = nil
		if tc.search {
			s.Search = &RateSearch{Lo: 0.5, Hi: 64, Tolerance: 0.01, MaxProbes: 1}
		}
		rate, kind, done, _ := s.NextProbe(tc.points)
		if rate != tc.rate || kind != tc.kind || done != tc.done {
			t.Errorf("%s: next %g %q done %v; want %g %q done %v", tc.name, rate, kind, done, tc.rate, tc.kind, tc.done)
		}
	}
}

// TestValidityNote: one entry per open-loop probe, keyed by its lifetime; behind_schedule
// when the probe failed client_behind_schedule; nil when no candidate has probes.
func TestValidityNote(t *testing.T) {
	if v := Validity(&Result{Candidates: []CandidateResult{{ID: "a"}}}); v != nil {
		t.Errorf("closed loop: %+v, want nil", v)
	}
	r := &Result{Candidates: []CandidateResult{{ID: "a", Serving: []ServingResult{{Pass: PassForward, Slots: 2, Probes: []ProbeResult{
		{Probe: 0, OfferedRate: 1, Requests: 32, Completed: 31, Contaminated: 1, TokenMismatch: 2, Failures: []string{CodeContaminated}},
		{Probe: 1, OfferedRate: 2, Requests: 32, ClientBound: true, Failures: []string{CodeServingCompletion, CodeBehindSchedule}},
	}}}}}}
	v := Validity(r)
	if v == nil || len(v.Probes) != 2 {
		t.Fatalf("validity %+v", v)
	}
	a, b := v.Probes[0], v.Probes[1]
	if a.Lifetime != (LifetimeKey{Pass: PassForward, Candidate: "a", Slots: 2}).String() || a.Probe != 0 || a.Completed != 31 || a.Contaminated != 1 || a.TokenMismatch != 2 || a.BehindSchedule || a.ClientBound {
		t.Errorf("probe 0: %+v", a)
	}
	if b.Probe != 1 || b.OfferedRate != 2 || !b.BehindSchedule || !b.ClientBound || len(b.Failures) != 2 {
		t.Errorf("probe 1: %+v", b)
	}
}
