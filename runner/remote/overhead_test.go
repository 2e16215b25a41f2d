package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchmath"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
)

// TestRemoteLegOverhead is the per-leg overhead of a remote leg against a local one on the same
// loopback host (scripts/bench-remote.sh): the same short llama-bench leg (tiny model, -p 0
// -n 4 -r 1, -t 1) through the runner locally and through ssh -tt on the loopback sshd host
// (one connection, ControlMaster), interleaved in pairs with the order alternating, beside an
// A/A control (local against local in the same pairing). Wall time from start to result,
// medians of per-pair ratios with their distribution-free 95% intervals (benchmath). Set
// SPARKBENCH_BENCH_REMOTE=1 to run it; SPARKBENCH_REMOTE_PAIRS (default 20) sets the pairs.
func TestRemoteLegOverhead(t *testing.T) {
	if os.Getenv("SPARKBENCH_BENCH_REMOTE") != "1" {
		t.Skip("set SPARKBENCH_BENCH_REMOTE=1 (scripts/bench-remote.sh) to run the remote-leg overhead benchmark")
	}
	pairs := 20
	if v, err := strconv.Atoi(os.Getenv("SPARKBENCH_REMOTE_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	h, o, _ := loopHost(t, "overhead-host", model)
	ctx := context.Background()
	s, err := Connect(ctx, h, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bench := llamatest.Binaries(t).Bench
	args := []string{"-m", model, "-p", "0", "-n", "4", "-r", "1", "-t", llamatest.Threads}
	fper := &runner.Fingerprinter{}
	leg := func(remote bool) time.Duration {
		start := time.Now()
		var l *runner.Leg
		if remote {
			l = s.StartLeg(ctx, runner.LegSpec{Args: args, CVGate: runner.CVGate{Off: true}})
		} else {
			l = runner.StartLeg(ctx, runner.LegSpec{Bench: bench, Args: args, CVGate: runner.CVGate{Off: true}}, runner.WithFingerprinter(fper))
		}
		res := drain(l)
		if res.Exit.Class != runner.ClassOK || len(res.Results()) != 1 {
			t.Fatalf("remote %v: %s %q\n%s", remote, res.Exit.Class, res.Exit.Reason, res.Transcript.Bytes())
		}
		return time.Since(start)
	}
	leg(true) // the first remote leg fingerprints the host: not a pair
	leg(false)
	var ab, aa, over []float64
	for i := 0; i < pairs; i++ {
		var lo, re time.Duration
		if i%2 == 0 {
			lo, re = leg(false), leg(true)
		} else {
			re, lo = leg(true), leg(false)
		}
		a1, a2 := leg(false), leg(false)
		ab = append(ab, re.Seconds()/lo.Seconds())
		aa = append(aa, a2.Seconds()/a1.Seconds())
		over = append(over, float64((re-lo).Microseconds())/1000)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nremote-leg overhead: the same llama-bench leg (tiny model, -p 0 -n 4 -r 1 -t 1) over ssh -tt on a loopback sshd host vs locally\n")
	fmt.Fprintf(&b, "%d interleaved pairs (order alternating), A/A control = local vs local in the same pairing; medians with distribution-free 95%% intervals (benchmath)\n\n", pairs)
	for _, r := range []struct {
		name string
		v    []float64
		unit string
	}{{"remote/local wall time", ab, ""}, {"local/local (A/A)", aa, ""}, {"remote - local", over, " ms"}} {
		fmt.Fprintf(&b, "%-24s %s\n", r.name, summary(r.v, r.unit))
	}
	fmt.Print(b.String())
	if p := os.Getenv("SPARKBENCH_REMOTE_OUT"); p != "" {
		_ = os.WriteFile(filepath.Clean(p), []byte(b.String()), 0o644)
	}
}

// summary is a sample's median and its distribution-free 95% interval, as benchstat prints.
func summary(v []float64, unit string) string {
	th := benchmath.DefaultThresholds
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(append([]float64(nil), v...), &th), 0.95)
	return fmt.Sprintf("%.4g%s [%.4g, %.4g] (n=%d)", s.Center, unit, s.Lo, s.Hi, len(v))
}
