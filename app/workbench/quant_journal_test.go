package workbench

import (
	"testing"

	"sparkbench/app/receipt"
)

// TestRedactedHome: a ladder bundle's raw file is the excerpt's bytes, or those with one home
// folder written as ~ throughout; anything else is not.
func TestRedactedHome(t *testing.T) {
	want := `[{"file":"/home/ann/.local/q.gguf","quantize_argv":["/home/ann/llama/llama-quantize","/home/annex/x"],"type":"Q4_0"}]`
	for _, c := range []struct {
		got, home string
		ok        bool
	}{
		{want, "", true},
		{`[{"file":"~/.local/q.gguf","quantize_argv":["~/llama/llama-quantize","/home/annex/x"],"type":"Q4_0"}]`, "/home/ann", true},
		// one path written as ~, another of the same home left: not the redaction
		{`[{"file":"~/.local/q.gguf","quantize_argv":["/home/ann/llama/llama-quantize","/home/annex/x"],"type":"Q4_0"}]`, "", false},
		// the home written as ~ and a figure changed
		{`[{"file":"~/.local/q.gguf","quantize_argv":["~/llama/llama-quantize","/home/annex/x"],"type":"Q4_1"}]`, "", false},
		// a changed byte where no home is
		{`[{"file":"/home/ann/.local/q.gguf","quantize_argv":["/home/ann/llama/llama-quantize","/home/annex/x"],"type":"Q5_0"}]`, "", false},
		{`[]`, "", false},
	} {
		home, ok := redactedHome([]byte(want), []byte(c.got))
		if home != c.home || ok != c.ok {
			t.Errorf("%s: home %q ok %v, want %q %v", c.got, home, ok, c.home, c.ok)
		}
	}
}

// TestQuantIndexNamesItsJournal: a ladder bundle.json's quant map names journal.jsonl and a
// study id, or the bundle is refused; without the map the bundle has no excerpt.
func TestQuantIndexNamesItsJournal(t *testing.T) {
	for _, c := range []struct {
		quant string
		ok    bool
	}{
		{``, true},
		{`,"quant":{"journal":"journal.jsonl","study_id":3}`, true},
		{`,"quant":{"journal":"other.jsonl","study_id":3}`, false},
		{`,"quant":{"journal":"journal.jsonl","study_id":0}`, false},
	} {
		files := receipt.Files{receipt.FileIndex: []byte(`{"kind":"quant","schema":"` + receipt.SchemaBundle + `","sparkbench":"t"` + c.quant + `}`)}
		ix, err := receipt.ReadIndex(files)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.quant, err)
			continue
		}
		if err != nil {
			continue
		}
		x, has, err := ReadQuantExcerpt(files, ix)
		switch {
		case c.quant == "" && (has || x != nil || err != nil):
			t.Errorf("no quant map: excerpt %v %v %v", x, has, err)
		case c.quant != "" && (!has || err == nil || err.Error() != "journal.jsonl: missing: bundle.json names it as the ladder's journal excerpt"):
			t.Errorf("%s without journal.jsonl: %v %v", c.quant, has, err)
		}
	}
}
