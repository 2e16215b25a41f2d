package quant

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const explicitBase = `{"schema": "sparkbench.quant/v1", "name": "which quant",
  "reference": {"path": "medium-llama-f16.gguf", "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
  "quants": ["Q8_0", "Q4_0"],
  "imatrix": {"calibration": {"path": "calib.txt", "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
  "speed": {"depths": [0, 512]},
  "quality": {"corpus": {"path": "corpus.txt", "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
  "rule": {"maximize": "tg@512"}}`

// A field the user wrote is never silently replaced by its default (the rule throughput and
// capacity plans follow): an explicit zero or empty list out of range is refused with the
// allowed range; leaving the field out still gets the default, and a plan that omits them
// keeps its SHA-256.
func TestFaultsQuantExplicitZerosAreNotDefaults(t *testing.T) {
	edit := func(t *testing.T, f func(m map[string]any)) *Plan {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(explicitBase), &m); err != nil {
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
	sub := func(m map[string]any, path ...string) map[string]any {
		for _, k := range path {
			if _, ok := m[k].(map[string]any); !ok {
				m[k] = map[string]any{}
			}
			m = m[k].(map[string]any)
		}
		return m
	}
	cases := []struct {
		name, path, msg string
		f               func(m map[string]any)
	}{
		{"speed.reps 0", "speed.reps", "0: want at least 1, or leave the field out for the default 5", func(m map[string]any) { sub(m, "speed")["reps"] = 0 }},
		{"speed.n_prompt 0", "speed.n_prompt", "0: want at least 1, or leave the field out for the default 512", func(m map[string]any) { sub(m, "speed")["n_prompt"] = 0 }},
		{"speed.n_gen 0", "speed.n_gen", "0: want at least 1, or leave the field out for the default 128", func(m map[string]any) { sub(m, "speed")["n_gen"] = 0 }},
		{"speed.threads 0", "speed.threads", "0: want at least 1, or leave the field out for the default 1", func(m map[string]any) { sub(m, "speed")["threads"] = 0 }},
		{"quality.chunks 0", "quality.chunks", "0: want at least 1, or leave the field out for the default 20", func(m map[string]any) { sub(m, "quality")["chunks"] = 0 }},
		{"quality.ctx 0", "quality.ctx", "0: want at least 16 tokens of context, or leave the field out for the default 128", func(m map[string]any) { sub(m, "quality")["ctx"] = 0 }},
		{"imatrix.ctx 0", "imatrix.ctx", "0: want at least 16 tokens per chunk, or leave the field out for the default 512", func(m map[string]any) { sub(m, "imatrix")["ctx"] = 0 }},
		{"imatrix.chunks 0", "imatrix.chunks", "0: want at least 1, or leave the field out for the default 16", func(m map[string]any) { sub(m, "imatrix")["chunks"] = 0 }},
		{"cv_tg 0", "speed.gates.cv_tg", "0: want a fraction in (0, 1] (0.05 = 5%), or leave the field out for the default 0.05", func(m map[string]any) { sub(m, "speed", "gates")["cv_tg"] = 0 }},
		{"cv_pp_depth 0", "speed.gates.cv_pp_depth", "0: want a fraction in (0, 1]", func(m map[string]any) { sub(m, "speed", "gates")["cv_pp_depth"] = 0 }},
		{"cv_pp_d0 0", "speed.gates.cv_pp_d0", "0: want a fraction in (0, 1]", func(m map[string]any) { sub(m, "speed", "gates")["cv_pp_d0"] = 0 }},
		{"on_cv empty", "speed.gates.on_cv", `"": want "halt"`, func(m map[string]any) { sub(m, "speed", "gates")["on_cv"] = "" }},
		{"on_cv other", "speed.gates.on_cv", `"drop": want "halt" (a flagged process halts its leg, the default) or "count"`, func(m map[string]any) { sub(m, "speed", "gates")["on_cv"] = "drop" }},
		{"memory empty", "memory", `"": want "bench"`, func(m map[string]any) { m["memory"] = "" }},
		{"tie_break []", "rule.tie_break", "an empty list; give the chain", func(m map[string]any) { sub(m, "rule")["tie_break"] = []any{} }},
		{"kv_types []", "kv_types", "an empty list; give at least one KV cache type", func(m map[string]any) { m["kv_types"] = []any{} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := edit(t, c.f)
			errs := errorsOf(Validate(p, ValidateOptions{}))
			if !slices.Contains(errs, c.path+": "+c.msg) && !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, c.path+": "+c.msg) }) {
				t.Fatalf("want an error %q, got %v", c.path+": "+c.msg, errs)
			}
		})
	}
	// Absent fields still get their defaults, and writing the default value is the same plan.
	plain := edit(t, func(map[string]any) {})
	if errs := errorsOf(Validate(plain, ValidateOptions{})); len(errs) > 0 {
		t.Fatalf("the base plan: %v", errs)
	}
	if plain.Speed.Reps != 5 || plain.Quality.Chunks != 20 || plain.Imatrix.Chunks != 16 || plain.Memory != MemoryBench || len(plain.Rule.TieBreak) != 4 {
		t.Fatalf("defaults not filled: %+v", plain)
	}
	explicit := edit(t, func(m map[string]any) {
		sub(m, "speed")["reps"] = 5
		sub(m, "quality")["chunks"] = 20
		m["memory"] = "bench"
	})
	a, _, _ := plain.SHA256()
	b, _, _ := explicit.SHA256()
	if a != b {
		t.Fatalf("writing the default values changed the plan's SHA-256: %s vs %s", a, b)
	}
	// An explicit value is kept as written.
	three := edit(t, func(m map[string]any) { sub(m, "speed")["reps"] = 3; sub(m, "quality")["chunks"] = 2 })
	if three.Speed.Reps != 3 || three.Quality.Chunks != 2 {
		t.Fatalf("explicit values replaced: reps %d, chunks %d", three.Speed.Reps, three.Quality.Chunks)
	}
}
