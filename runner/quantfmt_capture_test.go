package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
)

// TestCaptureQuantfmtFixtures writes runner/quantfmt/testdata: the verbatim pty transcripts of
// the real llama-quantize and llama-perplexity (each run through StartProc, as the drivers run
// them) with a sidecar NAME.json (the argv with the repository and the scratch folder written
// $REPO and $TMP, the exit code). It runs only with SPARKBENCH_CAPTURE_QUANTFMT=1:
//
//	SPARKBENCH_CAPTURE_QUANTFMT=1 go test -tags migrated_fynedo -run TestCaptureQuantfmtFixtures ./runner/
func TestCaptureQuantfmtFixtures(t *testing.T) {
	if os.Getenv("SPARKBENCH_CAPTURE_QUANTFMT") != "1" {
		t.Skip("writes runner/quantfmt/testdata; set SPARKBENCH_CAPTURE_QUANTFMT=1 to capture them again")
	}
	loc := llamatest.Binaries(t)
	q, p := filepath.Join(loc.Dir, QuantizeTool), filepath.Join(loc.Dir, PerplexityTool)
	imat := filepath.Join(loc.Dir, "llama-imatrix")
	f16 := llamatest.Model(t, "medium-llama-f16.gguf")
	q8 := llamatest.Model(t, "medium-llama-q8_0.gguf")
	q4 := llamatest.Model(t, "medium-llama-q4_0.gguf")
	corpus := filepath.Join(llamatest.RepoRoot(), "assets", "corpus", "sparkbench-corpus-v1.txt")
	tmp := t.TempDir()
	out := filepath.Join(llamatest.RepoRoot(), "runner", "quantfmt", "testdata")
	in := func(n string) string { return filepath.Join(tmp, n) }
	b, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(in("short.txt"), b[:100], 0o644))
	must(os.WriteFile(in("not-an-imatrix.gguf"), []byte("this is not a GGUF file\n"), 0o644))
	must(os.WriteFile(in("not-logits.kld"), []byte("this is not a logits file\n"), 0o644))
	th := llamatest.Threads
	ctx := []string{"-c", "128", "-t", th}
	runs := []struct {
		name string
		argv []string
	}{
		{"quantize-help", []string{q, "--help"}},
		{"quantize-q4_0", []string{q, f16, in("q4_0.gguf"), "Q4_0", th}},
		{"quantize-dry-run", []string{q, "--dry-run", f16, "Q4_K_M", th}},
		{"imatrix", append([]string{imat, "-m", f16, "-f", corpus, "--chunks", "8", "-o", in("imatrix.gguf")}, ctx...)},
		{"quantize-q4_k_m-imatrix", []string{q, "--imatrix", in("imatrix.gguf"), f16, in("q4_k_m.gguf"), "Q4_K_M", th}},
		{"quantize-bad-type", []string{q, f16, in("x.gguf"), "Q9_9", th}},
		{"quantize-requant", []string{q, q8, in("requant.gguf"), "Q4_0", th}},
		{"quantize-needs-imatrix", []string{q, f16, in("iq2.gguf"), "IQ2_XS", th}},
		{"quantize-bad-imatrix", []string{q, "--imatrix", in("not-an-imatrix.gguf"), f16, in("y.gguf"), "Q4_0", th}},
		{"quantize-missing-input", []string{q, in("absent.gguf"), in("z.gguf"), "Q4_0", th}},
		{"ppl-default", append([]string{p, "-m", f16, "-f", corpus, "--chunks", "8"}, ctx...)},
		{"ppl-type1", append([]string{p, "-m", f16, "-f", corpus, "--chunks", "20", "--ppl-output-type", "1"}, ctx...)},
		{"kld-base", append([]string{p, "-m", f16, "-f", corpus, "--chunks", "8", "--kl-divergence-base", in("base.kld"), "--ppl-output-type", "1"}, ctx...)},
		{"kld-q4_0", append([]string{p, "-m", q4, "--kl-divergence-base", in("base.kld"), "--kl-divergence"}, ctx...)},
		{"kld-q8_0", append([]string{p, "-m", q8, "--kl-divergence-base", in("base.kld"), "--kl-divergence"}, ctx...)},
		{"kld-base-one-chunk", append([]string{p, "-m", f16, "-f", corpus, "--chunks", "1", "--kl-divergence-base", in("one.kld"), "--ppl-output-type", "1"}, ctx...)},
		{"kld-one-chunk", append([]string{p, "-m", q4, "--kl-divergence-base", in("one.kld"), "--kl-divergence"}, ctx...)},
		{"ppl-too-few", append([]string{p, "-m", f16, "-f", in("short.txt")}, ctx...)},
		{"ppl-missing-corpus", append([]string{p, "-m", f16, "-f", in("absent.txt")}, ctx...)},
		{"kld-no-base", append([]string{p, "-m", q4, "--kl-divergence"}, ctx...)},
		{"kld-not-logits", append([]string{p, "-m", q4, "--kl-divergence-base", in("not-logits.kld"), "--kl-divergence"}, ctx...)},
	}
	lim := Limits{Start: time.Minute, Idle: time.Minute, Total: 3 * time.Minute}
	for _, r := range runs {
		pr := StartProc(context.Background(), ProcSpec{Argv: r.argv, Limits: lim})
		collect(t, pr.Events(), 4*time.Minute)
		x := pr.ExitStatus()
		if x.Class == ClassTimeout || x.Class == ClassFailed && x.Code < 0 {
			t.Fatalf("%s: %+v", r.name, x)
		}
		must(os.WriteFile(filepath.Join(out, r.name+".txt"), pr.Transcript().Bytes(), 0o644))
		argv := make([]string, len(r.argv))
		for i, a := range r.argv {
			a = strings.ReplaceAll(a, tmp, "$TMP")
			argv[i] = strings.ReplaceAll(a, llamatest.RepoRoot(), "$REPO")
		}
		argv[0] = filepath.Base(argv[0])
		side, _ := json.MarshalIndent(map[string]any{"argv": argv, "exit_code": x.Code, "threads": th}, "", "  ")
		must(os.WriteFile(filepath.Join(out, r.name+".json"), append(side, '\n'), 0o644))
		t.Logf("%s: exit %d, %s", r.name, x.Code, x.Duration)
	}
}
