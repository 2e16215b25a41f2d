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
