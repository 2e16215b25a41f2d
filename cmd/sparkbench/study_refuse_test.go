package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/store"
)

// notebookCounts is every table's row count and the journal's head, through the store's API.
func notebookCounts(t *testing.T, path string) store.Stats {
	t.Helper()
	n, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st, err := n.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStudyRegisterRefusesInvalidPlansWritingNothing: seventeen distinct invalid plan files,
// each refused by `study register` (exit 2) with its own precise message, and the notebook
// unchanged afterwards: no study, no plan, no prediction, no journal entry, and no hash-cache
// row either, although the plans name model files the notebook has never hashed (fresh copies)
// and one of them (the MISMATCH) has to be hashed to be refused.
func TestStudyRegisterRefusesInvalidPlansWritingNothing(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	models := filepath.Join("..", "..", "testdata", "models")
	// The notebook already holds a registered study (so "unchanged" is not "empty").
	valid, _ := filepath.Abs(filepath.Join("..", "..", "app", "study", "testdata", "valid.json"))
	if code, out, errOut := runCLI("study", "register", valid, "--notebook", nb); code != 0 {
		t.Fatalf("register the valid plan: %d %s %s", code, out, errOut)
	}
	// Fresh copies: any hash computed for them would be a new cache row.
	copyModel := func(name string) string {
		b, err := os.ReadFile(filepath.Join(models, name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "copy-"+name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tiny, moe := copyModel("tiny-llama-f32.gguf"), copyModel("tiny-moe-f32.gguf")
	notGGUF := filepath.Join(dir, "weights.gguf")
	os.WriteFile(notGGUF, []byte("not a model at all, just text"), 0o644)

	base := func() map[string]any {
		return map[string]any{
			"schema": "sparkbench.throughput/v1", "name": "refused",
			"models": []any{map[string]any{"id": "tiny", "path": tiny, "sha256": tinySHA}, map[string]any{"id": "moe", "path": moe, "sha256": moeSHA}},
			"axes":   map[string]any{"depths": []any{0, 128}, "n_prompt": []any{64}, "n_gen": []any{32}, "reps": 3, "threads": []any{1}},
			"split":  "per_depth",
			"predictions": []any{
				map[string]any{"id": "P1", "text": "tiny tg at d0", "kind": "band", "about": map[string]any{"figure": "cell", "model": "tiny", "test": "tg", "depth": 0}, "lo": 100},
				map[string]any{"id": "P2", "text": "moe slope", "kind": "fork", "about": map[string]any{"figure": "depth_slope", "model": "moe", "test": "tg", "depth": 128},
					"arms": []any{map[string]any{"name": "steep", "hi": -0.2}, map[string]any{"name": "flat", "lo": -0.05}}},
			},
		}
	}
	edit := func(f func(m map[string]any)) string {
		m := base()
		f(m)
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	axes := func(m map[string]any) map[string]any { return m["axes"].(map[string]any) }
	model := func(m map[string]any, i int) map[string]any { return m["models"].([]any)[i].(map[string]any) }
	pred := func(m map[string]any, i int) map[string]any { return m["predictions"].([]any)[i].(map[string]any) }
	good := edit(func(map[string]any) {})

	cases := []struct {
		name, plan, want string
	}{
		{"empty file", "", "empty file"},
		{"syntax error", "{\n  \"schema\": \"sparkbench.throughput/v1\",\n  \"name\": \"x\",,\n}", "syntax-error.json:3:"},
		{"unknown field", strings.Replace(good, `"depths"`, `"depth"`, 1), `unknown field "depth"`},
		{"wrong type", strings.Replace(good, `"reps": 3`, `"reps": "three"`, 1), "axes.reps: want int"},
		{"wrong schema", edit(func(m map[string]any) { m["schema"] = "sparkbench.capacity/v1" }), "is not a throughput plan schema"},
		{"missing model file", edit(func(m map[string]any) { model(m, 0)["path"] = filepath.Join(dir, "nope.gguf") }), "nope.gguf does not exist"},
		{"not a GGUF", edit(func(m map[string]any) { model(m, 0)["path"] = notGGUF }), "invalid magic"},
		{"unhashed model", edit(func(m map[string]any) { delete(model(m, 0), "sha256") }), `model "tiny" is unhashed`},
		{"hash mismatch", edit(func(m map[string]any) { model(m, 1)["sha256"] = strings.Repeat("ab", 32) }), "models[1].sha256: MISMATCH"},
		{"depth beyond context", edit(func(m map[string]any) { axes(m)["depths"] = []any{0, 8192} }), `exceeds model "tiny"'s context length 4096`},
		{"empty axis", edit(func(m map[string]any) { axes(m)["n_gen"] = []any{} }), "axes.n_gen: empty axis"},
		{"duplicate depth", edit(func(m map[string]any) { axes(m)["depths"] = []any{0, 128, 128} }), "128 is listed twice: duplicate legs"},
		{"bad reps", edit(func(m map[string]any) { axes(m)["reps"] = 0 }), "axes.reps: 0: want 1 to 1000"},
		{"bad kv type", edit(func(m map[string]any) { axes(m)["kv_types"] = []any{map[string]any{"k": "q8", "v": "f16"}} }), `"q8" is not a KV cache type`},
		{"extra args collide", edit(func(m map[string]any) { axes(m)["extra_args"] = []any{"-d", "512"} }), "-d is set by the plan (axes.depths)"},
		{"band lo above hi", edit(func(m map[string]any) { pred(m, 0)["lo"] = 10.0; pred(m, 0)["hi"] = 5.0 }), "lo 10 is above hi 5"},
		{"unknown model in selector", edit(func(m map[string]any) { pred(m, 1)["about"].(map[string]any)["model"] = "llama" }), `"llama" is not a model ID`},
	}
	before := notebookCounts(t, nb)
	if before.Tables["studies"] != 1 || before.Tables["journal"] == 0 || before.Tables["artefacts"] != 2 {
		t.Fatalf("notebook before: %v", before.Tables)
	}
	seen := map[string]string{}
	for _, c := range cases {
		file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		if err := os.WriteFile(file, []byte(c.plan), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want %q)", c.name, code, out, errOut, c.want)
		}
		if prev, dup := seen[errOut]; dup {
			t.Errorf("%s: the same message as %s: %q", c.name, prev, errOut)
		}
		seen[errOut] = c.name
		if after := notebookCounts(t, nb); !maps.Equal(after.Tables, before.Tables) || after.JournalHead != before.JournalHead {
			t.Fatalf("%s: the refused plan wrote to the notebook: %v -> %v (journal head %s -> %s)", c.name, before.Tables, after.Tables,
				before.JournalHead[:8], after.JournalHead[:8])
		}
	}
	if len(seen) < 10 {
		t.Errorf("%d distinct messages", len(seen))
	}

	// The same plan accepted: one study, and the hashes of the two fresh copies are cached
	// (held while the plan was checked, written once it was accepted).
	file := filepath.Join(dir, "good.json")
	os.WriteFile(file, []byte(good), 0o644)
	if code, out, errOut := runCLI("study", "register", file, "--notebook", nb); code != 0 {
		t.Fatalf("good plan: %d %s %s", code, out, errOut)
	}
	after := notebookCounts(t, nb)
	if after.Tables["studies"] != 2 || after.Tables["artefacts"] != 4 || after.Tables["journal"] <= before.Tables["journal"] {
		t.Errorf("after the good plan: %v", after.Tables)
	}
	code, out, _ := runCLI("model", "verify", tiny, "--notebook", nb, "--json")
	var r modelVerifyReport
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || !r.FromCache || r.SHA256 != tinySHA {
		t.Errorf("the accepted registration's hash is not cached: %d %s", code, out)
	}
}
