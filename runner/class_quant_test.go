package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// quantFixture reads a transcript captured from the real tools (runner/quantfmt/testdata) and
// its exit code.
func quantFixture(t *testing.T, name string) (string, int) {
	t.Helper()
	dir := filepath.Join("quantfmt", "testdata")
	b, err := os.ReadFile(filepath.Join(dir, name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(side, &meta); err != nil {
		t.Fatal(err)
	}
	return string(b), meta.ExitCode
}

// The failures of the real llama-quantize and llama-perplexity (build 11669) classify with
// the tools' own words, whatever their exit status (llama-perplexity exits 0 after refusing);
// their successes classify ok. The drivers ask for one result (Bench, Expected 1) and report
// it only when the output was complete.
func TestClassifyQuantTools(t *testing.T) {
	cases := []struct {
		fixture string
		done    bool
		class   Class
		want    []string
	}{
		{"quantize-q4_0", true, ClassOK, nil},
		{"kld-q4_0", true, ClassOK, nil},
		{"quantize-bad-type", false, ClassBadArgs, []string{"invalid ftype 'Q9_9'"}},
		{"quantize-requant", false, ClassBadArgs, []string{"requantizing from type q8_0 is disabled"}},
		{"quantize-needs-imatrix", false, ClassBadArgs, []string{"this quantization requires an importance matrix", "requires an imatrix"}},
		{"quantize-bad-imatrix", false, ClassLoadFailed, []string{"invalid magic characters: 'this'", "failed to load imatrix"}},
		{"quantize-missing-input", false, ClassLoadFailed, []string{"failed to open GGUF file", "failed to quantize"}},
		{"ppl-too-few", false, ClassBadArgs, []string{"you need at least 256 tokens", "tokenizes to only 136 tokens"}},
		{"ppl-missing-corpus", false, ClassBadArgs, []string{`error while handling argument "-f"`}},
		{"kld-no-base", false, ClassBadArgs, []string{"must provide a name of a file containing the log probabilities"}},
		{"kld-not-logits", false, ClassLoadFailed, []string{"does not look like a file containing log-probabilities"}},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			text, code := quantFixture(t, c.fixture)
			in := ClassifyInput{Code: code, Log: scan(text), Bench: true, Expected: 1}
			if c.done {
				in.Rows = 1
			}
			class, reason := Classify(in)
			if class != c.class {
				t.Fatalf("class %s (%q), want %s", class, reason, c.class)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q lacks %q", reason, w)
				}
			}
		})
	}
}

// Lines the real tools print that the fixtures do not hold (read from build 11669's
// llama-perplexity: a base file cut short, one made at a larger context, another vocabulary).
func TestClassifyQuantLines(t *testing.T) {
	for _, c := range []struct {
		line  string
		class Class
	}{
		{"0.00.369.774 E kl_divergence: failed reading n_vocab, n_chunk from /tmp/qx/tiny.kld", ClassLoadFailed},
		{"0.00.357.432 E kl_divergence: failed to open /tmp/qx/nonexist.kld", ClassLoadFailed},
		{"0.00.357.432 E kl_divergence: base.kld has been computed with 256, while the current context is 128. Increase it with -c and retry", ClassBadArgs},
		{"0.00.357.432 E kl_divergence: inconsistent vocabulary (259 vs 32000)", ClassBadArgs},
	} {
		class, reason := Classify(ClassifyInput{Code: 0, Log: scan(c.line), Bench: true, Expected: 1})
		if class != c.class || !strings.Contains(c.line, reason) {
			t.Errorf("%q: %s %q, want %s quoting the line", c.line, class, reason, c.class)
		}
	}
}
