package study

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A field the user wrote is never silently replaced by its default: an explicit zero or empty
// list that is out of range is refused with the allowed range; leaving the field out still
// gets the default, and the plan SHA-256 of a plan that omits them is unchanged.
func TestFaultsThroughputExplicitZerosAreNotDefaults(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(t *testing.T, f func(m map[string]any)) *Plan {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		p, err := Decode("plan.json", b)
		if err != nil {
			t.Fatal(err)
		}
		p.Defaults()
		return p
	}
	sub := func(m map[string]any, k string) map[string]any {
		if _, ok := m[k].(map[string]any); !ok {
			m[k] = map[string]any{}
		}
		return m[k].(map[string]any)
	}
	cases := []struct {
		name, path, msg string
		f               func(m map[string]any)
	}{
		{"cv_tg 0", "gates.cv_tg", "0: want a fraction in (0, 1]", func(m map[string]any) { sub(m, "gates")["cv_tg"] = 0 }},
		{"cv_pp_depth 0", "gates.cv_pp_depth", "0: want a fraction in (0, 1]", func(m map[string]any) { sub(m, "gates")["cv_pp_depth"] = 0 }},
		{"cv_pp_d0 0", "gates.cv_pp_d0", "0: want a fraction in (0, 1]", func(m map[string]any) { sub(m, "gates")["cv_pp_d0"] = 0 }},
		{"canary n_prompt 0", "canary", "n_prompt and n_gen must be at least 1", func(m map[string]any) { sub(m, "canary")["n_prompt"] = 0 }},
		{"canary n_gen 0", "canary", "n_prompt and n_gen must be at least 1", func(m map[string]any) { sub(m, "canary")["n_gen"] = 0 }},
		{"canary max_drop 0", "canary.max_drop", "0: want a fraction in (0, 1)", func(m map[string]any) { sub(m, "canary")["max_drop"] = 0 }},
		{"split empty", "split", `"" is not a split`, func(m map[string]any) { m["split"] = "" }},
		{"ubatch []", "axes.ubatch", "an empty list; give at least one value, or leave the field out for the default [512]", func(m map[string]any) { sub(m, "axes")["ubatch"] = []any{} }},
		{"batch []", "axes.batch", "leave the field out for the default [2048]", func(m map[string]any) { sub(m, "axes")["batch"] = []any{} }},
		{"flash_attn []", "axes.flash_attn", `the default ["auto"]`, func(m map[string]any) { sub(m, "axes")["flash_attn"] = []any{} }},
		{"kv_types []", "axes.kv_types", "an empty list", func(m map[string]any) { sub(m, "axes")["kv_types"] = []any{} }},
		{"ngl []", "axes.ngl", "the default [-1]", func(m map[string]any) { sub(m, "axes")["ngl"] = []any{} }},
		{"noise_floor 0", "predictions[0].noise_floor", "0: this plan format cannot keep a noise floor of 0", func(m map[string]any) {
			m["predictions"].([]any)[0].(map[string]any)["noise_floor"] = 0
		}},
		{"retries -1", "retries", "-1: want 0 to 100 more attempts", func(m map[string]any) { m["retries"] = -1 }},
		{"on_cv empty", "gates.on_cv", `"": want "halt"`, func(m map[string]any) { sub(m, "gates")["on_cv"] = "" }},
		{"on_cv other", "gates.on_cv", `"skip": want "halt" (a flagged process halts its leg, the default) or "count"`, func(m map[string]any) { sub(m, "gates")["on_cv"] = "skip" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := edit(t, c.f)
			probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"})
			var found bool
			for _, pr := range Errors(probs) {
				if pr.Path == c.path && strings.Contains(pr.Msg, c.msg) {
					found = true
				}
			}
			if !found {
				t.Fatalf("want an error at %s containing %q, got %v", c.path, c.msg, probs)
			}
		})
	}
	// Absent fields still get their defaults, and an explicit default value is the same plan.
	plain := edit(t, func(map[string]any) {})
	explicit := edit(t, func(m map[string]any) {
		sub(m, "gates")["cv_tg"] = 0.05
		sub(m, "axes")["ubatch"] = []any{512}
	})
	a, _, _ := plain.SHA256()
	b, _, _ := explicit.SHA256()
	if a != b || plain.Gates.CVTG != 0.05 || plain.Axes.Ubatch[0] != 512 || plain.Predictions[0].NoiseFloor != DefaultNoiseFloor {
		t.Fatalf("defaults: %s vs %s, %+v", a, b, plain.Gates)
	}
	if probs, _ := Validate(plain, ValidateOptions{PlanDir: "testdata"}); len(Errors(probs)) != 0 {
		t.Fatalf("the plain plan is refused: %v", probs)
	}
	// on_cv is not defaulted into the frozen plan (plans registered before it keep their
	// SHA-256); written, it is kept: "count" is another plan than "halt", and both are valid.
	if plain.Gates.OnCV != "" || plain.Gates.CountsFlagged() {
		t.Fatalf("on_cv left out reads %q", plain.Gates.OnCV)
	}
	for _, v := range []string{OnCVHalt, OnCVCount} {
		p := edit(t, func(m map[string]any) { sub(m, "gates")["on_cv"] = v })
		if probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"}); len(Errors(probs)) != 0 {
			t.Fatalf("on_cv %q refused: %v", v, probs)
		}
		if sha, _, _ := p.SHA256(); sha == a || p.Gates.OnCV != v || p.Gates.CountsFlagged() != (v == OnCVCount) {
			t.Fatalf("on_cv %q: sha %s (plain %s), kept %q", v, sha, a, p.Gates.OnCV)
		}
	}
}

// An unknown field is reported at the typo's own line and column, not at the end of the plan
// (where the decoder stands when it notices), even when the same name is a field elsewhere.
func TestFaultsThroughputUnknownFieldIsLocatedAtTheKey(t *testing.T) {
	plan := "{\n  \"schema\": \"sparkbench.throughput/v1\",\n  \"name\": \"x\",\n  \"axes\": {\"depth\": [0],\n    \"n_prompt\": [64]},\n  \"models\": [],\n  \"gates\": {\"cv_tg\": 0.05}\n}\n"
	_, err := Decode("plan.json", []byte(plan))
	if err == nil || err.Error() != `plan.json:4:12: unknown field "depth"; check its spelling against docs/plans.md` {
		t.Fatalf("got %v", err)
	}
	// "model" is a selector field, not a top-level one: the top-level key is the wrong one.
	plan2 := "{\"schema\": \"sparkbench.throughput/v1\", \"predictions\": [{\"id\": \"P1\", \"about\": {\"model\": \"m\"}}],\n \"model\": \"m\"}"
	_, err = Decode("p2.json", []byte(plan2))
	if err == nil || err.Error() != `p2.json:2:2: unknown field "model"; check its spelling against docs/plans.md` {
		t.Fatalf("got %v", err)
	}
}

// Control characters in a plan's free text are refused at the field that holds them: the text
// is printed to terminals and into receipts.
func TestFaultsThroughputPlanTextRefusesControlCharacters(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ field, replace, with, want string }{
		{"name", `"name": "`, `"name": "\u001b[2J`, "name: name contains the control character U+001B (ESC) at byte 1; remove it (it is one line: no tab or newline either)"},
		{"prediction text", `"text": "tiny tg32`, `"text": "\u0007tiny tg32`, "predictions[0].text: predictions[0].text contains the control character U+0007"},
	} {
		data := strings.Replace(string(base), c.replace, c.with, 1)
		if data == string(base) {
			t.Fatalf("%s: nothing replaced", c.field)
		}
		p, err := Decode("plan.json", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		p.Defaults()
		probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata"})
		var got []string
		for _, pr := range Errors(probs) {
			got = append(got, pr.Path+": "+pr.Msg)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%s: got %q, want one error starting %q", c.field, got, c.want)
		}
	}
}
