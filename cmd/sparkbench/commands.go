package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"sparkbench/app"
	"sparkbench/app/textsafe"
)

type command struct {
	name, usage, summary string
	run                  func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	cs := baseCommands()
	for i, c := range cs {
		if _, ok := verbs[c.name]; ok {
			cs[i].run = withVerbs(c.name, c.run)
		}
	}
	return cs
}

func baseCommands() []command {
	return []command{
		{"gui", "gui [--llama-dir D] [--notebook P] [--section S] [--run-demo] [--run ID]", "open the window (the default with no command)", cmdGUI},
		{"version", "version", "print sparkbench's version", cmdVersion},
		{"doctor", "doctor [--llama-dir D] [--models DIR]... [--notebook P] | doctor --host NAME [--hosts F]", "check llama.cpp, models, notebook and display; print each fix", cmdDoctor},
		{"model", "model inspect FILE [--json] | model verify FILE [--expect SHA256]", "GGUF metadata and tensor table; streamed SHA-256 (cached in the notebook) against the published hash", cmdModel},
		{"leg", "leg run [--llama-dir D] [--idle-timeout DUR] [--timeout DUR] [--json] -- <llama-bench args>", "run one llama-bench leg through the runner, results as they arrive", cmdLeg},
		{"fit", fitUsage, "the largest -ngl that fits the devices' memory (llama-fit-params), and an ngl sweep up to it for a plan", cmdFit},
		{"log", logUsage, "what a llama.cpp log says: devices, layers offloaded, memory per device, generation timings", cmdLog},
		{"batched", batchedUsage, "run one llama-batched-bench leg through the runner, rows into the notebook as they arrive", cmdBatched},
		{"notebook", "notebook verify|path|stats|backup DEST [--expect-head H] [--notebook P]", "check the lab notebook's hash chain (and that it still reaches the last head seen); where it is; what it holds; copy it safely", cmdNotebook},
		{"import", "import [--study S] FILE…", "import llama-bench output (jsonl, json, csv, md) as imported legs, or receipt bundles (verified first) as imported studies", cmdImport},
		{"export", "export STUDY [--format csv|json] [--rows bench|requests]", "export a study's rows", cmdExport},
		{"run", runUsage, "run or resume a study of any kind; a plan file of any kind is registered in the notebook first, then run", cmdRun},
		{"study", studyUsage, "check, register (freeze with its predictions), run or resume, show a throughput study, and compare it with a baseline study", cmdStudy},
		{"verdict", "verdict ID --prediction P --human PASS|FAIL|NOTE --why TEXT", "record a human verdict on a prediction", cmdVerdict},
		{"finding", "finding add ID --text TEXT [--leg L] [--prediction P]", "record a numbered finding (F1, F2, …) linked to legs and predictions", cmdFinding},
		{"amend", "amend ID --prediction P --set-lo X --set-hi Y … --reason TEXT [--as-deviation]", "change a prediction: an amendment before its legs ran, else a deviation", cmdAmend},
		{"demo", "demo [--run] [--llama-dir D]", "write the demo models, register the demo study (once), run it with --run", cmdDemo},
		{"quant", quantUsage, "turn a finished quantization ladder into a capacity plan of its selected quant and runner-up", cmdQuant},
		{"capacity", "capacity validate PLAN | capacity assemble --plan PLAN --requests K=FILE … --output study.json", "capacity studies: check a plan; assemble raw request/RSS/log files into study.json", cmdCapacity},
		{"serving", servingUsage, "serving workloads' files: a ShareGPT-style file as JSONL conversations or a prompt set (docs/serving.md)", cmdServing},
		{"plot", plotUsage, "draw a chart to PNG, SVG or PDF", cmdPlot},
		{"receipt", receiptUsage, "write a study's receipt bundle: raw files, receipt.md, study.json, plots, SHA256SUMS", cmdReceipt},
		{"overview", overviewUsage, "the figures that span studies: the badge table under both conventions and the constants ladder (efficiency vs the bandwidth ceiling)", cmdOverview},
		{"verify", verifyUsage, "check a receipt bundle: SHA256SUMS, the journal chain, derived files re-assembled byte for byte", cmdVerify},
		{"analyze", "analyze crossing|slope|ceiling …", "derived figures from numbers: crossing depth, depth slope, bandwidth ceiling", cmdAnalyze},
		{"host", hostUsage, "bench hosts over ssh: list them; connect and fingerprint one (as doctor --host)", cmdHost},
		{"fleet", fleetUsage + " | " + fleetReadUsage, "run one throughput plan on several hosts in parallel (one study each), the same cell side by side; list the fleets, show one, write its receipt", cmdFleet},
		{"help", "help", "print this list", cmdHelp},
	}
}

func cmdHelp(_ []string, stdout, _ io.Writer) int {
	fprintf(stdout, "sparkbench — a workbench for measuring local LLM inference with llama.cpp\n\nusage:\n")
	for _, c := range commands() {
		fprintf(stdout, "  sparkbench %-58s %s\n", c.usage, c.summary)
	}
	fprintf(stdout, "\nEvery command answers --help; `sparkbench --version` prints the version, `sparkbench gui --help` the window's flags.\n")
	return 0
}

// isHelpFlag says whether arg asks for help (the flag package's spellings).
func isHelpFlag(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// groupHelp answers `sparkbench GROUP --help` (or -h) for a command whose first argument is a
// verb, where the flags of each verb are the verb's own (`sparkbench capacity run --help`):
// the command's usage, one line per form, and its summary, on stdout. It reports whether c is
// such a command (the others' flag sets answer --help themselves).
func groupHelp(c command, stdout io.Writer) bool {
	if _, ok := verbs[c.name]; !ok && !slices.Contains(verbGroups, c.name) {
		return false
	}
	usage := c.usage
	if c.name == "capacity" {
		usage = capacityUsage // the help line names two verbs; the command's own usage all
	}
	fprintf(stdout, "usage:\n")
	for _, form := range strings.Split(usage, " | ") {
		fprintf(stdout, "  sparkbench %s\n", form)
	}
	fprintf(stdout, "\n%s\nEach verb's flags: sparkbench %s VERB --help\n", c.summary, c.name)
	return true
}

// verbGroups are the commands taking a verb whose verbs are not in verbs (their dispatchers
// word an unknown verb themselves).
var verbGroups = []string{"host", "serving", "quant", "fleet"}

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
//
// A negative number where a flag could start (`study show -1`) is a positional argument when
// no flag has that name: the command then says what is wrong with it ("-1" is not a study ID),
// where the flag package would say "flag provided but not defined: -1".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	if i := negativeNumberArg(fs, args); i >= 0 {
		head, err := parseInterspersed(fs, args[:i])
		if err != nil {
			return nil, err
		}
		tail, err := parseInterspersed(fs, args[i+1:])
		if err != nil {
			return nil, err
		}
		return append(append(head, args[i]), tail...), nil
	}
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

// flagsOnly refuses the arguments left after the flags of a command that takes none (exit 2):
// a stray word or number (`analyze slope --points … -3`) is not silently dropped.
func flagsOnly(cmd string, pos []string, stderr io.Writer) bool {
	if len(pos) == 0 {
		return true
	}
	fprintf(stderr, "sparkbench %s: unexpected argument %q: it takes flags only (see `sparkbench %s --help`)\n", cmd, pos[0], cmd)
	return false
}

// negativeNumberArg is the index of the first argument before "--" that is a negative number
// (-1, -2.5) in a place where the flag package would take it for a flag of that name, which fs
// does not have; -1 if none. A flag's value (`--line -5`) is left to the flag.
func negativeNumberArg(fs *flag.FlagSet, args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || len(a) < 2 {
			if a == "--" {
				return -1
			}
			continue
		}
		name := strings.TrimLeft(a, "-")
		if _, err := strconv.ParseFloat(name, 64); err == nil && len(a)-len(name) == 1 && fs.Lookup(name) == nil {
			return i
		}
		name, _, hasValue := strings.Cut(name, "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) {
			i++ // the next argument is this flag's value
		}
	}
	return -1
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
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
func escaped(w io.Writer) (io.Writer, func()) { return textsafe.Buffered(w) }

// verbs are the verbs of the commands that take one, as their dispatchers accept them (a test
// holds this list to the usage lines and the dispatchers), with the word their messages use.
var verbs = map[string]struct {
	word string
	list []string
}{
	"model":    {"verb", []string{"inspect", "verify"}},
	"leg":      {"verb", []string{"run"}},
	"batched":  {"verb", []string{"run"}},
	"log":      {"verb", []string{"inspect"}},
	"notebook": {"sub-command", []string{"verify", "path", "stats", "backup"}},
	"study":    {"verb", []string{"validate", "register", "run", "show", "compare"}},
	"finding":  {"verb", []string{"add"}},
	"capacity": {"verb", []string{"validate", "assemble", "register", "run", "show", "presets", "compare"}},
	"analyze":  {"figure", []string{"crossing", "slope", "ceiling"}},
	"overview": {"verb", []string{"badges", "constants", "receipt"}},
}

// withVerbs answers a verb the command does not have, when there is something better to say
// than the command's own "unknown verb" (which it still prints otherwise): the command it
// belongs to (`notebook import`: the command is "sparkbench import"), or the verb it is a
// near miss of (`study shwo`: did you mean "show"?).
func withVerbs(parent string, run func([]string, io.Writer, io.Writer) int) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) > 0 {
			if msg := verbHint(parent, args[0]); msg != "" {
				fprintf(stderr, "sparkbench %s: unknown %s %q; %s\n", parent, verbs[parent].word, args[0], msg)
				return 2
			}
		}
		return run(args, stdout, stderr)
	}
}

// verbHint is what to say of sub given as a verb of parent ("" when it is one of its verbs, a
// flag or help, or nothing better than the command's own message can be said).
func verbHint(parent, sub string) string {
	own := verbs[parent].list
	if sub == "" || strings.HasPrefix(sub, "-") || sub == "help" || slices.Contains(own, sub) {
		return ""
	}
	for _, c := range baseCommands() {
		if c.name == sub {
			return fmt.Sprintf("the command is \"sparkbench %s\" (usage: sparkbench %s)", sub, c.usage)
		}
	}
	if near := nearMisses(sub, own); len(near) > 0 {
		return "did you mean " + quoteOr(near, "") + "? (" + verbs[parent].word + "s: " + strings.Join(own, ", ") + ")"
	}
	if elsewhere := verbOf(sub, parent); len(elsewhere) > 0 {
		return "it is a verb of another command: " + quoteOr(elsewhere, "sparkbench ")
	}
	var names []string
	for _, c := range baseCommands() {
		names = append(names, c.name)
	}
	if near := nearMisses(sub, names); len(near) > 0 {
		return "did you mean the command " + quoteOr(near, "sparkbench ") + "?"
	}
	return ""
}

// verbOf lists "PARENT VERB" for each command other than except that has verb.
func verbOf(verb, except string) []string {
	var out []string
	for _, c := range baseCommands() {
		if v, ok := verbs[c.name]; ok && c.name != except && slices.Contains(v.list, verb) {
			out = append(out, c.name+" "+verb)
		}
	}
	return out
}

// unknownCommand answers a command sparkbench does not have (exit 2), with the verb's command
// when it is a verb (`show`: "sparkbench study show" or "sparkbench capacity show") or the
// command it is a near miss of (`stduy`: did you mean "study"?).
func unknownCommand(name string, stderr io.Writer) int {
	var names []string
	for _, c := range baseCommands() {
		names = append(names, c.name)
	}
	hint := ""
	if near := nearMisses(name, names); len(near) > 0 {
		hint = "did you mean " + quoteOr(near, "") + "?"
	} else if of := verbOf(name, ""); len(of) > 0 {
		hint = "it is a verb: did you mean " + quoteOr(of, "sparkbench ") + "?"
	}
	if hint == "" {
		fprintf(stderr, "sparkbench: unknown command %q; run `sparkbench help` for the list\n", name)
	} else {
		fprintf(stderr, "sparkbench: unknown command %q; %s (run `sparkbench help` for the list)\n", name, hint)
	}
	return 2
}

// quoteOr writes names as "a", "a" or "b", "a", "b" or "c", each quoted with prefix.
func quoteOr(names []string, prefix string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(prefix + n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// nearMisses are the candidates s is a likely slip for: the start of exactly one of them
// (three letters at least), else those the same but for case or one edit away (two for words
// of five letters or more; a swap of neighbours is one edit), the closest ones.
func nearMisses(s string, candidates []string) []string {
	low := strings.ToLower(s)
	limit := 1
	if len(low) >= 5 {
		limit = 2
	}
	if len(low) >= 3 {
		var pre []string
		for _, c := range candidates {
			if strings.HasPrefix(c, low) {
				pre = append(pre, c)
			}
		}
		if len(pre) == 1 {
			return pre
		}
	}
	best, out := limit, []string(nil)
	for _, c := range candidates {
		d := editDistance(low, c)
		switch {
		case d < best || d == best && out == nil:
			best, out = d, []string{c}
		case d == best:
			out = append(out, c)
		}
	}
	return out
}

// editDistance is the optimal string alignment distance (insertions, deletions,
// substitutions and swaps of neighbouring letters, each one edit), over bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
