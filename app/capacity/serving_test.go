package capacity

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/app/study"
)

func TestArrivalScheduleReproducible(t *testing.T) {
	a := Arrival{Process: ArrivalPoisson, Seed: 7}
	s1, s2 := ArrivalSchedule(a, 4, 64), ArrivalSchedule(a, 4, 64)
	if !slices.Equal(s1, s2) || ScheduleSHA256(s1) != ScheduleSHA256(s2) {
		t.Fatal("the same seed, rate and count gave two schedules")
	}
	if s1[0] != 0 || !slices.IsSorted(s1) {
		t.Fatalf("schedule %v: want 0 first, non-decreasing", s1[:4])
	}
	if other := ArrivalSchedule(Arrival{Process: ArrivalPoisson, Seed: 8}, 4, 64); slices.Equal(s1, other) {
		t.Error("seeds 7 and 8 gave the same schedule")
	}
	// A higher rate is the same random numbers, faster: offsets scale by the rate ratio (to the
	// microsecond they are rounded to).
	for k, d := range ArrivalSchedule(a, 8, 64) {
		if diff := math.Abs(float64(2*d - s1[k])); diff > float64(2*time.Microsecond) {
			t.Fatalf("offset %d at rate 8 is %v, at rate 4 %v: not the same schedule at twice the rate", k, d, s1[k])
		}
	}
	for _, d := range s1 {
		if d%time.Microsecond != 0 {
			t.Fatalf("offset %v is not whole microseconds", d)
		}
	}
}

// gapStats are the mean and squared coefficient of variation of a schedule's gaps (s).
func gapStats(s []time.Duration) (mean, cv2 float64) {
	var g []float64
	for k := 1; k < len(s); k++ {
		g = append(g, (s[k] - s[k-1]).Seconds())
	}
	for _, x := range g {
		mean += x
	}
	mean /= float64(len(g))
	v := 0.0
	for _, x := range g {
		v += (x - mean) * (x - mean)
	}
	return mean, v / float64(len(g)) / (mean * mean)
}

// TestArrivalProcessesHaveTheirShape: over 20,000 seeded gaps the processes have the mean gap
// 1/rate and the variability of their law: constant none, Poisson CV² = 1, gamma with
// burstiness k CV² = 1/k (0.25 is four times burstier than Poisson); a ramp's gaps shrink.
func TestArrivalProcessesHaveTheirShape(t *testing.T) {
	const n, rate = 20001, 50.0
	for _, tc := range []struct {
		a   Arrival
		cv2 float64
	}{
		{Arrival{Process: ArrivalConstant}, 0},
		{Arrival{Process: ArrivalPoisson, Seed: 1}, 1},
		{Arrival{Process: ArrivalGamma, Seed: 1, Burstiness: 0.25}, 4},
		{Arrival{Process: ArrivalGamma, Seed: 1, Burstiness: 4}, 0.25},
	} {
		mean, cv2 := gapStats(ArrivalSchedule(tc.a, rate, n))
		if math.Abs(mean*rate-1) > 0.05 {
			t.Errorf("%+v: mean gap %.5f s, want 1/%g within 5%%", tc.a, mean, rate)
		}
		if math.Abs(cv2-tc.cv2) > 0.1*max(tc.cv2, 0.1) {
			t.Errorf("%+v: CV² of the gaps %.3f, want %.3g within 10%%", tc.a, cv2, tc.cv2)
		}
	}
	r := ArrivalSchedule(Arrival{Process: ArrivalRamp, RampFrom: 1}, 10, 11)
	for k := 2; k < len(r); k++ {
		if r[k]-r[k-1] >= r[k-1]-r[k-2] {
			t.Fatalf("ramp gaps %v do not shrink", r)
		}
	}
}

// TestMaxRateSearchConverges: against servers that meet the SLO up to a true capacity, the
// search brackets then bisects to a maximum within its tolerance of the lowest failure, below
// the capacity, within its probe budget; a server failing at lo has no maximum, one passing at
// hi is capped there.
func TestMaxRateSearchConverges(t *testing.T) {
	q := RateSearch{Lo: 1, Hi: 64, Tolerance: 0.05, MaxProbes: 16}
	for _, capacity := range []float64{0.5, 1, 3.3, 7.9, 40, 64, 100} {
		var pts []ProbePoint
		var st SearchState
		for probes := 0; ; probes++ {
			r, done, s := NextSearchRate(q, pts, probes)
			st = s
			if done {
				break
			}
			pts = append(pts, ProbePoint{Rate: r, Passed: r <= capacity})
		}
		switch {
		case capacity < q.Lo:
			if st.MaxRate != 0 || !st.Converged {
				t.Errorf("capacity %g: %+v, want no maximum", capacity, st)
			}
		case capacity >= q.Hi:
			if st.MaxRate != q.Hi || !st.Converged {
				t.Errorf("capacity %g: %+v, want the maximum capped at hi", capacity, st)
			}
		default:
			if !st.Converged || st.MaxRate > capacity || (st.LowestFail-st.MaxRate)/st.MaxRate > q.Tolerance || st.LowestFail <= capacity {
				t.Errorf("capacity %g: %+v after %d probes, want a bracket within %g around it", capacity, st, len(pts), q.Tolerance)
			}
		}
		if len(pts) > q.MaxProbes {
			t.Errorf("capacity %g: %d probes, budget %d", capacity, len(pts), q.MaxProbes)
		}
	}
}

func servingPlan() *Plan {
	p := smallPlan()
	p.Passes = []string{PassForward}
	p.Candidates = p.Candidates[:1]
	p.Slots = []int{1}
	p.Clients = []int{1}
	p.Serving = &Serving{Arrival: Arrival{Process: ArrivalPoisson, Seed: 3}, Rates: []float64{1, 2, 8},
		Search: &RateSearch{Lo: 1, Hi: 32, Tolerance: 0.1, MaxProbes: 12}, Requests: 16, Warmups: 1,
		SLO: SLO{TTFTMs: 500, TPOTMs: 50}}
	p.Defaults()
	return p
}

// simServer is a made-up server: below capacity each request's TTFT is 100 ms, above it TTFT
// grows with the queue; tweak changes one record.
type simServer struct {
	capacity float64
	tweak    func(probe int, r *ServingRecord)
}

// servingFile runs the plan's sweep and search against sim, as the runner does, and writes the
// lifetime's serving file.
func (sim simServer) servingFile(t testing.TB, p *Plan, k LifetimeKey) []byte {
	t.Helper()
	s := p.Serving
	var buf bytes.Buffer
	sha, _, _ := p.SHA256()
	w, err := NewServingWriter(&buf, RequestHeader{Pass: k.Pass, Candidate: k.Candidate, Slots: k.Slots, PlanSHA256: sha})
	if err != nil {
		t.Fatal(err)
	}
	var pts []ProbePoint
	clock := 0.0
	for probe := 0; ; probe++ {
		rate, kind, done, _ := s.NextProbe(pts)
		if done {
			break
		}
		for i := range s.Warmups {
			ft := clock + 100
			if err := w.Write(ServingRecord{Probe: probe, Rate: rate, Phase: PhaseWarmup, Seq: i, SendMs: clock, FirstTokenMs: &ft,
				EndMs: ft + float64(p.NPredict-1)*10, Tokens: p.NPredict, Events: p.NPredict, HTTPStatus: 200}); err != nil {
				t.Fatal(err)
			}
			clock = ft + float64(p.NPredict)*10
		}
		var recs []ServingRecord
		for i, d := range s.ProbeSchedule(rate) {
			sched := clock + float64(d)/1e6
			ttft := 100.0
			if rate > sim.capacity {
				ttft += 1000 * (rate - sim.capacity) * float64(i)
			}
			send := sched + 0.2
			ft := send + ttft
			r := ServingRecord{Probe: probe, Rate: rate, Phase: PhaseMeasured, Seq: i, ScheduledMs: &sched, SendMs: send, FirstTokenMs: &ft,
				EndMs: ft + float64(p.NPredict-1)*10, Tokens: p.NPredict, Events: p.NPredict, HTTPStatus: 200,
				Timings: &ServingTimings{PromptN: 9, PredictedN: p.NPredict, PromptMs: 5, PredictedMs: 600}}
			if sim.tweak != nil {
				sim.tweak(probe, &r)
			}
			recs = append(recs, r)
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		pr := ProbeMetrics(s, p.NPredict, probe, kind, rate, recs)
		pts = append(pts, pr.Point())
		clock = recs[len(recs)-1].EndMs + 1000
	}
	return buf.Bytes()
}

func servingInputs(t testing.TB, p *Plan, sim simServer) Inputs {
	in := fixture{}.inputs(t, p)
	in.Serving = map[LifetimeKey]InputFile{}
	for _, k := range (&assembler{p: p}).keys() {
		in.Serving[k] = InputFile{"serving/" + k.String() + ".jsonl", sim.servingFile(t, p, k)}
	}
	return in
}

func TestServingAssemblyFindsTheMaxRate(t *testing.T) {
	p := servingPlan()
	r := mustAssemble(t, p, servingInputs(t, p, simServer{capacity: 5}))
	sv := candOf(t, r, "a").Serving
	if len(sv) != 1 {
		t.Fatalf("%d serving results, want 1", len(sv))
	}
	s := sv[0]
	var rates []float64
	for _, pr := range s.Probes {
		rates = append(rates, pr.OfferedRate)
		if pr.Passed != (pr.OfferedRate <= 5) {
			t.Errorf("probe at %g req/s passed=%v (failures %v); capacity is 5", pr.OfferedRate, pr.Passed, pr.Failures)
		}
		if pr.Passed && (pr.Goodput == nil || pr.Throughput == nil || *pr.Goodput != *pr.Throughput) {
			t.Errorf("a passing probe's goodput %v differs from its throughput %v", pr.Goodput, pr.Throughput)
		}
	}
	if !slices.Equal(rates[:3], []float64{1, 2, 8}) {
		t.Errorf("probes %v: the sweep comes first", rates)
	}
	if s.MaxSweepRate == nil || *s.MaxSweepRate != 2 {
		t.Errorf("max sweep rate %v, want 2", s.MaxSweepRate)
	}
	q := s.Search
	if q == nil || q.MaxRate == nil || q.LowestFail == nil || !q.Converged || *q.MaxRate > 5 || *q.LowestFail <= 5 ||
		(*q.LowestFail-*q.MaxRate)/(*q.MaxRate) > 0.1 || len(q.Probes) != len(s.Probes)-3 {
		t.Errorf("search %+v over probes %v: want a converged bracket around 5", q, rates)
	}
	if r.Definitions["serving_goodput"] == "" {
		t.Error("no goodput definition")
	}
}

// TestServingProbeFlags: a client far behind its schedule fails client_behind_schedule with
// the achieved rate in the detail; a cold request answered from the cache is contaminated and
// left out; a stream cut short counts as an error, never as a short success.
func TestServingProbeFlags(t *testing.T) {
	p := servingPlan()
	p.Serving.Search = nil
	sim := simServer{capacity: 100, tweak: func(probe int, r *ServingRecord) {
		switch {
		case probe == 2: // the client sends everything 1 s per request late (the last probe: its completions fall behind, which stops the sweep)
			r.SendMs += 1000 * float64(r.Seq)
			*r.FirstTokenMs += 1000 * float64(r.Seq)
			r.EndMs += 1000 * float64(r.Seq)
		case probe == 0 && r.Seq == 3:
			r.Timings.CacheN = 5
		case probe == 1 && r.Seq == 0:
			r.Tokens, r.Events, r.Error = 7, 7, "stream ended after 7 content events without the final event (incomplete)"
			r.EndMs = *r.FirstTokenMs + 60
			r.Timings = nil
		}
	}}
	r := mustAssemble(t, p, servingInputs(t, p, sim))
	probes := candOf(t, r, "a").Serving[0].Probes
	if f := probes[2].Failures; !slices.Contains(f, CodeBehindSchedule) {
		t.Errorf("late client: failures %v, want %s", f, CodeBehindSchedule)
	}
	for _, c := range probes[2].Checks {
		if c.Gate == "send_delay_ms_p99" && !strings.Contains(c.Detail, "achieved") {
			t.Errorf("behind schedule without the achieved rate: %q", c.Detail)
		}
	}
	n := p.Serving.ProbeRequests(1)
	if pr := probes[0]; pr.Contaminated != 1 || pr.Completed != n-1 || !slices.Equal(pr.Failures, []string{CodeContaminated}) {
		t.Errorf("contaminated probe: %d contaminated, %d completed, failures %v", pr.Contaminated, pr.Completed, pr.Failures)
	}
	if pr := probes[1]; pr.Completed != p.Serving.ProbeRequests(2)-1 || !slices.Contains(pr.Failures, CodeServingCompletion) {
		t.Errorf("cut stream: %d completed, failures %v; want all but one and %s", pr.Completed, pr.Failures, CodeServingCompletion)
	}
}

// TestServingRefusesARunThatDidNotFollowThePlan: a probe at another rate than the search asks
// for, or a missing probe, is refused with the file and line.
func TestServingRefusesARunThatDidNotFollowThePlan(t *testing.T) {
	p := servingPlan()
	in := servingInputs(t, p, simServer{capacity: 5})
	k := LifetimeKey{PassForward, "a", 1}
	f := in.Serving[k]
	f.Data = bytes.Replace(f.Data, []byte(`"probe":1,"rate":2,`), []byte(`"probe":1,"rate":3,`), -1)
	in.Serving[k] = f
	_, err := Assemble(p, in)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Flag != FlagServing || !strings.Contains(err.Error(), ".jsonl:") || !strings.Contains(err.Error(), "asks for 2 req/s") {
		t.Errorf("err = %v, want the serving file's line and the rate the plan asks for", err)
	}
	delete(in.Serving, k)
	if _, err := Assemble(p, in); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v, want the missing serving file named", err)
	}
}

func TestServingPlanValidation(t *testing.T) {
	p := servingPlan()
	if errs := study.Errors(Validate(p, ValidateOptions{})); len(errs) > 0 {
		t.Fatalf("valid serving plan refused: %v", errs)
	}
	bad := servingPlan()
	bad.Serving.Arrival = Arrival{Process: "bursty"}
	bad.Serving.Rates = []float64{4, 2}
	bad.Serving.SLO.Percentile = 90
	var got []string
	for _, pr := range Validate(bad, ValidateOptions{}) {
		got = append(got, pr.Path)
	}
	for _, want := range []string{"serving.arrival.process", "serving.rates[1]", "serving.slo.percentile"} {
		if !slices.Contains(got, want) {
			t.Errorf("problems at %v, want one at %s", got, want)
		}
	}
	// A closed-loop plan's hash does not move: the serving block is written only when given.
	closed := smallPlan()
	_, b, _ := closed.SHA256()
	if bytes.Contains(b, []byte("serving")) {
		t.Errorf("a closed-loop plan's canonical JSON mentions serving: %s", b)
	}
}
