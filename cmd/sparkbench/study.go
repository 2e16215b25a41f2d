package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sparkbench/app/study"
	"sparkbench/app/study/studyrun"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

const studyUsage = "study validate FILE [--json] | study register FILE | study run ID|FILE [--llama-dir D] [--retry LEG]… | study show ID [--json] | study compare BASELINE NEW [--alpha A] [--json]"

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
	case "-h", "--help", "help":
		fprintf(stdout, "usage: sparkbench %s\n", studyUsage)
		return 0
	}
	fprintf(stderr, "sparkbench study: unknown verb %q; want validate, register, run, show or compare\n", args[0])
	return 2
}

// studyValidateReport is `study validate --json`.
type studyValidateReport struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	SHA256   string          `json:"plan_sha256,omitempty"`
	Problems []study.Problem `json:"problems"`
	Legs     []study.LegPlan `json:"legs,omitempty"`
}

// throughputKind is the throughput study kind as the CLI's shared verbs see it.
var throughputKind = cliKind{
	verb:         "study",
	noHashHelp:   "skip hashing the model files (only their form is checked)",
	llamaDirHelp: "the build whose llama-bench checks extra_args (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)",
	showJSONHelp: "print the report as JSON (every figure with the stored rows it came from)",
	validate: func(ctx context.Context, file string, hash study.HashFunc, llamaDir string, _ io.Writer) (*planCheck, error) {
		k, data := planKind(file)
		if k != nil && k.Validate != nil {
			v, err := k.Validate(ctx, file, data, hash)
			if err != nil {
				return nil, err
			}
			return &planCheck{problems: v.Problems, valid: v.Valid, report: v.Report, summary: func(w io.Writer) {
				for _, l := range v.Lines {
					fprintf(w, "%s\n", l)
				}
			}}, nil
		}
		p, err := loadPlan(file, data)
		if err != nil {
			return nil, err
		}
		p.Defaults()
		opts := study.ValidateOptions{PlanDir: filepath.Dir(file), Hash: hash}
		var unchecked *study.Problem
		opts.BenchFlags, unchecked = benchFlagsFor(ctx, p, llamaDir)
		var devProbs []study.Problem
		opts.Devices, devProbs = devicesFor(ctx, p, llamaDir)
		probs, _ := study.Validate(p, opts)
		probs = append(probs, devProbs...)
		if unchecked != nil {
			probs = append(probs, *unchecked)
		}
		rep := studyValidateReport{File: file, Valid: len(study.Errors(probs)) == 0, Problems: probs}
		if rep.Problems == nil {
			rep.Problems = []study.Problem{}
		}
		if rep.Valid {
			rep.SHA256, _, _ = p.SHA256()
			rep.Legs, _ = study.Expand(p, opts.PlanDir)
		}
		return &planCheck{problems: probs, valid: rep.Valid, report: rep, summary: func(w io.Writer) {
			fprintf(w, "%s: valid throughput plan %q, sha256 %s, %d legs:\n", file, p.Name, rep.SHA256, len(rep.Legs))
			for _, l := range rep.Legs {
				fprintf(w, "  %-24s %d rows  llama-bench %s\n", l.ID, l.ExpectedRows, study.JoinArgs(l.Args))
			}
		}}, nil
	},
	find: func(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
		if k, s := sharedKind(ctx, nb, ref, takesShow); k != nil {
			return s.ID, nil
		}
		return findStudy(ctx, nb, ref)
	},
	show: func(ctx context.Context, nb *store.Notebook, id int64) (*shownStudy, error) {
		if k, s := sharedKind(ctx, nb, fmt.Sprint(id), takesShow); k != nil {
			sh, err := k.Show(ctx, nb, s)
			if err != nil {
				return nil, err
			}
			return &shownStudy{report: sh.Report, print: sh.Print, problem: sh.Problem}, nil
		}
		rep, err := study.Show(ctx, store.StudyRecorder{N: nb}, id)
		if err != nil {
			return nil, err
		}
		return &shownStudy{report: rep, print: func(w io.Writer) { printReport(w, rep) }}, nil
	},
}

// studyCtx is a command's context: Ctrl-C (or SIGTERM) cancels it.
func studyCtx() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

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
	nb, code := openStudyNotebook(cmd, nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	id, err := findStudy(ctx, nb, ref)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 2
	}
	return f(ctx, nb, id)
}

// findStudy resolves a study by id or name; it must be a registered throughput study.
func findStudy(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return 0, fmt.Errorf("%w; `sparkbench study register FILE` prints a new study's id", err)
	}
	if s.Kind != store.StudyThroughput {
		return 0, fmt.Errorf("study %d (%s) is a %s study; this command works on throughput studies", s.ID, s.Name, s.Kind)
	}
	if _, err := nb.Plan(ctx, s.ID); err != nil {
		return 0, fmt.Errorf("study %d (%s) has no registered plan (an imported study?); register a plan file with `sparkbench study register FILE`", s.ID, s.Name)
	}
	return s.ID, nil
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
	return 1
}

// devicesFor asks the build that would run the plan for its devices, with the plan's env and
// RPC endpoints, when the plan has device axes or env (nil otherwise). An RPC endpoint that
// refuses or does not answer is an error problem at axes.rpc; a build that cannot be found or
// asked, a warning that the devices were not checked.
func devicesFor(ctx context.Context, p *study.Plan, llamaDir string) (*study.BuildDevices, []study.Problem) {
	if !p.NeedsDevices() {
		return nil, nil
	}
	return listDevicesFor(ctx, p, llamaDir)
}

// listDevicesFor is devicesFor whether or not the plan has device axes (the window's New study
// form lists the build's devices to offer them).
func listDevicesFor(ctx context.Context, p *study.Plan, llamaDir string) (*study.BuildDevices, []study.Problem) {
	if llamaDir == "" {
		llamaDir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		return nil, []study.Problem{{Path: "axes.devices", Severity: study.SevWarning,
			Msg: fmt.Sprintf("not checked against a build (%v); pass --llama-dir with the build that will run the plan", err)}}
	}
	devs, err := studyrun.ListDevices(ctx, loc.Bench, p)
	if err != nil {
		return nil, []study.Problem{{Path: "axes.rpc", Severity: study.SevError, Msg: err.Error()}}
	}
	if devs != nil && !devs.Listed {
		return nil, []study.Problem{{Path: "axes.devices", Severity: study.SevWarning,
			Msg: fmt.Sprintf("not checked: %s --list-devices did not run", loc.Bench)}}
	}
	return devs, nil
}

// buildRefusal is what the build says against registering the plan: extra_args it does not
// know, devices it does not have, RPC endpoints that do not answer (nil: nothing).
func buildRefusal(ctx context.Context, p *study.Plan, llamaDir string) error {
	var probs []study.Problem
	if flags, _ := benchFlagsFor(ctx, p, llamaDir); flags != nil {
		probs = append(probs, study.CheckBenchFlags(p, flags)...)
	}
	devs, devProbs := devicesFor(ctx, p, llamaDir)
	probs = append(probs, study.Errors(devProbs)...)
	if devs != nil {
		probs = append(probs, study.Errors(study.CheckDevices(p, *devs))...)
	}
	if len(probs) > 0 {
		return &study.RefusedError{Problems: probs}
	}
	return nil
}

// benchFlagsFor lists the flags of the llama-bench that would run the plan, when the plan has
// extra_args to check (nil otherwise); a build that cannot be found or asked gives a warning
// saying the extra_args were not checked.
func benchFlagsFor(ctx context.Context, p *study.Plan, llamaDir string) (map[string]bool, *study.Problem) {
	if len(p.Axes.ExtraArgs) == 0 {
		return nil, nil
	}
	if llamaDir == "" {
		llamaDir = p.Build.Dir
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err == nil {
		var flags map[string]bool
		if flags, err = llamacpp.HelpFlags(ctx, loc.Bench); err == nil {
			return flags, nil
		}
	}
	return nil, &study.Problem{Path: "axes.extra_args", Severity: study.SevWarning,
		Msg: fmt.Sprintf("not checked against a llama-bench (%v); pass --llama-dir with the build that will run the plan", err)}
}

// registerFile registers a throughput plan file (idempotently; data: its bytes, already read,
// or nil) and prints what happened.
func registerFile(ctx context.Context, nb *store.Notebook, file string, data []byte, stdout, stderr io.Writer) (study.Registration, int) {
	p, err := loadPlan(file, data)
	if err != nil {
		fprintf(stderr, "sparkbench study register: %v\n", err)
		return study.Registration{}, 2
	}
	// extra_args the build does not know, devices it does not have and RPC endpoints that do
	// not answer are refused before anything is hashed or written.
	if err := buildRefusal(ctx, p, ""); err != nil {
		return study.Registration{}, reportRefusal("study register", err, stderr)
	}
	hash, commit := registrationHash(ctx, nb, stderr)
	reg, err := study.Register(ctx, store.StudyRecorder{N: nb}, p, file, hash)
	if err != nil {
		return reg, reportRefusal("study register", err, stderr)
	}
	if err := commit(ctx); err != nil {
		// The study is registered; the files are hashed again by the next command.
		fprintf(stderr, "sparkbench study register: warning: the model hashes were not cached: %v\n", err)
	}
	for _, w := range reg.Warnings {
		fprintf(stderr, "%s: %s\n", file, w)
	}
	if reg.Existing {
		fprintf(stdout, "study %d %q: already registered with this plan (sha256 %s)\n", reg.StudyID, reg.Name, reg.PlanSHA256)
	} else {
		fprintf(stdout, "study %d %q registered: plan sha256 %s, %d predictions, %d legs\n", reg.StudyID, reg.Name, reg.PlanSHA256, len(p.Predictions), reg.Legs)
	}
	return reg, 0
}

// studyRegister: sparkbench study register FILE [--notebook P] [--json].
func studyRegister(args []string, stdout, stderr io.Writer) int {
	return registerCommand("study register", args, stdout, stderr, func(ctx context.Context, nb *store.Notebook, file string, out, stderr io.Writer) (any, int) {
		reg, _, code := registerAnyFile(ctx, nb, file, out, stderr)
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
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench %s: want exactly one plan file\n", cmd)
		return 2
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
	reg, code := register(ctx, nb, pos[0], out, stderr)
	if code != 0 {
		return code
	}
	if *asJSON {
		return printJSON(stdout, stderr, cmd, reg)
	}
	return 0
}
