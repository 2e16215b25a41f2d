package capacity

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sparkbench/app/study"
)

func seedPlanJSON(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(seedDir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDecodeStrict(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"unknown field", "{\n  \"schema\": \"sparkbench.capacity/v1\",\n  \"slot\": [1]\n}", "p.json:3:3:"},
		{"typo message", `{"slot": [1]}`, `unknown field "slot"; check its spelling against docs/capacity.md`},
		{"nested unknown", `{"limits": {"ttft_p95": 1}}`, `unknown field "ttft_p95"`},
		{"wrong type", "{\n\"slots\": \"1,2,4\"}", "p.json:2:"},
		{"wrong type message", `{"slots": "1,2,4"}`, "want []int"},
		{"trailing", `{"name": "x"} {}`, "trailing data"},
		{"syntax", "{\n\"name\": x}", "p.json:2:"},
		{"empty", "", "p.json:1:1: empty file"},
		{"truncated", `{"name": "x"`, "ends before the object is closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("p.json", []byte(tc.data))
			var de *study.DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a DecodeError containing %q", err, tc.want)
			}
		})
	}
}

// TestValidateRefuses: each mutation of the valid seed plan is refused at a precise path with
// a precise message.
func TestValidateRefuses(t *testing.T) {
	cands := func(m map[string]any) []any { return m["candidates"].([]any) }
	cand0 := func(m map[string]any) map[string]any { return cands(m)[0].(map[string]any) }
	limits := func(m map[string]any) map[string]any { return m["limits"].(map[string]any) }
	flags := func(m map[string]any, f ...string) {
		c := cand0(m)
		c["server_flags"] = append(c["server_flags"].([]any), toAny(f)...)
	}
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		path   string
		msg    string
	}{
		{"schema", func(m map[string]any) { m["schema"] = "sparkbench.throughput/v1" }, "schema", "not a capacity plan schema"},
		{"no name", func(m map[string]any) { m["name"] = " " }, "name", "empty"},
		{"no candidates", func(m map[string]any) { m["candidates"] = []any{} }, "candidates", "at least one candidate"},
		{"duplicate id", func(m map[string]any) { cands(m)[1].(map[string]any)["id"] = "q8-generic" }, "candidates[1].id", "used twice"},
		{"id with slash", func(m map[string]any) { cand0(m)["id"] = "q8/generic" }, "candidates[0].id", "want 1-64 letters"},
		{"no label", func(m map[string]any) { cand0(m)["label"] = "" }, "candidates[0].label", "empty"},
		{"bad sha", func(m map[string]any) { cand0(m)["model"].(map[string]any)["sha256"] = "ABC" }, "candidates[0].model.sha256", "not a SHA-256"},
		{"no sha", func(m map[string]any) { delete(cand0(m)["model"].(map[string]any), "sha256") }, "candidates[0].model.sha256", "missing"},
		{"--parallel", func(m map[string]any) { flags(m, "--parallel", "4") }, "candidates[0].server_flags[10]", `"--parallel" is set by slots`},
		{"-np", func(m map[string]any) { flags(m, "-np", "4") }, "candidates[0].server_flags[10]", "only --parallel, the formula-bound --ctx-size and the port may differ"},
		{"-c", func(m map[string]any) { flags(m, "-c", "8192") }, "candidates[0].server_flags[10]", "ctx_per_slot"},
		{"--ctx-size=", func(m map[string]any) { flags(m, "--ctx-size=8192") }, "candidates[0].server_flags[10]", `"--ctx-size=8192" is set by ctx_per_slot`},
		{"--port", func(m map[string]any) { flags(m, "--port", "8080") }, "candidates[0].server_flags[10]", "free local port"},
		{"--host", func(m map[string]any) { flags(m, "--host", "0.0.0.0") }, "candidates[0].server_flags[10]", "127.0.0.1"},
		{"-m", func(m map[string]any) { flags(m, "-m", "other.gguf") }, "candidates[0].server_flags[10]", "candidates[].model"},
		{"bad regex", func(m map[string]any) { cand0(m)["markers"] = map[string]any{"must": []any{"CPU_(KLEIDIAI"}} }, "candidates[0].markers.must[0]", "not a regular expression"},
		{"must and must_not", func(m map[string]any) {
			cand0(m)["markers"] = map[string]any{"must": []any{"X"}, "must_not": []any{"X"}}
		}, "candidates[0].markers.must_not[0]", "both must and must_not"},
		{"arm in capacity", func(m map[string]any) { cand0(m)["arm"] = "q8_0" }, "candidates[0].arm", "concurrency plans"},
		{"slots unordered", func(m map[string]any) { m["slots"] = []any{1, 4, 2} }, "slots[2]", "2 after 4: list each slot count (--parallel) once, in increasing order"},
		{"slots zero", func(m map[string]any) { m["slots"] = []any{0, 1} }, "slots[0]", "from 1 to 4096"},
		{"no clients", func(m map[string]any) { delete(m, "clients") }, "clients", "empty"},
		{"pass name", func(m map[string]any) { m["passes"] = []any{"forward", "sideways"} }, "passes[1]", `"sideways": want "forward" or "reverse"`},
		{"pass twice", func(m map[string]any) { m["passes"] = []any{"forward", "forward"} }, "passes[1]", "listed twice"},
		{"negative warmups", func(m map[string]any) { m["warmups"] = -1 }, "warmups", "0 to 1000"},
		{"n_predict 1", func(m map[string]any) { m["n_predict"] = 1 }, "n_predict", "inter-token latency needs two"},
		{"ctx too small", func(m map[string]any) { m["ctx_per_slot"] = 64 }, "ctx_per_slot", "no room for the prompt"},
		{"random seed", func(m map[string]any) { m["seed"] = -1 }, "seed", "random"},
		{"no prompt plan", func(m map[string]any) { delete(m, "prompt_plan") }, "prompt_plan.path", "empty"},
		{"no ttft limit", func(m map[string]any) { delete(limits(m), "ttft_ms_p95_max") }, "limits.ttft_ms_p95_max", "want a positive limit"},
		{"no rss limit", func(m map[string]any) { limits(m)["peak_rss_mib_max"] = -5 }, "limits.peak_rss_mib_max", "want a positive limit"},
		{"completion above 1", func(m map[string]any) { limits(m)["completion_rate_min"] = 1.5 }, "limits.completion_rate_min", "(0, 1]"},
		{"tolerance", func(m map[string]any) { limits(m)["objective_tolerance"] = 0.7 }, "limits.objective_tolerance", "(0, 0.5)"},
		{"floor", func(m map[string]any) { limits(m)["quality_floor"] = 21 }, "limits.quality_floor", "[0, 1]"},
		{"reference", func(m map[string]any) { limits(m)["quality_reference"] = "q5" }, "limits.quality_reference", `"q5" is not a candidate`},
		{"reference without gate", func(m map[string]any) {
			delete(limits(m), "quality_floor")
			delete(limits(m), "quality_retention_min")
		}, "limits.quality_reference", "no quality gate"},
		{"knee", func(m map[string]any) { m["knee_threshold"] = -1 }, "knee_threshold", "positive gain"},
		{"figure", func(m map[string]any) {
			pred(m, 0)["about"] = map[string]any{"figure": "rate", "candidate": "q8-generic"}
		}, "predictions[0].about.figure", `"rate": want one of cell_rate`},
		{"cell without clients", func(m map[string]any) {
			pred(m, 2)["about"] = map[string]any{"figure": "cell_rate", "candidate": "q8-generic", "slots": 4}
		}, "predictions[2].about.clients", "missing"},
		{"cell clients not in plan", func(m map[string]any) {
			pred(m, 2)["than"] = map[string]any{"figure": "cell_rate", "candidate": "q8-generic", "slots": 4, "clients": 8}
		}, "predictions[2].than.clients", "8 is not a client level"},
		{"candidate figure with slots", func(m map[string]any) {
			pred(m, 0)["about"] = map[string]any{"figure": "speedup", "candidate": "q8-generic", "slots": 4}
		}, "predictions[0].about", "leave slots and clients out"},
		{"unknown candidate", func(m map[string]any) { pred(m, 3)["about"].(map[string]any)["candidate"] = "q5" }, "predictions[3].about.candidate", "not a candidate ID"},
		{"band without bounds", func(m map[string]any) { delete(pred(m, 0), "lo"); delete(pred(m, 0), "hi") }, "predictions[0]", "needs lo and/or hi"},
		{"prediction twice", func(m map[string]any) { pred(m, 1)["id"] = "P1" }, "predictions[1].id", "used twice"},
	}
	if len(cases) < 8 {
		t.Fatal("want at least 8 invalid-plan cases")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := seedPlanJSON(t)
			tc.mutate(m)
			data, _ := json.Marshal(m)
			p, err := Decode("plan.json", data)
			if err != nil {
				t.Fatal(err)
			}
			p.Defaults()
			errs := study.Errors(Validate(p, ValidateOptions{}))
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Fatalf("want error at %s containing %q, got %v", tc.path, tc.msg, errs)
		})
	}
}

func pred(m map[string]any, i int) map[string]any {
	return m["predictions"].([]any)[i].(map[string]any)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestValidateSeedWithHashes(t *testing.T) {
	p := seedPlan(t)
	var hashed []string
	hash := func(path string) (string, error) {
		hashed = append(hashed, filepath.Base(path))
		switch filepath.Base(path) {
		case "tiny-llama-f32.gguf":
			return "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda", nil
		case "tiny-moe-f32.gguf":
			return "b661d8b0483102bbf249468538c29552cb9a7ffd462197150b07d97886ca35bd", nil
		}
		return "dc56eff33ade04d0a18d2e203c5c21bf252091456ba9a916273bfc2e957f7475", nil
	}
	probs := Validate(p, ValidateOptions{PlanDir: seedDir, Hash: hash})
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	if !slices.Equal(hashed, []string{"tiny-llama-f32.gguf", "tiny-moe-f32.gguf", "prompt-plan.json"}) {
		t.Errorf("hashed %v", hashed)
	}
	wrong := func(string) (string, error) { return sha0, nil }
	errs := study.Errors(Validate(p, ValidateOptions{PlanDir: seedDir, Hash: wrong}))
	if len(errs) != 3 || errs[0].Path != "candidates[0].model.sha256" || !strings.Contains(errs[0].Msg, "MISMATCH") {
		t.Fatalf("mismatch: %v", errs)
	}
	errs = study.Errors(Validate(p, ValidateOptions{PlanDir: t.TempDir(), Hash: hash}))
	if len(errs) != 3 || !strings.Contains(errs[0].Msg, "does not exist") {
		t.Fatalf("absent: %v", errs)
	}
	// Markers without a verbose log level warn.
	p.Candidates[0].ServerFlags = []string{"-t", "4"}
	probs = Validate(p, ValidateOptions{})
	if len(probs) != 1 || probs[0].Severity != study.SevWarning || !strings.Contains(probs[0].Msg, "-lv 4") {
		t.Errorf("warnings %v", probs)
	}
}

func concurrencyPlan() *Plan {
	p := &Plan{
		Schema: SchemaConcurrency, Name: "kv types", ArmAxis: "kv_cache_type",
		Candidates: []Candidate{
			{ID: "f16", Label: "KV f16", Arm: "f16", Model: FileRef{"m.gguf", sha0}, ServerFlags: []string{"-ctk", "f16", "-ctv", "f16"}},
			{ID: "q8", Label: "KV q8_0", Arm: "q8_0", Model: FileRef{"m.gguf", sha0}, ServerFlags: []string{"-ctk", "q8_0", "-ctv", "q8_0"}},
		},
		Slots: []int{1, 2, 4}, Passes: []string{PassForward, PassReverse},
		PromptPlan: FileRef{"prompts.json", sha0},
		Limits:     Limits{TTFTMsP95Max: 1000, E2EMsP95Max: 5000, PeakRSSMiBMax: 4096},
	}
	p.Defaults()
	return p
}

func TestConcurrencyPlan(t *testing.T) {
	p := concurrencyPlan()
	if probs := Validate(p, ValidateOptions{}); len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	for _, tc := range []struct {
		mutate    func(*Plan)
		path, msg string
	}{
		{func(p *Plan) { p.Clients = []int{1, 2} }, "clients", "diagonal clients = slots"},
		{func(p *Plan) { p.Candidates[1].Arm = "" }, "candidates[1].arm", "every candidate is an arm"},
		{func(p *Plan) { p.Candidates[1].Arm = "f16" }, "candidates[1].arm", "arms must differ"},
		{func(p *Plan) { p.ArmAxis = "" }, "arm_axis", "name what the arms vary"},
	} {
		q := concurrencyPlan()
		tc.mutate(q)
		errs := study.Errors(Validate(q, ValidateOptions{}))
		if len(errs) != 1 || errs[0].Path != tc.path || !strings.Contains(errs[0].Msg, tc.msg) {
			t.Errorf("want %s: %s, got %v", tc.path, tc.msg, errs)
		}
	}
	// Assembly runs the diagonal only: one client level per server, cells P1/C1, P2/C2, P4/C4.
	r := mustAssemble(t, p, fixture{}.inputs(t, p))
	if r.Kind != "concurrency" {
		t.Errorf("kind %s", r.Kind)
	}
	for _, c := range r.Candidates {
		if len(c.Cells) != 3 || c.Cells[2].Slots != 4 || c.Cells[2].Clients != 4 || c.Arm == "" {
			t.Fatalf("%s cells %+v", c.ID, c.Cells)
		}
		// uniform 1000 ms E2E: rate = 64 * P tok/s, speedup 4, no knee.
		if s := c.Scaling; s == nil || s.Speedup != 4 || s.Knee != nil || c.Selected.Slots != 4 {
			t.Errorf("%s scaling %+v selected %+v", c.ID, s, c.Selected)
		}
	}
}

func TestScheduleOrderAndArgs(t *testing.T) {
	p := seedPlan(t)
	lts := Schedule(p, "/plans")
	if len(lts) != 12 {
		t.Fatalf("%d lifetimes", len(lts))
	}
	var order []string
	for _, l := range lts {
		order = append(order, l.Key.String())
	}
	want := []string{
		"forward/q8-generic/p1", "forward/q8-generic/p2", "forward/q8-generic/p4",
		"forward/q4-kleidiai-tuned/p1", "forward/q4-kleidiai-tuned/p2", "forward/q4-kleidiai-tuned/p4",
		"reverse/q4-kleidiai-tuned/p4", "reverse/q4-kleidiai-tuned/p2", "reverse/q4-kleidiai-tuned/p1",
		"reverse/q8-generic/p4", "reverse/q8-generic/p2", "reverse/q8-generic/p1",
	}
	if !slices.Equal(order, want) {
		t.Errorf("order %v", order)
	}
	if !slices.Equal(lts[0].Clients, []int{1, 2, 4}) || !slices.Equal(lts[6].Clients, []int{4, 2, 1}) {
		t.Errorf("client order %v / %v", lts[0].Clients, lts[6].Clients)
	}
	wantArgs := []string{"-m", "/testdata/models/tiny-moe-f32.gguf", "--parallel", "4", "--ctx-size", "8192", "-t", "4", "-b", "2048", "-ub", "512", "-fa", "off", "-lv", "4"}
	if !slices.Equal(lts[6].Args, wantArgs) {
		t.Errorf("args %q", lts[6].Args)
	}
	b, _ := json.Marshal(lts[0])
	if !strings.Contains(string(b), `"key":"forward/q8-generic/p1"`) {
		t.Errorf("json %s", b)
	}
}

func TestKeys(t *testing.T) {
	k, err := ParseLifetimeKey("reverse/q4-kleidiai-tuned/p4")
	if err != nil || k != (LifetimeKey{PassReverse, "q4-kleidiai-tuned", 4}) || k.String() != "reverse/q4-kleidiai-tuned/p4" {
		t.Fatalf("%v %v", k, err)
	}
	for _, bad := range []string{"forward/q8/4", "forward/q8/p0", "forward/q8/p04", "sideways/q8/p1", "forward/q8", "forward//p1", "forward/q8/p1/x", "forward/q8/P1"} {
		if _, err := ParseLifetimeKey(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	q, err := ParseQualityKey("q8-generic/p2")
	if err != nil || q != (QualityKey{"q8-generic", 2}) {
		t.Fatalf("%v %v", q, err)
	}
	for _, bad := range []string{"q8-generic", "q8/p2/x", "forward/q8/p2", "q8/2"} {
		if _, err := ParseQualityKey(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestValidateEmptyPlan: an empty plan is refused with messages, not a panic, even with
// predictions that need slots.
func TestValidateEmptyPlan(t *testing.T) {
	for _, p := range []*Plan{{}, {Schema: SchemaConcurrency, Predictions: []Prediction{
		{ID: "P1", Text: "x", Kind: study.KindQuestion, About: Selector{Figure: FigureServingTax}},
		{ID: "P2", Text: "x", Kind: study.KindQuestion, About: Selector{Figure: FigureGainPerDoubling, Slots: ip(2)}},
		{ID: "P3", Text: "x", Kind: study.KindComparison, About: Selector{Figure: FigureCellRate, Slots: ip(2)}, Op: ">="},
	}}} {
		p.Defaults()
		if len(study.Errors(Validate(p, ValidateOptions{}))) < 5 {
			t.Errorf("%+v accepted", p)
		}
		if _, err := Assemble(p, Inputs{}); err == nil {
			t.Error("assembled an empty plan")
		}
	}
}
