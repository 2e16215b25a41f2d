package capacity

import (
	"encoding/json"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// minimalPlanJSON is the seed plan with every field that has a default left out.
func minimalPlanJSON(t *testing.T) map[string]any {
	m := seedPlanJSON(t)
	for _, k := range []string{"passes", "warmups", "measured", "n_predict", "ctx_per_slot", "knee_threshold"} {
		delete(m, k)
	}
	l := m["limits"].(map[string]any)
	for _, k := range []string{"completion_rate_min", "generation_rate_spread_max", "e2e_p95_spread_max", "objective_tolerance", "quality_reference"} {
		delete(l, k)
	}
	return m
}

func planSHA(t *testing.T, m map[string]any) (string, []study.Problem) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode("plan.json", data)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	return sum, study.Errors(Validate(p, ValidateOptions{}))
}

// TestPlanSHA256Unchanged pins the identity of plans that were valid before explicit values
// were kept as written: the seed plan, the same plan with every default left out (it must
// hash as the seed, whose values are the defaults), with defaults given as null, and with a
// band's noise floor and the warmups spelled out. Their SHA-256s were taken before the change.
func TestPlanSHA256Unchanged(t *testing.T) {
	const seedSHA = "93c2f6ee67ef564e3b7ec8a6dbbad40951d587da51f8b74c516f03c64b33898b"
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{"seed", func(m map[string]any) {}, seedSHA},
		{"defaults left out", func(m map[string]any) {
			mm := minimalPlanJSON(t)
			clear(m)
			for k, v := range mm {
				m[k] = v
			}
		}, seedSHA},
		{"defaults as null", func(m map[string]any) {
			for _, k := range []string{"passes", "warmups", "measured", "n_predict", "ctx_per_slot", "knee_threshold"} {
				m[k] = nil
			}
			l := m["limits"].(map[string]any)
			for _, k := range []string{"completion_rate_min", "generation_rate_spread_max", "e2e_p95_spread_max", "objective_tolerance", "quality_reference"} {
				l[k] = nil
			}
			pred(m, 0)["noise_floor"] = nil
		}, seedSHA},
		{"noise floor spelled out", func(m map[string]any) { pred(m, 0)["noise_floor"] = study.DefaultNoiseFloor }, seedSHA},
		{"other values", func(m map[string]any) {
			m["warmups"], m["measured"], m["n_predict"], m["ctx_per_slot"], m["seed"] = 0, 3, 16, 256, 0
			l := m["limits"].(map[string]any)
			l["completion_rate_min"], l["objective_tolerance"] = 0.5, 0.3
			pred(m, 0)["noise_floor"] = 0.5
		}, "e7c9263ef447b04772fc11dc268aa67d6e2efe208c997f969024499d2e430d59"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := seedPlanJSON(t)
			tc.mutate(m)
			got, errs := planSHA(t, m)
			if len(errs) != 0 {
				t.Fatalf("refused: %v", errs)
			}
			if got != tc.want {
				t.Errorf("plan SHA-256 %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFaultsCapacityExplicitValuesKept: a field the user wrote is never replaced by its default; a written
// value outside the field's range is refused at the field's path, naming the range.
func TestFaultsCapacityExplicitValuesKept(t *testing.T) {
	limits := func(m map[string]any) map[string]any { return m["limits"].(map[string]any) }
	cases := []struct {
		name   string
		mutate func(m map[string]any)
		path   string
		msg    string
	}{
		{"measured 0", func(m map[string]any) { m["measured"] = 0 }, "measured", "0: want 1 to 100000 measured requests per client level; or leave the field out for the default 8"},
		{"n_predict 0", func(m map[string]any) { m["n_predict"] = 0 }, "n_predict", "0: want at least 2 tokens per request (the inter-token latency needs two); or leave the field out for the default 64"},
		{"ctx_per_slot 0", func(m map[string]any) { m["ctx_per_slot"] = 0 }, "ctx_per_slot", "0: want a positive context per slot larger than n_predict (64), e.g. 2048; or leave the field out for the default 2048"},
		{"knee_threshold 0", func(m map[string]any) { m["knee_threshold"] = 0 }, "knee_threshold", "0: want a positive gain per doubling in (0, 10], e.g. 0.2 for 20%; or leave the field out for the default 0.2"},
		{"passes []", func(m map[string]any) { m["passes"] = []any{} }, "passes", "empty; give forward and/or reverse"},
		{"completion_rate_min 0", func(m map[string]any) { limits(m)["completion_rate_min"] = 0 }, "limits.completion_rate_min", "0: want a fraction in (0, 1], e.g. 1.0; or leave the field out for the default 1"},
		{"generation_rate_spread_max 0", func(m map[string]any) { limits(m)["generation_rate_spread_max"] = 0 }, "limits.generation_rate_spread_max", "0: want a positive fraction in (0, 10]"},
		{"e2e_p95_spread_max 0", func(m map[string]any) { limits(m)["e2e_p95_spread_max"] = 0 }, "limits.e2e_p95_spread_max", "0: want a positive fraction in (0, 10]"},
		{"objective_tolerance 0", func(m map[string]any) { limits(m)["objective_tolerance"] = 0 }, "limits.objective_tolerance", "0: want a fraction in (0, 0.5)"},
		{"quality_reference empty", func(m map[string]any) { limits(m)["quality_reference"] = "" }, "limits.quality_reference", "empty; name the candidate retention is measured against (a candidate ID), or leave the field out for the first candidate"},
		{"noise_floor 0", func(m map[string]any) { pred(m, 0)["noise_floor"] = 0 }, "predictions[0].noise_floor", "0: want a fraction in (0, 1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := seedPlanJSON(t)
			tc.mutate(m)
			_, errs := planSHA(t, m)
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Msg, tc.msg) {
					return
				}
			}
			t.Fatalf("want error at %s containing %q, got %v", tc.path, tc.msg, errs)
		})
	}
}

// TestFaultsCapacityUnknownKeyLocated: an unknown key is reported at its own line and column, not at the
// first place its name occurs as a key (which can be a field elsewhere, or the same typo in a
// map whose keys are free).
func TestFaultsCapacityUnknownKeyLocated(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"a field of another object", "{\n  \"measured\": 8,\n  \"limits\": {\"ttft_ms_p95_max\": 1,\n    \"measured\": 3}\n}",
			`p.json:4:5: unknown field "measured"; check its spelling against docs/capacity.md`},
		{"a candidate's key in a selector", "{\"candidates\": [{\"id\": \"a\"}],\n \"predictions\": [{\"id\": \"P1\",\n  \"about\": {\"figure\": \"knee\", \"id\": \"a\"}}]}",
			`p.json:3:31: unknown field "id"`},
		{"the second of two objects", "{\"candidates\": [{\"id\": \"a\", \"label\": \"A\"},\n  {\"id\": \"b\", \"lable\": \"B\"}]}",
			`p.json:2:15: unknown field "lable"`},
		{"after an escaped name in a string", "{\"description\": \"a \\\"slot\\\": key\", \"name\": \"x\",\n\n  \"slot\": [1]}",
			`p.json:3:3: unknown field "slot"`},
		{"escaped key", "{\"name\": \"x\", \"sl\\u006ft\": [1]}", `p.json:1:15: unknown field "slot"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("p.json", []byte(tc.data))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Control characters in a capacity plan's free text are refused at their path: the text
// reaches terminals and receipts.
func TestFaultsCapacityPlanTextRefusesControlCharacters(t *testing.T) {
	for _, c := range []struct {
		name, want string
		mutate     func(m map[string]any)
	}{
		{"name", "name: name contains the control character U+001B (ESC) at byte 1", func(m map[string]any) { m["name"] = "\x1b[31mgrid" }},
		{"label", "candidates[0].label: candidates[0].label contains the control character U+0007 (BEL)", func(m map[string]any) {
			m["candidates"].([]any)[0].(map[string]any)["label"] = "Q8\a"
		}},
	} {
		m := seedPlanJSON(t)
		c.mutate(m)
		_, probs := planSHA(t, m)
		var got []string
		for _, p := range probs {
			got = append(got, p.Path+": "+p.Msg)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("%s: got %q, want one error starting %q", c.name, got, c.want)
		}
	}
}
