package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
)

// TestTransparency is the transparency benchmark (make bench, through
// scripts/bench-transparency.sh): the same llama-bench command run directly under a pipe and
// through the runner, interleaved in pairs, on the tiny and the medium generated model,
// comparing llama-bench's own t/s. Beside it an A/A control (direct vs direct, same pairing)
// shows how much two identical runs differ on this machine. Set SPARKBENCH_TRANSPARENCY=1 to
// run it; SPARKBENCH_TRANSPARENCY_PAIRS (default 20) sets the pairs per model. A third row
// runs the tiny f16 model on Mesa's software Vulkan device (-ngl 99 with
// GGML_VK_VISIBLE_DEVICES=0) when the build has one.
func TestTransparency(t *testing.T) {
	if os.Getenv("SPARKBENCH_TRANSPARENCY") != "1" {
		t.Skip("set SPARKBENCH_TRANSPARENCY=1 (scripts/bench-transparency.sh) to run the transparency benchmark")
	}
	pairs := 20
	if v, err := strconv.Atoi(os.Getenv("SPARKBENCH_TRANSPARENCY_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	bench := realBench(t)
	models := []struct {
		file string
		args []string
		env  []string
	}{
		{"tiny-llama-f32.gguf", []string{"-p", "128", "-n", "64", "-r", "5"}, nil},
		{"medium-llama-f16.gguf", []string{"-p", "64", "-n", "32", "-r", "3"}, nil},
	}
	vk := []string{"GGML_VK_VISIBLE_DEVICES=0"}
	if dl, err := llamacpp.ListDevices(context.Background(), bench, vk, nil); err == nil && len(dl.Devices) > 0 {
		models = append(models, struct {
			file string
			args []string
			env  []string
		}{"tiny-llama-f16.gguf", []string{"-p", "32", "-n", "16", "-r", "3", "-ngl", "99", "-dev", dl.Devices[0].Name}, vk})
	} else {
		t.Logf("no Vulkan device with %s (%v): the Vulkan row is left out", vk[0], err)
	}
	fper := &Fingerprinter{}
	var table []transparencyRow
	for _, m := range models {
		model := llamatest.Model(t, m.file)
		args := append([]string{"-m", model}, m.args...)
		args = append(args, "-t", llamatest.Threads)
		direct := func() map[benchfmt.Kind]float64 { return kindRates(directRun(t, bench, args, m.env...)) }
		viaRunner := func() map[benchfmt.Kind]float64 {
			leg := StartLeg(context.Background(), LegSpec{Bench: bench, Args: args, Env: m.env, CVGate: CVGate{Off: true}}, WithFingerprinter(fper))
			for range leg.Events() {
			}
			res := leg.Result()
			if res.Exit.Class != ClassOK {
				t.Fatalf("runner leg: %+v", res.Exit)
			}
			var rows []benchfmt.Result
			for _, s := range res.Results() {
				rows = append(rows, s.Result)
			}
			return kindRates(rows)
		}
		ab := map[benchfmt.Kind][]float64{}
		aa := map[benchfmt.Kind][]float64{}
		start := time.Now()
		for i := 0; i < pairs; i++ {
			// A/B pair, order alternating so neither side always runs first
			var d, r map[benchfmt.Kind]float64
			if i%2 == 0 {
				d, r = direct(), viaRunner()
			} else {
				r, d = viaRunner(), direct()
			}
			// A/A pair, the same shape
			d1, d2 := direct(), direct()
			for _, k := range []benchfmt.Kind{benchfmt.KindPP, benchfmt.KindTG} {
				ab[k] = append(ab[k], r[k]/d[k])
				aa[k] = append(aa[k], d2[k]/d1[k])
			}
		}
		for _, k := range []benchfmt.Kind{benchfmt.KindPP, benchfmt.KindTG} {
			name := m.file
			if m.env != nil {
				name += " (Vulkan)"
			}
			table = append(table, newTransparencyRow(name, string(k), ab[k], aa[k]))
		}
		t.Logf("%s: %d pairs in %s", m.file, pairs, time.Since(start).Round(time.Second))
	}
	out := formatTransparency(table, pairs)
	fmt.Print(out)
	if p := os.Getenv("SPARKBENCH_TRANSPARENCY_OUT"); p != "" {
		_ = os.WriteFile(filepath.Clean(p), []byte(out), 0o644)
	}
	for _, r := range table {
		// fail only on a runner measurably slower than direct: below 0.99 and outside the A/A spread
		if r.RD < 0.99 && r.RD < r.AALo {
			t.Errorf("%s %s: runner/direct %.4f is below 0.99 and below the A/A spread [%.4f, %.4f]", r.Model, r.Test, r.RD, r.AALo, r.AAHi)
		}
	}
}

type transparencyRow struct {
	Model, Test    string
	RD, RDLo, RDHi float64 // median runner/direct and its bootstrap 95% interval
	AA, AALo, AAHi float64 // median direct/direct and its interval: the A/A spread
}

func newTransparencyRow(model, test string, rd, aa []float64) transparencyRow {
	r := transparencyRow{Model: model, Test: test}
	r.RD = median(rd)
	r.RDLo, r.RDHi = bootstrapMedianCI(rd, 1)
	r.AA = median(aa)
	r.AALo, r.AAHi = bootstrapMedianCI(aa, 2)
	return r
}

func formatTransparency(rows []transparencyRow, pairs int) string {
	return formatRatios(rows, pairs, "transparency: llama-bench's own t/s through the runner (pty, jsonl parsing, events) vs the same command under a pipe",
		"direct vs direct", "runner/direct")
}

// formatRatios prints a transparency table: title, what the A/A control compares, and the
// name of the ratio column.
func formatRatios(rows []transparencyRow, pairs int, title, control, ratio string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n", title)
	fmt.Fprintf(&b, "%d interleaved pairs per model (A/B order alternating), A/A control = %s in the same pairing; medians of per-pair ratios, bootstrap 95%% intervals\n\n", pairs, control)
	fmt.Fprintf(&b, "%-22s %-4s %14s %18s %14s %18s %7s %9s\n", "model", "test", ratio, "95% interval", "A/A", "A/A spread (95%)", ">=0.99", "in A/A")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s %-4s %14.4f %18s %14.4f %18s %7s %9s\n", r.Model, r.Test, r.RD,
			fmt.Sprintf("[%.4f, %.4f]", r.RDLo, r.RDHi), r.AA, fmt.Sprintf("[%.4f, %.4f]", r.AALo, r.AAHi),
			yesNo(r.RD >= 0.99), yesNo(r.RD >= r.AALo && r.RD <= r.AAHi))
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func kindRates(rows []benchfmt.Result) map[benchfmt.Kind]float64 {
	m := map[benchfmt.Kind]float64{}
	for _, r := range rows {
		m[r.Kind()] = r.AvgTs
	}
	return m
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// bootstrapMedianCI is the 2.5–97.5 percentile interval of the median over 4000 resamples
// (fixed seed: the same data give the same interval).
func bootstrapMedianCI(v []float64, seed uint64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	const n = 4000
	meds := make([]float64, n)
	buf := make([]float64, len(v))
	for i := range meds {
		for j := range buf {
			buf[j] = v[rng.IntN(len(v))]
		}
		meds[i] = median(buf)
	}
	slices.Sort(meds)
	return meds[n*25/1000], meds[n*975/1000-1]
}
