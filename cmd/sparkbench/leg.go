package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
)

const legUsage = "leg run [--llama-dir D] [--idle-timeout DUR] [--timeout DUR] [--json] [--no-cv-gate] [--progress] [--transcript FILE] -- <llama-bench args>"

// cmdLeg runs one llama-bench leg through the runner (pty, jsonl parsing, crash classes,
// gates): each result is printed as it arrives, then one summary line. Exit 0 only for class
// ok, 1 for any other class, 2 for bad usage.
func cmdLeg(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fprintf(stderr, "sparkbench leg: want `sparkbench %s`\n", legUsage)
		return 2
	}
	fs := newFlagSet("leg run", stderr)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench and llama-server")
	idle := fs.Duration("idle-timeout", 0, "end the leg after this long without output (default "+runner.DefaultIdleTimeout.String()+")")
	total := fs.Duration("timeout", 0, "end the leg after this long in all (default "+runner.DefaultTotalTimeout.String()+")")
	asJSON := fs.Bool("json", false, "print each result and the summary as JSON lines")
	noGate := fs.Bool("no-cv-gate", false, "do not flag and halt the leg when a test's CV is above the gate (tg 5%, pp 5%, pp at depth 10%)")
	transcriptPath := fs.String("transcript", "", "write llama-bench's verbatim pty output to FILE")
	progress := fs.Bool("progress", false, "add llama-bench's --progress (its lines fall inside the timed region: a few % slower on small models)")
	benchArgs, code := toolArgsAfterDash(fs, args[1:], "leg run", "llama-bench", "-m model.gguf -p 512 -n 128", idle, total, stderr)
	if code >= 0 {
		return code
	}
	if err := runner.ValidateBenchArgs(benchArgs); err != nil {
		fprintf(stderr, "sparkbench leg run: %v\n", err)
		return 2
	}
	loc, err := llamacpp.Locate(*llamaDir)
	if err != nil {
		fprintf(stderr, "sparkbench leg run: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	spec := runner.LegSpec{
		Bench:    loc.Bench,
		Args:     benchArgs,
		Limits:   runner.Limits{Idle: *idle, Total: *total},
		CVGate:   runner.CVGate{Off: *noGate},
		Progress: *progress,
	}
	leg := runner.StartLeg(ctx, spec)
	enc := json.NewEncoder(stdout)
	lastTest := 0
	for ev := range leg.Events() {
		switch ev.Type {
		case runner.EventSample:
			if *asJSON {
				_ = enc.Encode(ev)
			} else {
				printSample(stdout, ev.Sample)
			}
		case runner.EventProgress:
			if p := ev.Progress; !*asJSON && p.Test != lastTest && p.Test > 0 {
				lastTest = p.Test
				eta := ""
				if p.ETA >= time.Second {
					eta = ", about " + p.ETA.Round(100*time.Millisecond).String() + " left"
				}
				fprintf(stderr, "# test %d/%d%s\n", p.Test, p.Total, eta)
			}
		case runner.EventMalformed:
			fprintf(stderr, "# output line %d is not a valid jsonl result (%s); the leg continues\n", ev.Malformed.Line, ev.Malformed.Err)
		case runner.EventFlagged:
			fprintf(stderr, "# flagged: %s; halting the leg\n", ev.Flagged.Reason)
		}
	}
	res := leg.Result()
	code = 0
	if res.Exit.Class != runner.ClassOK {
		code = 1
	}
	if *transcriptPath != "" {
		if err := os.WriteFile(*transcriptPath, res.Transcript.Bytes(), 0o644); err != nil {
			fprintf(stderr, "sparkbench leg run: write transcript: %v\n", err)
			code = 1
		}
	}
	if *asJSON {
		_ = enc.Encode(legSummary{Type: "summary", Argv: res.Argv, Exit: res.Exit, Results: len(res.Results()),
			Fingerprint: res.Fingerprint, Transcript: res.Transcript.String()})
		return code
	}
	if fp := res.Fingerprint; fp != nil {
		fprintf(stderr, "# %s\n", describeFingerprint(fp))
	}
	x := res.Exit
	line := fmt.Sprintf("leg class=%s rows=%d", x.Class, x.Rows)
	if x.Expected > 0 {
		line += "/" + strconv.Itoa(x.Expected)
	}
	line += " duration=" + x.Duration.Round(time.Millisecond).String()
	if x.Reason != "" {
		line += " reason=" + strconv.Quote(x.Reason)
	}
	fprintf(stdout, "%s\n", line)
	return code
}

type legSummary struct {
	Type        string              `json:"type"`
	Argv        []string            `json:"argv"`
	Exit        runner.Exit         `json:"exit"`
	Results     int                 `json:"results"`
	Fingerprint *runner.Fingerprint `json:"fingerprint,omitempty"`
	Transcript  string              `json:"transcript"`
}

func printSample(w io.Writer, s *runner.Sample) {
	r := &s.Result
	flag := ""
	if s.Flag != "" {
		flag = "  FLAGGED (" + s.Flag + ")"
	}
	fprintf(w, "%-16s %-28s %12.2f ± %-10.2f t/s  cv %5.1f%%  r=%d%s\n", s.Test, filepath.Base(s.Model),
		r.AvgTs, r.StddevTs, 100*s.CV, len(r.SamplesTs), flag)
}

func describeFingerprint(fp *runner.Fingerprint) string {
	s := fp.VersionLine
	if s == "" {
		s = "llama-bench version unknown"
	}
	if len(fp.Binary.SHA256) >= 12 {
		s += ", sha256 " + fp.Binary.SHA256[:12] + "…"
	}
	m := fp.Machine
	s += fmt.Sprintf("; %s, %d CPUs, %.1f GiB, %s %s", m.CPUModel, m.LogicalCPUs, float64(m.MemBytes)/(1<<30), m.OS, m.Kernel)
	if len(fp.Errors) > 0 {
		s += "; not read: " + strings.Join(fp.Errors, "; ")
	}
	return s
}

// toolArgsAfterDash parses a run verb's own flags (before --) and returns the tool's arguments
// (after --), or the exit code of a usage error already printed: no --, a stray argument
// before it, nothing after it, a negative timeout. verb is e.g. "leg run", tool "llama-bench",
// example its arguments in the messages.
func toolArgsAfterDash(fs *flag.FlagSet, rest []string, verb, tool, example string, idle, total *time.Duration, stderr io.Writer) ([]string, int) {
	dash := slices.Index(rest, "--")
	if dash < 0 {
		if err := fs.Parse(rest); err != nil {
			return nil, usageError(err)
		}
		fprintf(stderr, "sparkbench %s: put %s's arguments after --, e.g. sparkbench %s -- %s\n", verb, tool, verb, example)
		return nil, 2
	}
	if err := fs.Parse(rest[:dash]); err != nil {
		return nil, usageError(err)
	}
	if fs.NArg() > 0 {
		fprintf(stderr, "sparkbench %s: unexpected %q before --; %s's arguments go after --\n", verb, fs.Arg(0), tool)
		return nil, 2
	}
	args := rest[dash+1:]
	if len(args) == 0 {
		fprintf(stderr, "sparkbench %s: no %s arguments after --, e.g. -- %s\n", verb, tool, example)
		return nil, 2
	}
	if *idle < 0 || *total < 0 {
		fprintf(stderr, "sparkbench %s: timeouts must be positive\n", verb)
		return nil, 2
	}
	return args, -1
}
