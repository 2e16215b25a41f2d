package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

const studyUsage = "study validate FILE [--json] [--notebook P] [--effect PCT] | study register FILE | study run ID|FILE [--llama-dir D] [--retry LEG]… | study run FILE --on HOST,… [--hosts F] | study show ID [--json] | study compare BASELINE NEW [NEW…] [--alpha A] [--stats auto|process|benchmath|welch] [--aa] [--json] [--out DIR|F.tar.gz] | study compare --aa ID"

func cmdStudy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench study: want a verb: validate FILE, register FILE, run ID|FILE, show ID, compare BASELINE NEW\n")
		return 2
	}
	switch args[0] {
	case "validate":
		return validateCommand(throughputKind, args[1:], stdout, stderr)
	case "register":
		return studyRegister(args[1:], stdout, stderr)
	case "run":
		return studyRun(args[1:], stdout, stderr)
	case "show":
		return showCommand(throughputKind, args[1:], stdout, stderr)
	case "compare":
		return studyCompare(args[1:], stdout, stderr)
	case "list":
		return studyList(args[1:], stdout, stderr) // importbundle.go
	case "-h", "--help", "help":
		fprintf(stdout, "usage: sparkbench %s\n", studyUsage)
		return 0
	}
	fprintf(stderr, "sparkbench study: unknown verb %q; want validate, register, run, show or compare\n", args[0])
	return 2
}

// throughputKind is the throughput study kind as the CLI's shared verbs see it.
var throughputKind = cliKind{
	verb:         "study",
	noHashHelp:   "skip hashing the model files (only their form is checked)",
	llamaDirHelp: "the build whose llama-bench checks extra_args (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)",
	showJSONHelp: "print the report as JSON (every figure with the stored rows it came from)",
	planner:      true,
}

// plannerNotebook opens the notebook `study validate` reads the planner's history from, read
// only: --notebook's (it must exist), else the default one when it exists (nil when not).
func plannerNotebook(cmd, flagValue string, stderr io.Writer) (*store.Notebook, int) {
	path, err := notebookPath(flagValue)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return nil, 2
	}
	if _, err := os.Stat(path); flagValue == "" && errors.Is(err, os.ErrNotExist) {
		return nil, 0
	}
	return openNotebook(cmd, path, true, stderr)
}

// studyCtx is a command's context: Ctrl-C, SIGTERM or SIGHUP cancels it.
func studyCtx() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), stopSignals...)
}

// stopSignals are the signals that stop a command that records work (a study run, a leg, a
// receipt) the way Ctrl-C does: the running leg is stopped and recorded as interrupted, the
// run halted with its record. SIGHUP is one: a closed terminal or ssh session must not leave a
// study "running" with nothing said.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// openStudyNotebook opens the notebook named by --notebook (or the default).
func openStudyNotebook(cmd, flagValue string, stderr io.Writer) (*store.Notebook, int) {
	path, err := notebookPath(flagValue)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return nil, 2
	}
	return openNotebook(cmd, path, false, stderr)
}

// withStudy opens the notebook for writing, resolves ref to a registered throughput study and
// runs f with them (the notebook is closed afterwards). It returns f's exit status, or 2 when
// the notebook or the study cannot be had, naming why.
func withStudy(cmd, nbFlag, ref string, stderr io.Writer, f func(ctx context.Context, nb *store.Notebook, id int64) int) int {
	ctx, stop := studyCtx() // before the notebook's open, which may wait for its lock
	defer stop()
	nb, code := openStudyNotebook(cmd, nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	id, err := findStudy(ctx, nb, ref)
	if err != nil && ctx.Err() != nil {
		fprintf(stderr, "sparkbench %s: stopped (%v); nothing was recorded\n", cmd, context.Cause(ctx))
		return 1
	}
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 2
	}
	return f(ctx, nb, id)
}

// findStudy resolves a study by id or name; it must be a registered throughput study.
func findStudy(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
	return workbench.FindThroughput(ctx, nb, ref)
}

// reportRefusal prints a refused plan (one line per problem) and returns exit status 2.
func reportRefusal(cmd string, err error, stderr io.Writer) int {
	var ref *study.RefusedError
	if errors.As(err, &ref) {
		for _, p := range study.Errors(ref.Problems) {
			fprintf(stderr, "sparkbench %s: refused: %s: %s\n", cmd, p.Path, p.Msg)
		}
		return 2
	}
	fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
	var dec *study.DecodeError
	if errors.As(err, &dec) { // the plan file's JSON: bad input, whatever its kind
		return 2
	}
	return 1
}

// studyRegister: sparkbench study register FILE [--notebook P] [--json].
func studyRegister(args []string, stdout, stderr io.Writer) int {
	return registerCommand("study register", args, stdout, stderr, func(ctx context.Context, nb *store.Notebook, file string, out, stderr io.Writer) (any, int) {
		reg, _, code := registerAnyFile(ctx, nb, "study", file, out, stderr)
		return reg, code
	})
}

// registerCommand is a `… register PLAN [--notebook P] [--json]` verb: it opens the notebook,
// registers the plan file with register (which prints its own lines to out) and, with --json,
// prints the registration.
func registerCommand[R any](cmd string, args []string, stdout, stderr io.Writer,
	register func(ctx context.Context, nb *store.Notebook, file string, out, stderr io.Writer) (R, int)) int {
	fs := newFlagSet(cmd, stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the registration as JSON")
	file, code := onePlanFile(cmd, fs, args, stderr)
	if code >= 0 {
		return code
	}
	nb, code := openStudyNotebook(cmd, *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	out := stdout
	if *asJSON {
		out = io.Discard
	}
	reg, code := register(ctx, nb, file, out, stderr)
	if code != 0 {
		return code
	}
	if *asJSON {
		return printJSON(stdout, stderr, cmd, reg)
	}
	return 0
}

// studyValidateReport is `study validate --json`.
type studyValidateReport = workbench.ThroughputValidation
