package study

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func loadValid(t *testing.T) *Plan {
	t.Helper()
	p, err := Load(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}

func TestValidPlan(t *testing.T) {
	p := loadValid(t)
	probs, models := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File})
	if errs := Errors(probs); len(errs) != 0 {
		t.Fatalf("valid plan refused: %v", errs)
	}
	if len(probs) != 0 {
		t.Errorf("unexpected warnings: %v", probs)
	}
	if models["tiny"].ContextLength != 4096 || models["moe"].Header.ExpertCount != 4 {
		t.Errorf("model info: %+v", models)
	}
	sum, b, err := p.SHA256()
	if err != nil || len(sum) != 64 || !json.Valid(b) {
		t.Fatalf("sha %q %v", sum, err)
	}
	// Defaults are part of what is hashed: a plan that spells them out hashes the same.
	q := loadValid(t)
	q.Gates.CVTG = 0.05
	q.Axes.Ubatch = []int{512}
	if s2, _, _ := q.SHA256(); s2 != sum {
		t.Errorf("explicit defaults hash differently: %s vs %s", s2, sum)
	}
	q.Axes.Depths = []int{0, 128}
	if s3, _, _ := q.SHA256(); s3 == sum {
		t.Error("a changed plan must hash differently")
	}
}

func TestExpand(t *testing.T) {
	p := loadValid(t)
	legs, err := Expand(p, "testdata")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range legs {
		ids = append(ids, l.ID)
	}
	want := "tiny/d0#start tiny/d0 tiny/d128 tiny/d256 moe/d0 moe/d128 moe/d256 tiny/d0#end"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("legs = %s\nwant   %s", got, want)
	}
	l := legs[3]
	wantArgs := "-m ../../testdata/models/tiny-llama-f32.gguf -p 64 -n 32 -d 256 -r 3 -b 2048 -ub 512 -fa auto -ctk f16 -ctv f16 -ngl -1 -t 1 -o jsonl"
	if got := strings.Join(l.Args, " "); got != filepath.FromSlash(wantArgs) {
		t.Errorf("args = %s\nwant   %s", got, wantArgs)
	}
	if l.ExpectedRows != 2 || legs[0].Repeat != "start" || legs[0].Of != "tiny/d0" {
		t.Errorf("leg = %+v / %+v", l, legs[0])
	}
	if len(l.Conditions) != 1 {
		t.Errorf("conditions = %v", l.Conditions)
	}

	p.Split = SplitCombined
	p.Repeatability = nil
	p.Axes.KV = []KVType{{"f16", "f16"}, {"q8_0", "q8_0"}}
	legs, _ = Expand(p, "")
	if len(legs) != 4 || legs[1].ID != "moe/kv-f16-f16" || legs[2].ID != "tiny/kv-q8_0-q8_0" || legs[0].ExpectedRows != 6 {
		t.Errorf("combined legs = %+v", legs)
	}
	p.Split = SplitCombinedModel
	p.Axes.KV = []KVType{{"f16", "f16"}}
	legs, _ = Expand(p, "")
	if len(legs) != 1 || legs[0].ExpectedRows != 12 || strings.Count(strings.Join(legs[0].Args, " "), "-m ") != 2 {
		t.Errorf("one combined leg = %+v", legs)
	}
}

// Each invalid plan is refused with its own precise message.
func TestInvalidPlans(t *testing.T) {
	validJSON, err := os.ReadFile(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	notGGUF := filepath.Join(tmp, "weights.gguf")
	os.WriteFile(notGGUF, []byte("not a model at all, just text"), 0o644)

	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(validJSON, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	axes := func(m map[string]any) map[string]any { return m["axes"].(map[string]any) }
	model0 := func(m map[string]any) map[string]any { return m["models"].([]any)[0].(map[string]any) }
	pred := func(m map[string]any, i int) map[string]any { return m["predictions"].([]any)[i].(map[string]any) }

	cases := []struct {
		name string
		data []byte
		want string // substring of the one problem reported for it
	}{
		{"syntax error", []byte("{\n  \"schema\": \"sparkbench.throughput/v1\",\n  \"name\": \"x\",,\n}"), "valid.json:3:"},
		{"unknown field", []byte(strings.Replace(string(validJSON), `"depths"`, `"depth"`, 1)), `unknown field "depth"`},
		{"wrong type", []byte(strings.Replace(string(validJSON), `"reps": 3`, `"reps": "three"`, 1)), "axes.reps: want int"},
		{"wrong schema", edit(func(m map[string]any) { m["schema"] = "sparkbench.capacity/v1" }), `is not a throughput plan schema`},
		{"missing model file", edit(func(m map[string]any) { model0(m)["path"] = "nope.gguf" }), "does not exist"},
		{"not a GGUF", edit(func(m map[string]any) { model0(m)["path"] = notGGUF }), "invalid magic"},
		{"unhashed model", edit(func(m map[string]any) { delete(model0(m), "sha256") }), `model "tiny" is unhashed`},
		{"hash mismatch", edit(func(m map[string]any) { model0(m)["sha256"] = strings.Repeat("ab", 32) }), "MISMATCH"},
		{"depth beyond context", edit(func(m map[string]any) { axes(m)["depths"] = []int{0, 8192} }), "exceeds model \"tiny\"'s context length 4096"},
		{"empty axis", edit(func(m map[string]any) { axes(m)["depths"] = []int{} }), "axes.depths: empty axis"},
		{"duplicate depth", edit(func(m map[string]any) { axes(m)["depths"] = []int{0, 128, 128} }), "128 is listed twice: duplicate legs"},
		{"duplicate model", edit(func(m map[string]any) {
			ms := m["models"].([]any)
			m["models"] = append(ms, map[string]any{"id": "tiny2", "path": model0(m)["path"], "sha256": model0(m)["sha256"]})
		}), `is already model "tiny": duplicate legs`},
		{"bad reps", edit(func(m map[string]any) { axes(m)["reps"] = 0 }), "axes.reps: 0: want 1 to 1000"},
		{"negative depth", edit(func(m map[string]any) { axes(m)["depths"] = []int{-128} }), "-128 is below the minimum 0"},
		{"bad flash attn", edit(func(m map[string]any) { axes(m)["flash_attn"] = []string{"1"} }), `"1": want on, off or auto`},
		{"bad kv type", edit(func(m map[string]any) { axes(m)["kv_types"] = []map[string]string{{"k": "q8", "v": "f16"}} }), `"q8" is not a KV cache type`},
		{"extra args collide", edit(func(m map[string]any) { axes(m)["extra_args"] = []string{"-d", "512"} }), "-d is set by the plan (axes.depths)"},
		{"band lo above hi", edit(func(m map[string]any) { pred(m, 0)["lo"] = 10.0; pred(m, 0)["hi"] = 5.0 }), "lo 10 is above hi 5"},
		{"fork arms overlap", edit(func(m map[string]any) {
			pred(m, 1)["arms"] = []map[string]any{{"name": "a", "hi": 0.0}, {"name": "b", "lo": -0.1}}
		}), `overlaps arm "a"`},
		{"unknown model in selector", edit(func(m map[string]any) { pred(m, 0)["about"].(map[string]any)["model"] = "llama" }), `"llama" is not a model ID`},
		{"depth not measured", edit(func(m map[string]any) { pred(m, 0)["about"].(map[string]any)["depth"] = 512 }), "512 is not a measured depth"},
		{"test not measured", edit(func(m map[string]any) { pred(m, 2)["about"].(map[string]any)["test"] = "tg128" }), "tg128 is not measured by this plan"},
		{"unknown kind", edit(func(m map[string]any) { pred(m, 3)["kind"] = "guess" }), `"guess": want band, fork, comparison or question`},
		{"bad repeatability leg", edit(func(m map[string]any) { m["repeatability"].(map[string]any)["leg"] = "tiny" }), `repeatability.leg "tiny" is not a leg of this plan`},
		{"bad canary", edit(func(m map[string]any) { m["canary"].(map[string]any)["model"] = "big" }), `canary.model: "big" is not a model ID`},
	}
	seen := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join("testdata", "valid.json") // same folder: relative model paths resolve
			p, err := Decode(path, c.data)
			var msgs []string
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("decode error of type %T: %v", err, err)
				}
				msgs = []string{err.Error()}
			} else {
				p.Defaults()
				probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File})
				for _, pr := range Errors(probs) {
					msgs = append(msgs, pr.Path+": "+pr.Msg)
				}
			}
			if len(msgs) == 0 {
				t.Fatal("plan accepted")
			}
			joined := strings.Join(msgs, "\n")
			if !strings.Contains(joined, c.want) {
				t.Fatalf("problems lack %q:\n%s", c.want, joined)
			}
			if prev, dup := seen[joined]; dup {
				t.Errorf("same message as case %q: %s", prev, joined)
			}
			seen[joined] = c.name
		})
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct messages", len(seen))
	}
}

func TestUbatchCannotFillWarns(t *testing.T) {
	p := loadValid(t)
	p.Axes.Ubatch = []int{32, 128, 512}
	probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"})
	if len(Errors(probs)) != 0 {
		t.Fatalf("errors: %v", probs)
	}
	var warns []string
	for _, pr := range probs {
		warns = append(warns, pr.String())
	}
	got := strings.Join(warns, "\n")
	if !strings.Contains(got, "ubatch 128 is larger than the longest prompt (64 tokens): it cannot fill") || strings.Contains(got, "ubatch 32 ") {
		t.Errorf("warnings = %s", got)
	}
}

func f(x float64) *float64 { return &x }

func TestVerdictsSeedValues(t *testing.T) {
	band := Prediction{ID: "P", Kind: KindBand, Lo: f(75), Hi: f(90), NoiseFloor: DefaultNoiseFloor}
	// GLM-4.7-Flash: predicted 75-90, observed 71.93: 4.1% below the floor.
	v := EvaluateBand(band, 71.93)
	if v.Outcome != Miss || math.Abs(*v.Distance-(-0.0409)) > 0.0001 || !strings.Contains(v.Detail, "4.1% below") {
		t.Errorf("band miss: %+v", v)
	}
	// 2c: band 38-44, observed 44.21: 0.5% over, within the 1.5% noise floor.
	v = EvaluateBand(Prediction{ID: "2c", Kind: KindBand, Lo: f(38), Hi: f(44), NoiseFloor: DefaultNoiseFloor}, 44.21)
	if v.Outcome != MissEdge || math.Abs(*v.Distance-0.00477) > 0.0001 {
		t.Errorf("edge miss: %+v", v)
	}
	// 2b: band 37-43, observed 43.56: overshot 1.3% (within 1.5%: edge as well).
	v = EvaluateBand(Prediction{ID: "2b", Kind: KindBand, Lo: f(37), Hi: f(43), NoiseFloor: DefaultNoiseFloor}, 43.56)
	if math.Abs(*v.Distance-0.01302) > 0.0001 {
		t.Errorf("2b distance: %+v", v)
	}
	v = EvaluateBand(Prediction{ID: "2a", Kind: KindBand, Lo: f(75), Hi: f(85)}, 78.38)
	if v.Outcome != Hit || v.Distance != nil {
		t.Errorf("hit: %+v", v)
	}
	// 2d amended fork: <=92 MLA class; >=99 Flash-specific; observed 110.80.
	fork := Prediction{ID: "2d", Kind: KindFork, Arms: []Arm{{Name: "MLA class", Hi: f(92)}, {Name: "Flash-specific", Lo: f(99)}}}
	if v = EvaluateFork(fork, 110.80); v.Outcome != Hit || v.Arm != "Flash-specific" {
		t.Errorf("fork: %+v", v)
	}
	if v = EvaluateFork(fork, 95); v.Outcome != Inconclusive {
		t.Errorf("fork inconclusive: %+v", v)
	}
	if v = EvaluateFork(fork, 92); v.Arm != "MLA class" {
		t.Errorf("fork bounds are inclusive: %+v", v)
	}
	// 3d: q8 KV >= f16 at 32K (43.75 vs 38.15) holds; d0 within 5% (88.66 vs 92.12) holds.
	if v = EvaluateComparison(Prediction{Kind: KindComparison, Op: ">="}, 43.75, 38.15); v.Outcome != Holds {
		t.Errorf(">=: %+v", v)
	}
	if v = EvaluateComparison(Prediction{Kind: KindComparison, Op: "within", Tolerance: 0.05}, 88.66, 92.12); v.Outcome != Holds || !strings.Contains(v.Detail, "-3.8%") {
		t.Errorf("within: %+v", v)
	}
	if v = EvaluateComparison(Prediction{Kind: KindComparison, Op: ">=", Tolerance: 0.02}, 90, 92.12); v.Outcome != Fails {
		t.Errorf(">= with tolerance: %+v", v)
	}
	if v = EvaluateQuestion(Prediction{ID: "P5", Kind: KindQuestion}, 7068); v.Outcome != Answered || *v.Value != 7068 {
		t.Errorf("question: %+v", v)
	}
}

// An unhashed model is a problem with a code the window acts on (it hashes the model when it
// registers), so nothing matches its words; the code is not part of the JSON report.
func TestUnhashedModelHasItsCode(t *testing.T) {
	p := loadValid(t)
	p.Models[0].SHA256 = ""
	probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"})
	var found *Problem
	for i := range probs {
		if probs[i].Code == ProblemUnhashed {
			found = &probs[i]
		}
	}
	if found == nil || found.Path != "models[0].sha256" || found.Severity != SevError {
		t.Fatalf("no unhashed problem with its code in %v", probs)
	}
	b, err := json.Marshal(found)
	if err != nil || strings.Contains(string(b), `"code"`) || strings.Contains(string(b), `"Code"`) {
		t.Fatalf("JSON %s (%v): the code must stay out of it", b, err)
	}
	for _, pr := range probs {
		if pr.Code == ProblemUnhashed && pr != *found {
			t.Errorf("a second unhashed problem: %v", pr)
		}
	}
}
