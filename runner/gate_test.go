package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
)

func row(t *testing.T, p, n, d int64, avg, sd float64, reps int) benchfmt.Result {
	t.Helper()
	r := benchfmt.Result{NPrompt: p, NGen: n, NDepth: d, AvgTs: avg, StddevTs: sd}
	for i := 0; i < reps; i++ {
		r.SamplesTs = append(r.SamplesTs, avg)
	}
	return r
}

func TestCVGate(t *testing.T) {
	var g CVGate
	cases := []struct {
		r     benchfmt.Result
		limit float64
		ok    bool
	}{
		{row(t, 512, 0, 0, 100, 4.9, 5), DefaultCVPP, true},
		{row(t, 512, 0, 0, 100, 5.1, 5), DefaultCVPP, false},
		{row(t, 512, 0, 4096, 100, 9.9, 5), DefaultCVPPDepth, true},
		{row(t, 512, 0, 4096, 100, 10.1, 5), DefaultCVPPDepth, false},
		{row(t, 0, 128, 0, 100, 5.1, 5), DefaultCVTG, false},
		{row(t, 0, 128, 8192, 100, 6, 5), DefaultCVTG, false},
		{row(t, 512, 128, 0, 100, 6, 5), DefaultCVTG, false}, // pg uses the tg limit
		{row(t, 0, 128, 0, 100, 50, 1), DefaultCVTG, true},   // one repetition: no CV
	}
	for i, c := range cases {
		_, limit, ok := g.Check(&c.r)
		if limit != c.limit || ok != c.ok {
			t.Errorf("case %d (%s): limit %v ok %v, want %v %v", i, c.r.TestName(), limit, ok, c.limit, c.ok)
		}
	}
	custom := CVGate{TG: 0.5}
	r := row(t, 0, 128, 0, 100, 20, 3)
	if _, limit, ok := custom.Check(&r); limit != 0.5 || !ok {
		t.Errorf("custom tg limit: %v %v", limit, ok)
	}
	off := CVGate{Off: true}
	r = row(t, 0, 128, 0, 100, 90, 3)
	if cv, _, ok := off.Check(&r); !ok || cv != 0.9 {
		t.Errorf("off: cv %v ok %v", cv, ok)
	}
}

func TestEvaluateCanary(t *testing.T) {
	res := func(class Class, tests map[string]float64) *LegResult {
		r := &LegResult{Exit: Exit{Class: class}}
		for k, v := range tests {
			r.Rows = append(r.Rows, Row{Sample: Sample{Test: k, AvgTs: v}})
		}
		return r
	}
	spec := CanarySpec{Baseline: map[string]float64{"pp64": 1000, "tg32": 100}}
	cases := []struct {
		res  *LegResult
		pass bool
		want string
	}{
		{res(ClassOK, map[string]float64{"pp64": 990, "tg32": 81}), true, "passed"},
		{res(ClassOK, map[string]float64{"pp64": 990, "tg32": 79}), false, "tg32 79.00 t/s is 21.0% below its baseline 100.00 (limit 20%)"},
		{res(ClassOK, map[string]float64{"pp64": 990}), false, "tg32 missing"},
		{res(ClassCrashed, nil), false, "did not complete: crashed"},
	}
	for i, c := range cases {
		pass, reason, _ := EvaluateCanary(spec, c.res)
		if pass != c.pass || !strings.Contains(reason, c.want) {
			t.Errorf("case %d: %v %q", i, pass, reason)
		}
	}
	spec.MaxDrop = 0.5
	if pass, _, _ := EvaluateCanary(spec, res(ClassOK, map[string]float64{"pp64": 600, "tg32": 60})); !pass {
		t.Error("MaxDrop 0.5 not honoured")
	}
	if pass, _, _ := EvaluateCanary(CanarySpec{}, res(ClassOK, nil)); !pass {
		t.Error("no baseline: completing should pass")
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	line, err := os.ReadFile(filepath.Join("testdata", "llama", "bench-progress-jsonl.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(line), "\n")
	r, err := benchfmt.ParseJSONLLine([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	events := []Event{
		{Type: EventLine, T: time.Millisecond, Line: &Line{N: 3, Text: "llama-bench: benchmark 1/4: starting"}},
		{Type: EventSample, T: 2 * time.Millisecond, Leg: "leg-01", Sample: &Sample{Row: 1, Line: 17, Test: r.TestName(),
			Kind: r.Kind(), Depth: r.NDepth, Model: r.ModelFilename, AvgTs: r.AvgTs, CV: CV(&r), Result: r}},
		{Type: EventProgress, Progress: &Progress{Done: 1, Total: 4, Test: 2, Phase: "warmup", ETA: -1}},
		{Type: EventMalformed, Malformed: &Malformed{Line: 9, Text: "{", Err: "column 2: …"}},
		{Type: EventFlagged, Flagged: &Flagged{Row: 1, Test: "tg32", Gate: "cv", Value: 0.09, Limit: 0.05}},
		{Type: EventExit, Exit: &Exit{Code: -1, Signal: "SIGSEGV (segmentation fault)", Class: ClassCrashed, Rows: 2, Expected: 4}},
		{Type: EventLegFinished, Leg: "leg-02", LegStatus: &LegStatus{ID: "leg-02", Index: 1, Role: "leg", Class: ClassOK}},
		{Type: EventCanary, Canary: &Canary{ID: "c", After: "leg-02", Pass: true, Observed: map[string]float64{"tg32": 1}}},
		{Type: EventQueueDone, Queue: &QueueStatus{LegsDone: 2, LegsTotal: 2, ETA: 0}},
	}
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, ev) {
			t.Errorf("round trip of %s differs:\n%+v\n%+v", ev.Type, back, ev)
		}
	}
	if !r.Complete() {
		t.Error("fixture row not complete")
	}
}

func TestEvQueueDropsLinesNotSamples(t *testing.T) {
	q := newEvQueue(10 * 1024)
	// nobody reads: lines beyond the budget are dropped, samples and progress are not
	for i := 0; i < 1000; i++ {
		q.push(Event{Type: EventLine, Line: &Line{N: i + 1, Text: strings.Repeat("x", 100)}})
		if i%100 == 0 {
			q.push(Event{Type: EventSample, Sample: &Sample{Row: i/100 + 1}})
		}
		q.push(Event{Type: EventProgress, Progress: &Progress{Done: i}})
	}
	q.push(Event{Type: EventExit, Exit: &Exit{}})
	q.close()
	var lines, samples, progress, dropped int
	var last EventType
	for ev := range q.out {
		switch ev.Type {
		case EventLine:
			lines++
			dropped += ev.Line.Dropped
		case EventSample:
			samples++
		case EventProgress:
			progress++
		}
		last = ev.Type
	}
	if samples != 10 || last != EventExit {
		t.Fatalf("samples %d last %s", samples, last)
	}
	if lines+q.droppedLines() != 1000 || lines > 10*1024/164+70 {
		t.Fatalf("lines %d dropped %d (noted on lines: %d)", lines, q.droppedLines(), dropped)
	}
	t.Logf("delivered %d lines, %d progress events; dropped %d lines", lines, progress, q.droppedLines())
}

// deviceRow is a llama-bench jsonl row (tg32) with the given device fields; a field given as
// "-" is left out of the row.
func deviceRow(t *testing.T, gpuInfo, backends, ngl, devices string) benchfmt.Result {
	t.Helper()
	fields := []string{`"build_commit": "b1", "build_number": 1, "model_filename": "m.gguf", "n_threads": 1`}
	if gpuInfo != "-" {
		fields = append(fields, `"gpu_info": "`+gpuInfo+`"`)
	}
	if backends != "-" {
		fields = append(fields, `"backends": "`+backends+`"`)
	}
	if ngl != "-" {
		fields = append(fields, `"n_gpu_layers": `+ngl)
	}
	if devices != "-" {
		fields = append(fields, `"devices": "`+devices+`"`)
	}
	fields = append(fields, `"n_prompt": 0, "n_gen": 32, "n_depth": 0, "avg_ns": 1000000, "stddev_ns": 0, "avg_ts": 100, "stddev_ts": 0, "samples_ns": [1000000], "samples_ts": [100]`)
	r, err := benchfmt.ParseJSONLLine([]byte("{" + strings.Join(fields, ", ") + "}"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each device gate outcome on rows as llama-bench prints them: a gate that always passes, or
// one that flags everything, fails this table.
func TestDeviceGateCheck(t *testing.T) {
	cases := []struct {
		want                            string
		gpuInfo, backends, ngl, devices string
		code, why                       string
	}{
		// ran on the device asked for
		{"Vulkan0", "llvmpipe (LLVM 19.1.7, 256 bits)", "Vulkan", "99", "Vulkan0", "", ""},
		{"CUDA0/CUDA1", "NVIDIA GB10", "CUDA", "99", "CUDA0/CUDA1", "", ""},
		{"Vulkan0", "llvmpipe", "Vulkan", "99", "auto", "", ""},
		{"auto", "llvmpipe", "Vulkan", "99", "auto", "", ""},
		// no gate, or -ngl 0 (asks for no layer on the device)
		{"", "", "CPU", "99", "auto", "", ""},
		{"none", "", "CPU", "99", "auto", "", ""},
		{"Vulkan0", "llvmpipe", "Vulkan", "0", "Vulkan0", "", ""},
		// ran on the CPU
		{"Vulkan0", "", "CPU", "99", "auto", CodeDeviceNotUsed, `row ran on the CPU (gpu_info "", n_gpu_layers 99`},
		{"Vulkan0", "llvmpipe", "Vulkan", "99", "none", CodeDeviceNotUsed, "row ran on the CPU"},
		{"auto", "", "CPU", "-1", "auto", CodeDeviceNotUsed, "asked for auto, and the row ran on the CPU"},
		// the row does not say where it ran
		{"Vulkan0", "-", "Vulkan", "99", "-", CodeDeviceNotUsed, "does not say where it ran"},
		{"Vulkan0", "llvmpipe", "Vulkan", "-", "-", CodeDeviceNotUsed, "does not say where it ran"},
		// ran on another backend's device
		{"Vulkan0", "NVIDIA GB10", "CUDA", "99", "auto", CodeDeviceOtherBackend, "asked for Vulkan0 (Vulkan), and the row ran on CUDA"},
		{"Vulkan0", "NVIDIA GB10", "CUDA,Vulkan", "99", "CUDA0", CodeDeviceOtherBackend, "and the row ran on CUDA"},
		{"CUDA0/RPC0[127.0.0.1:50052]", "NVIDIA GB10", "CUDA", "99", "CUDA0", CodeDeviceOtherBackend, "(CUDA,RPC), and the row ran on CUDA"},
	}
	for i, c := range cases {
		r := deviceRow(t, c.gpuInfo, c.backends, c.ngl, c.devices)
		code, why := DeviceGate{Want: c.want}.Check(&r)
		if code != c.code || !strings.Contains(why, c.why) || (c.code == "") != (why == "") {
			t.Errorf("case %d (want %q, gpu_info %q, backends %q, ngl %s, devices %q): %q %q, want %q containing %q",
				i, c.want, c.gpuInfo, c.backends, c.ngl, c.devices, code, why, c.code, c.why)
		}
	}
}
