package capacity

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"sparkbench/app/analysis"
)

// handFile is a tiny request file whose metrics are computed by hand below.
const handFile = `{"schema":"sparkbench.requests/v1","pass":"forward","candidate":"a","slots":2}
{"clients":2,"phase":"warmup","seq":0,"send_ms":0,"first_token_ms":50,"end_ms":90,"tokens":4,"http_status":200,"timings":null}
{"clients":2,"phase":"measured","seq":0,"send_ms":100,"first_token_ms":200,"end_ms":500,"tokens":4,"http_status":200,"timings":{"prompt_n":10,"prompt_ms":80,"predicted_n":4,"predicted_ms":290}}
{"clients":2,"phase":"measured","seq":1,"send_ms":110,"first_token_ms":250,"end_ms":550,"tokens":4,"http_status":200,"timings":{"prompt_n":10,"prompt_ms":120,"predicted_n":4,"predicted_ms":400}}
{"clients":2,"phase":"measured","seq":2,"send_ms":500,"first_token_ms":700,"end_ms":1100,"tokens":4,"http_status":200,"timings":null}
{"clients":2,"phase":"measured","seq":3,"send_ms":550,"first_token_ms":600,"end_ms":1000,"tokens":2,"http_status":200,"error":"","timings":null}
`

// TestMetricsHandComputed checks every metric definition on four requests (n_predict 4):
//
//	seq  send  first  end   tokens  TTFT  E2E  ITL            1000/ITL
//	0    100   200    500   4       100   400  300/3 = 100    10
//	1    110   250    550   4       140   440  300/3 = 100    10
//	2    500   700    1100  4       200   600  400/3          7.5
//	3    550   600    1000  2       (not completed: 2 tokens of 4)
//
// generation rate = (4+4+4+2) tokens / (1100 - 100) ms = 14 tok/s; completion 3/4;
// per-stream = (10 + 10 + 7.5) / 3; TTFT p50 140, p95 = 140 + 0.9*(200-140) = 194;
// E2E p50 440, p95 = 440 + 0.9*(600-440) = 584; server rate mean(4/290, 4/400)*1000;
// overhead p50 = median(400-370, 440-520) = -25.
func TestMetricsHandComputed(t *testing.T) {
	f, err := ReadRequests("hand.jsonl", []byte(handFile))
	if err != nil {
		t.Fatal(err)
	}
	var measured []RequestRecord
	for _, r := range f.Records {
		if r.Phase == PhaseMeasured {
			measured = append(measured, r)
		}
	}
	m := CellMetrics(PassForward, measured, 4)
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %g", name, got, want)
		}
	}
	if m.Attempted != 4 || m.Completed != 3 || m.CompletionRate != 0.75 || m.GeneratedTokens != 14 || m.WindowMs != 1000 {
		t.Errorf("counts %+v", m)
	}
	near("generation rate", m.GenerationRate, 14)
	near("per-stream rate", m.PerStreamRate, 27.5/3)
	near("TTFT p50", m.TTFTMsP50, 140)
	near("TTFT p95", m.TTFTMsP95, 194)
	near("E2E p50", m.E2EMsP50, 440)
	near("E2E p95", m.E2EMsP95, 584)
	near("server per-stream", m.ServerPerStreamRate, (4.0/290+4.0/400)/2*1000)
	near("overhead p50", m.OverheadMsP50, -25)
}

// TestPercentileIsNumpyLinear: numpy.percentile([100, 200, …, 800], 95) = 765.0 and
// numpy.percentile(…, 50) = 450.0; the cell's p95 must be those, whatever the file order.
func TestPercentileIsNumpyLinear(t *testing.T) {
	ttft := []float64{300, 800, 100, 500, 700, 200, 600, 400}
	lv := levelSpec{clients: 1, ttft: ttft, gen: rep(1000, 8)}
	data := requestFile(t, RequestHeader{Pass: PassReverse, Candidate: "a", Slots: 1}, 0, 64, []levelSpec{lv})
	f, err := ReadRequests("p.jsonl", data)
	if err != nil {
		t.Fatal(err)
	}
	m := CellMetrics(PassReverse, f.Records, 64)
	if *m.TTFTMsP95 != 765 || *m.TTFTMsP50 != 450 {
		t.Errorf("TTFT p95 %v p50 %v, want numpy's 765 and 450", *m.TTFTMsP95, *m.TTFTMsP50)
	}
	// numpy.percentile([1100, …, 1800], 95) = 1765.0 (E2E = TTFT + 1000)
	if *m.E2EMsP95 != 1765 {
		t.Errorf("E2E p95 %v, want 1765", *m.E2EMsP95)
	}
	// Two values: numpy.percentile([10, 20], 95) = 19.5.
	two := CellMetrics(PassForward, []RequestRecord{rec(0, 0, 10, 100), rec(1, 0, 20, 100)}, 64)
	if *two.TTFTMsP95 != 19.5 {
		t.Errorf("p95 of two = %v, want 19.5", *two.TTFTMsP95)
	}
}

func rec(seq int, send, ttft, e2e float64) RequestRecord {
	ft := send + ttft
	return RequestRecord{Clients: 1, Phase: PhaseMeasured, Seq: seq, SendMs: send, FirstTokenMs: &ft, EndMs: send + e2e, Tokens: 64, HTTPStatus: 200}
}

// TestMetricsIgnoreRecordOrder: the same requests in any order give bit-identical figures.
func TestMetricsIgnoreRecordOrder(t *testing.T) {
	lv := seedLevel(2, 2, 8, 64, 38.85, 389.8)
	data := requestFile(t, RequestHeader{Pass: PassForward, Candidate: "a", Slots: 2}, 0, 64, []levelSpec{lv})
	f, err := ReadRequests("x", data)
	if err != nil {
		t.Fatal(err)
	}
	want := CellMetrics(PassForward, f.Records, 64)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		recs := append([]RequestRecord(nil), f.Records...)
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		if got := CellMetrics(PassForward, recs, 64); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffled records changed the metrics:\n%+v\n%+v", got, want)
		}
	}
}

// TestAssembleDeterministic: assembling twice gives the same bytes; so do request files with
// their lines in another order (only the input fingerprints differ, not one figure).
func TestAssembleDeterministic(t *testing.T) {
	p := seedPlan(t)
	in := seedInputs(t, p)
	r1 := mustAssemble(t, p, in)
	r2 := mustAssemble(t, p, seedInputs(t, p))
	b1, _ := r1.Marshal()
	b2, _ := r2.Marshal()
	if !bytes.Equal(b1, b2) {
		t.Fatal("two assemblies differ")
	}
	// Reverse every request file's record lines (the header stays first).
	rev := Inputs{Requests: map[LifetimeKey]InputFile{}, RSS: in.RSS, ServerLogs: in.ServerLogs, Quality: in.Quality, BenchTG: in.BenchTG}
	for k, f := range in.Requests {
		lines := bytes.SplitAfter(f.Data, []byte("\n"))
		lines = lines[:len(lines)-1] // trailing empty piece
		for i, j := 1, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
		rev.Requests[k] = InputFile{f.Name, bytes.Join(lines, nil)}
	}
	r3 := mustAssemble(t, p, rev)
	r3.Inputs, r1.Inputs = nil, nil
	b1, _ = r1.Marshal()
	b3, _ := r3.Marshal()
	if !bytes.Equal(b1, b3) {
		t.Fatal("reordered request lines changed the result")
	}
	// The caller's plan is not modified (Assemble works on a defaulted copy).
	q := seedPlan(t)
	q.given = given{} // as a plan built in code, where 0 means the default
	q.Measured, q.Warmups = 0, nil
	if _, err := Assemble(q, in); err != nil || q.Measured != 0 {
		t.Fatalf("assemble with an undefaulted plan: %v, measured %d", err, q.Measured)
	}
}

// TestPercentileAgreesWithAnalysis: the FMA-proof percentile is analysis.Percentile.
func TestPercentileAgreesWithAnalysis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 1; n < 40; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.Float64() * 1e4
		}
		for _, p := range []float64{0, 5, 50, 95, 99, 100} {
			want, _ := analysis.Percentile(xs, p)
			if got := percentile(xs, p); got != want {
				t.Fatalf("n %d p%g: %v, analysis says %v", n, p, got, want)
			}
		}
	}
}

// TestCellMetricsEdges: a request whose end is its first token has no finite ITL and adds no
// per-stream rate; server timings with no predicted tokens or no predicted time add no server
// rate (their overhead still counts); a window of 0 ms has no generation rate.
func TestCellMetricsEdges(t *testing.T) {
	r0 := rec(0, 0, 100, 500) // ITL 400/63
	r1 := rec(1, 10, 100, 100)
	r1.Timings = &Timings{PredictedN: 0, PredictedMs: 80, PromptMs: 10}
	r2 := rec(2, 20, 100, 300)
	r2.Timings = &Timings{PredictedN: 64, PredictedMs: 0, PromptMs: 20}
	r3 := rec(3, 30, 100, 330)
	r3.Timings = &Timings{PredictedN: 64, PredictedMs: 200, PromptMs: 100}
	m := CellMetrics(PassForward, []RequestRecord{r3, r2, r1, r0}, 64)
	if m.PerStreamRate == nil || math.Abs(*m.PerStreamRate-(63000.0/400+63000.0/200+63000.0/230)/3) > 1e-9 {
		t.Errorf("per-stream %v: want the mean over the three requests with a positive ITL", m.PerStreamRate)
	}
	if m.ServerPerStreamRate == nil || *m.ServerPerStreamRate != 64.0/200*1000 {
		t.Errorf("server per-stream %v, want 320 (only the request with predicted tokens and time)", m.ServerPerStreamRate)
	}
	// overheads: 100 - 90 = 10, 300 - 20 = 280, 330 - 300 = 30: median 30
	if m.OverheadMsP50 == nil || *m.OverheadMsP50 != 30 {
		t.Errorf("overhead p50 %v, want 30", m.OverheadMsP50)
	}
	flat := CellMetrics(PassForward, []RequestRecord{{Seq: 0, SendMs: 50, EndMs: 50, HTTPStatus: 500, Error: "x"}}, 64)
	if flat.GenerationRate != nil || flat.WindowMs != 0 || flat.CompletionRate != 0 || flat.PerStreamRate != nil || flat.TTFTMsP95 != nil {
		t.Errorf("a 0 ms window: %+v", flat)
	}
	if empty := CellMetrics(PassForward, nil, 64); empty.Attempted != 0 || empty.CompletionRate != 0 || empty.GenerationRate != nil {
		t.Errorf("no request: %+v", empty)
	}
}

// TestSpreadAndMedianOf: the spread is (max - min) / median over passes, undefined when a pass
// lacks the value or the median is not positive; the median skips unknown values.
func TestSpreadAndMedianOf(t *testing.T) {
	ps := func(xs ...float64) []*float64 {
		out := make([]*float64, len(xs))
		for i := range xs {
			out[i] = fp(xs[i])
		}
		return out
	}
	if s := spreadOf(ps(90, 110, 100)); s == nil || *s != 0.2 {
		t.Errorf("spread of 90, 110, 100: %v, want 0.2", s)
	}
	if s := spreadOf(ps(100, 100)); s == nil || *s != 0 {
		t.Errorf("spread of 100, 100: %v, want 0", s)
	}
	for name, xs := range map[string][]*float64{"none": nil, "a pass without": {fp(1), nil}, "median 0": ps(0, 0, 5), "median below 0": ps(-2, -1, 3)} {
		if s := spreadOf(xs); s != nil {
			t.Errorf("%s: spread %v, want undefined", name, *s)
		}
	}
	if m := medianOf([]*float64{nil, fp(3), fp(1), nil, fp(2)}); m == nil || *m != 2 {
		t.Errorf("median %v, want 2", m)
	}
	if m := medianOf([]*float64{nil, nil}); m != nil {
		t.Errorf("median of nothing known %v, want nil", *m)
	}
	if m := mean([]float64{1, 2, 6}); m == nil || *m != 3 {
		t.Errorf("mean %v, want 3", m)
	}
}
