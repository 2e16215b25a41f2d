package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/quantfmt"
)

// TestKLDLegOverhead is the KL-divergence leg's benchmark (scripts/bench-kld.sh): the same
// llama-perplexity --kl-divergence command on the medium model's Q4_0 against its F16 base
// logits (-c 128, 8 chunks), run directly under a pipe and through the runner
// (StartPerplexity: pty, parsing, events), interleaved in pairs with the order alternating,
// beside an A/A control (direct vs direct). It prints the median per-pair ratio of wall time
// runner/direct with its bootstrap interval, and checks that both sides read the same mean KLD.
// Set SPARKBENCH_KLD_BENCH=1 to run it; SPARKBENCH_KLD_PAIRS (default 20) sets the pairs.
func TestKLDLegOverhead(t *testing.T) {
	if os.Getenv("SPARKBENCH_KLD_BENCH") != "1" {
		t.Skip("set SPARKBENCH_KLD_BENCH=1 (scripts/bench-kld.sh) to run the KL-divergence leg benchmark")
	}
	pairs := 20
	if v, err := strconv.Atoi(os.Getenv("SPARKBENCH_KLD_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	tool := qualityTool(t, PerplexityTool)
	base := filepath.Join(t.TempDir(), "f16.kld")
	args := []string{"-t", llamatest.Threads}
	r := StartPerplexity(context.Background(), PerplexitySpec{Tool: tool, Model: llamatest.Model(t, "medium-llama-f16.gguf"), Mode: PerplexityBase,
		Corpus: corpusPath(t), Ctx: 128, Chunks: 8, Base: base, Args: args, Limits: realLimits})
	for range r.Events() {
	}
	if res := r.Result(); res.Exit.Class != ClassOK {
		t.Fatalf("base logits: %+v", res.Exit)
	}
	spec := PerplexitySpec{Tool: tool, Model: llamatest.Model(t, "medium-llama-q4_0.gguf"), Mode: PerplexityKLD, Base: base, Args: args,
		Limits: realLimits, NoFingerprint: true}
	argv := spec.Argv(base)
	direct := func() (time.Duration, float64) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("direct: %v\n%s", err, out.String())
		}
		d := time.Since(t0)
		parsed := quantfmt.ParsePerplexityOutput(out.String())
		if parsed.Stats == nil {
			return d, -1 // the tool's last lines lost at exit (seen under a pipe too): no figure
		}
		return d, parsed.Stats.MeanKLD.Value
	}
	viaRunner := func() (time.Duration, float64) {
		t0 := time.Now()
		run := StartPerplexity(context.Background(), spec)
		for range run.Events() {
		}
		d := time.Since(t0)
		res := run.Result()
		if res.KLD == nil {
			return d, -1
		}
		return d, res.KLD.MeanKLD.Value
	}
	var rd, aa []float64
	var dms, rms []float64
	figures := map[string]int{}
	for i := 0; i < pairs; i++ {
		var d, r time.Duration
		var dk, rk float64
		if i%2 == 0 {
			d, dk = direct()
			r, rk = viaRunner()
		} else {
			r, rk = viaRunner()
			d, dk = direct()
		}
		d1, _ := direct()
		d2, _ := direct()
		rd = append(rd, r.Seconds()/d.Seconds())
		aa = append(aa, d2.Seconds()/d1.Seconds())
		dms, rms = append(dms, d.Seconds()*1000), append(rms, r.Seconds()*1000)
		if dk >= 0 && rk >= 0 && dk != rk {
			t.Errorf("pair %d: direct read mean KLD %v, the runner %v", i, dk, rk)
		}
		figures[fmt.Sprintf("direct %v", dk >= 0)]++
		figures[fmt.Sprintf("runner %v", rk >= 0)]++
	}
	lo, hi := bootstrapMedianCI(rd, 1)
	alo, ahi := bootstrapMedianCI(aa, 2)
	var b strings.Builder
	fmt.Fprintf(&b, "\nKL-divergence leg: llama-perplexity --kl-divergence (medium Q4_0 against F16 base logits, -c 128, 8 chunks, -t %s)\n", llamatest.Threads)
	fmt.Fprintf(&b, "%d interleaved pairs (order alternating); wall time of the whole process, median per-pair ratio, bootstrap 95%% interval\n\n", pairs)
	fmt.Fprintf(&b, "direct median %.0f ms, runner median %.0f ms\n", median(dms), median(rms))
	fmt.Fprintf(&b, "runner/direct wall %.4f [%.4f, %.4f]; A/A direct/direct %.4f [%.4f, %.4f]\n", median(rd), lo, hi, median(aa), alo, ahi)
	fmt.Fprintf(&b, "runs with the statistics block: %v\n", figures)
	fmt.Print(b.String())
	if p := os.Getenv("SPARKBENCH_KLD_OUT"); p != "" {
		_ = os.WriteFile(filepath.Clean(p), []byte(b.String()), 0o644)
	}
}
