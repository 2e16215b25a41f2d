package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"sparkbench/app"
	"sparkbench/app/textsafe"
)

type command struct {
	name, usage, summary string
	run                  func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"gui", "gui [--llama-dir D] [--notebook P] [--section S] [--run-demo] [--run ID]", "open the window (the default with no command)", cmdGUI},
		{"version", "version", "print sparkbench's version", cmdVersion},
		{"doctor", "doctor [--llama-dir D] [--models DIR]... [--notebook P]", "check llama.cpp, models, notebook and display; print each fix", cmdDoctor},
		{"model", "model inspect FILE [--json] | model verify FILE [--expect SHA256]", "GGUF metadata and tensor table; streamed SHA-256 (cached in the notebook) against the published hash", cmdModel},
		{"leg", "leg run [--llama-dir D] [--idle-timeout DUR] [--timeout DUR] [--json] -- <llama-bench args>", "run one llama-bench leg through the runner, results as they arrive", cmdLeg},
		{"notebook", "notebook verify|path|stats [--notebook P]", "check the lab notebook's hash chain; where it is; what it holds", cmdNotebook},
		{"import", "import [--study S] FILE…", "import llama-bench output (jsonl, json, csv, md) as imported legs", cmdImport},
		{"export", "export STUDY [--format csv|json] [--rows bench|requests]", "export a study's rows", cmdExport},
		{"study", studyUsage, "check, register (freeze with its predictions), run or resume, show a throughput study, and compare it with a baseline study", cmdStudy},
		{"verdict", "verdict ID --prediction P --human PASS|FAIL|NOTE --why TEXT", "record a human verdict on a prediction", cmdVerdict},
		{"finding", "finding add ID --text TEXT [--leg L] [--prediction P]", "record a numbered finding (F1, F2, …) linked to legs and predictions", cmdFinding},
		{"amend", "amend ID --prediction P --set-lo X --set-hi Y … --reason TEXT [--as-deviation]", "change a prediction: an amendment before its legs ran, else a deviation", cmdAmend},
		{"demo", "demo [--run] [--llama-dir D]", "write the demo models, register the demo study (once), run it with --run", cmdDemo},
		{"capacity", "capacity validate PLAN | capacity assemble --plan PLAN --requests K=FILE … --output study.json", "capacity studies: check a plan; assemble raw request/RSS/log files into study.json", cmdCapacity},
		{"plot", plotUsage, "draw a chart to PNG, SVG or PDF", cmdPlot},
		{"receipt", receiptUsage, "write a study's receipt bundle: raw files, receipt.md, study.json, plots, SHA256SUMS", cmdReceipt},
		{"verify", verifyUsage, "check a receipt bundle: SHA256SUMS, the journal chain, derived files re-assembled byte for byte", cmdVerify},
		{"analyze", "analyze crossing|slope|ceiling …", "derived figures from numbers: crossing depth, depth slope, bandwidth ceiling", cmdAnalyze},
		{"help", "help", "print this list", cmdHelp},
	}
}

func cmdHelp(_ []string, stdout, _ io.Writer) int {
	fprintf(stdout, "sparkbench — a workbench for measuring local LLM inference with llama.cpp\n\nusage:\n")
	for _, c := range commands() {
		fprintf(stdout, "  sparkbench %-58s %s\n", c.usage, c.summary)
	}
	return 0
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fprintf(stderr, "sparkbench version: takes no arguments (got %q)\n", strings.Join(args, " "))
		return 2
	}
	fprintf(stdout, "%s\n", app.VersionString())
	return 0
}

func fprintf(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}

// parseInterspersed parses flags that may come before or after positional arguments
// (`model inspect FILE --json`); "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag.Parse stops at "--" (consumed) or at the first non-flag argument.
		consumedDashDash := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
		if consumedDashDash {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a FlagSet whose errors are reported by the caller (exit 2).
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sparkbench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// usageError reports a parse error; -h/--help is not an error.
func usageError(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// escaped buffers what a report prints and writes it through textsafe.Escape when flushed:
// recorded text (a finding, a rationale, a reason, a model name from imported rows) cannot
// reach the terminal with a raw control character, whatever version stored it. Text without
// control characters is written unchanged.
func escaped(w io.Writer) (io.Writer, func()) {
	var b strings.Builder
	return &b, func() { _, _ = io.WriteString(w, textsafe.Escape(b.String())) }
}
