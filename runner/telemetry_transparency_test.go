package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sparkbench/runner/benchfmt"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
)

// TestTelemetryTransparency is the telemetry transparency benchmark
// (scripts/bench-telemetry.sh): the same llama-bench leg through the runner with the telemetry
// sampler running at 100 ms beside it (a workstation's worth of samplers: telemetrytest's
// FullTree and a fake NVML with two GPUs, since this machine has no sensors) and without,
// interleaved in pairs (order alternating), comparing llama-bench's own t/s; beside it an A/A
// control (off vs off, same pairing). Set SPARKBENCH_TELEMETRY_TRANSPARENCY=1 to run it;
// SPARKBENCH_TRANSPARENCY_PAIRS (default 20) sets the pairs per model.
func TestTelemetryTransparency(t *testing.T) {
	if os.Getenv("SPARKBENCH_TELEMETRY_TRANSPARENCY") != "1" {
		t.Skip("set SPARKBENCH_TELEMETRY_TRANSPARENCY=1 (scripts/bench-telemetry.sh) to run the telemetry transparency benchmark")
	}
	pairs := 20
	if v, err := strconv.Atoi(os.Getenv("SPARKBENCH_TRANSPARENCY_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	root := t.TempDir()
	if err := telemetrytest.FullTree(root); err != nil {
		t.Fatal(err)
	}
	lib := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{
		{Load: telemetrytest.SyntheticLoad}, {Load: telemetrytest.SyntheticLoad}}}
	set := live.Discover(context.Background(), live.Config{Root: root, NVML: lib, NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: "-"})
	defer set.Close()
	bench := realBench(t)
	fper := &Fingerprinter{}
	var table []transparencyRow
	samples := 0
	for _, m := range []struct {
		file string
		args []string
	}{{"tiny-llama-f32.gguf", []string{"-p", "128", "-n", "64", "-r", "5"}}, {"medium-llama-f16.gguf", []string{"-p", "64", "-n", "32", "-r", "3"}}} {
		args := append([]string{"-m", llamatest.Model(t, m.file)}, m.args...)
		args = append(args, "-t", llamatest.Threads)
		leg := func(sample bool) map[benchfmt.Kind]float64 {
			var s *telemetry.Sampler
			if sample {
				s = telemetry.Start(set.Sources, 100*time.Millisecond)
			}
			l := StartLeg(context.Background(), LegSpec{Bench: bench, Args: args, CVGate: CVGate{Off: true}}, WithFingerprinter(fper))
			for range l.Events() {
			}
			if s != nil {
				samples += len(s.Stop())
			}
			res := l.Result()
			if res.Exit.Class != ClassOK {
				t.Fatalf("leg: %+v", res.Exit)
			}
			var rows []benchfmt.Result
			for _, r := range res.Results() {
				rows = append(rows, r.Result)
			}
			return kindRates(rows)
		}
		ab, aa := map[benchfmt.Kind][]float64{}, map[benchfmt.Kind][]float64{}
		start := time.Now()
		for i := 0; i < pairs; i++ {
			var off, on map[benchfmt.Kind]float64
			if i%2 == 0 {
				off, on = leg(false), leg(true)
			} else {
				on, off = leg(true), leg(false)
			}
			a1, a2 := leg(false), leg(false)
			for _, k := range []benchfmt.Kind{benchfmt.KindPP, benchfmt.KindTG} {
				ab[k] = append(ab[k], on[k]/off[k])
				aa[k] = append(aa[k], a2[k]/a1[k])
			}
		}
		for _, k := range []benchfmt.Kind{benchfmt.KindPP, benchfmt.KindTG} {
			table = append(table, newTransparencyRow(m.file, string(k), ab[k], aa[k]))
		}
		t.Logf("%s: %d pairs in %s", m.file, pairs, time.Since(start).Round(time.Second))
	}
	out := formatRatios(table, pairs, "telemetry transparency: llama-bench's own t/s through the runner with the sampler on (100 ms, 6 samplers) vs off",
		"off vs off", "on/off") + fmt.Sprintf("samples taken while sampling: %d\n", samples)
	fmt.Print(out)
	if p := os.Getenv("SPARKBENCH_TRANSPARENCY_OUT"); p != "" {
		_ = os.WriteFile(filepath.Clean(p), []byte(out), 0o644)
	}
	for _, r := range table {
		if r.RD < 0.99 && r.RD < r.AALo {
			t.Errorf("%s %s: sampling on/off %.4f is below 0.99 and below the A/A spread [%.4f, %.4f]", r.Model, r.Test, r.RD, r.AALo, r.AAHi)
		}
	}
}
