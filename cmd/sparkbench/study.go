package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/app/study/studyrun"
	"sparkbench/app/textsafe"
	"sparkbench/runner/hashing"
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
		return studyValidate(args[1:], stdout, stderr)
	case "register":
		return studyRegister(args[1:], stdout, stderr)
	case "run":
		return studyRun(args[1:], stdout, stderr)
	case "show":
		return studyShow(args[1:], stdout, stderr)
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

// studyValidate checks a plan file: strict JSON, every rule of docs/plans.md, model files read
// and hashed (SHA-256 against the plan). Exit 0 valid, 2 refused. Nothing is written.
func studyValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study validate", stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noHash := fs.Bool("no-hash", false, "skip hashing the model files (only their form is checked)")
	llamaDir := fs.String("llama-dir", "", "the build whose llama-bench checks extra_args (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench study validate: want exactly one plan file\n")
		return 2
	}
	file := pos[0]
	p, err := study.Load(file)
	if err != nil {
		fprintf(stderr, "sparkbench study validate: %v\n", err)
		return 2
	}
	p.Defaults()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := study.ValidateOptions{PlanDir: filepath.Dir(file)}
	if !*noHash {
		opts.Hash = func(path string) (string, error) { return hashing.File(ctx, path, nil) }
	}
	var unchecked *study.Problem
	opts.BenchFlags, unchecked = benchFlagsFor(ctx, p, *llamaDir)
	probs, _ := study.Validate(p, opts)
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
	if *asJSON {
		if code := printJSON(stdout, stderr, "study validate", rep); code != 0 {
			return code
		}
	} else {
		for _, pr := range probs {
			w := stdout
			if pr.Severity == study.SevError {
				w = stderr
			}
			fprintf(w, "%s: %s\n", file, pr)
		}
		if rep.Valid {
			fprintf(stdout, "%s: valid throughput plan %q, sha256 %s, %d legs:\n", file, p.Name, rep.SHA256, len(rep.Legs))
			for _, l := range rep.Legs {
				fprintf(stdout, "  %-24s %d rows  llama-bench %s\n", l.ID, l.ExpectedRows, study.JoinArgs(l.Args))
			}
		}
	}
	if !rep.Valid {
		return 2
	}
	return 0
}

// joinArgs prints argv for reading, quoting only the arguments that need it.

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

// cachedHash hashes model files through the notebook's cache (path, size, mtime, device,
// inode), with progress on a terminal.
func cachedHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) study.HashFunc {
	return hashThrough(ctx, notebookHashCache{nb}, stderr)
}

// registrationHash is cachedHash for registering a plan: it reads the notebook's cache, but
// holds the hashes it computes until commit is called, once the plan is accepted. A refused
// plan (a MISMATCH model) so writes nothing to the notebook, not even a hash-cache row.
func registrationHash(ctx context.Context, nb *store.Notebook, stderr io.Writer) (hash study.HashFunc, commit func(context.Context) error) {
	c := &heldHashCache{nb: notebookHashCache{nb}}
	return hashThrough(ctx, c, stderr), c.commit
}

// heldHashCache looks hashes up in the notebook and keeps new ones in memory until commit.
type heldHashCache struct {
	nb   notebookHashCache
	held []heldHash
}

type heldHash struct {
	k   hashing.Key
	sum string
}

func (c *heldHashCache) Lookup(ctx context.Context, k hashing.Key) (string, bool, error) {
	for _, h := range c.held {
		if h.k == k {
			return h.sum, true, nil
		}
	}
	return c.nb.Lookup(ctx, k)
}

func (c *heldHashCache) Store(_ context.Context, k hashing.Key, sum string) error {
	c.held = append(c.held, heldHash{k, sum})
	return nil
}

// commit writes the held hashes to the notebook's cache.
func (c *heldHashCache) commit(ctx context.Context) error {
	for _, h := range c.held {
		if err := c.nb.Store(ctx, h.k, h.sum); err != nil {
			return err
		}
	}
	c.held = nil
	return nil
}

// hashThrough hashes model files through cache c, with progress on a terminal.
func hashThrough(ctx context.Context, c hashing.Cache, stderr io.Writer) study.HashFunc {
	return func(path string) (string, error) {
		var progress func(hashing.Progress)
		if isTerminal(stderr) {
			progress = func(p hashing.Progress) {
				fprintf(stderr, "\rhashing %s: %5.1f%%", filepath.Base(p.Path), p.Fraction()*100)
			}
		}
		sum, cached, err := hashing.Cached(ctx, c, path, progress)
		if progress != nil && !cached {
			fprintf(stderr, "\r\033[K")
		}
		return sum, err
	}
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

// registerFile registers a plan file (idempotently) and prints what happened.
func registerFile(ctx context.Context, nb *store.Notebook, file string, stdout, stderr io.Writer) (study.Registration, int) {
	p, err := study.Load(file)
	if err != nil {
		fprintf(stderr, "sparkbench study register: %v\n", err)
		return study.Registration{}, 2
	}
	// extra_args the build does not know are refused before anything is hashed or written.
	if flags, _ := benchFlagsFor(ctx, p, ""); flags != nil {
		if probs := study.CheckBenchFlags(p, flags); len(probs) > 0 {
			return study.Registration{}, reportRefusal("study register", &study.RefusedError{Problems: probs}, stderr)
		}
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
	return registerCommand("study register", args, stdout, stderr, registerFile)
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

// studyRun: sparkbench study run ID|FILE [--llama-dir D] [--notebook P].
func studyRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study run", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench (default: the plan's build.dir, $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	var retry multiFlag
	fs.Var(&retry, "retry", "run this plan leg once more although its failures reached the plan's retries (repeatable); only a leg without results")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench study run: want one study id (or name) or one plan file\n")
		return 2
	}
	nb, code := openStudyNotebook("study run", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	var id int64
	if st, err := os.Stat(pos[0]); err == nil && !st.IsDir() {
		reg, code := registerFile(ctx, nb, pos[0], stdout, stderr)
		if code != 0 {
			return code
		}
		id = reg.StudyID
	} else if id, err = findStudy(ctx, nb, pos[0]); err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	return runStudy(ctx, nb, id, *llamaDir, retry, stdout, stderr)
}

// runStudy runs (or resumes) a registered study with progress on stdout.
func runStudy(ctx context.Context, nb *store.Notebook, id int64, llamaDir string, retry []string, stdout, stderr io.Writer) int {
	rec := store.StudyRecorder{N: nb}
	st, err := rec.Study(ctx, id)
	if err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 1
	}
	if llamaDir == "" {
		if p, err := study.Decode("plan", st.PlanJSON); err == nil {
			llamaDir = p.Build.Dir
		}
	}
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	}
	pr := newRunPrinter(stdout)
	e := &studyrun.Engine{Rec: rec, Bench: loc.Bench, Hash: cachedHash(ctx, nb, stderr), OnEvent: pr.event, Retry: retry}
	sum, err := e.Run(ctx, id)
	pr.close()
	var retryErr *study.RetryError
	switch {
	case errors.Is(err, study.ErrStopped):
		fprintf(stderr, "sparkbench study run: %v; run `sparkbench study run %d` to resume at the first unfinished leg\n", err, id)
		return 1
	case errors.As(err, &retryErr):
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 2
	case err != nil:
		return reportRefusal("study run", err, stderr)
	}
	if sum.Halted {
		fprintf(stdout, "study %d halted after %d/%d legs: %s\n", id, sum.LegsDone, sum.LegsTotal, sum.Reason)
		fprintf(stdout, "fix the cause, then `sparkbench study run %d` resumes at the first unfinished leg and runs again the legs that ended without results\n", id)
		return 1
	}
	if len(sum.Incomplete) > 0 {
		printIncomplete(stderr, id, sum)
		return 1
	}
	fprintf(stdout, "study %d %s: %d/%d legs (%d run now, %d before), %d verdict(s) journaled, %s; see `sparkbench study show %d`\n",
		id, sum.Status, sum.LegsDone, sum.LegsTotal, sum.LegsRun, sum.LegsSkipped, len(sum.Verdicts), sum.Elapsed.Round(10*time.Millisecond), id)
	return 0
}

// printIncomplete says which legs have no results, why, and what the next run does with each.
func printIncomplete(w io.Writer, id int64, sum study.RunSummary) {
	fprintf(w, "sparkbench study run: study %d incomplete: %d of %d legs have no results (%d run now, %d verdict(s) journaled)\n",
		id, len(sum.Incomplete), sum.LegsTotal, sum.LegsRun, len(sum.Verdicts))
	var retryable, final []string
	for _, st := range sum.Incomplete {
		why := st.Last.Class
		if st.Last.Reason != "" {
			why += ": " + st.Last.Reason
		}
		if st.Attempts == 0 {
			why = "not run"
		}
		if st.Final {
			fprintf(w, "  %s: %s (attempt %d; %d of %d attempts failed: final, its predictions are decided without it)\n",
				st.Leg, why, st.Last.Attempt, st.Failed, st.MaxAttempts)
			final = append(final, st.Leg)
		} else {
			fprintf(w, "  %s: %s (attempt %d; %d more attempt(s) allowed)\n", st.Leg, why, st.Last.Attempt, st.RetriesLeft())
			retryable = append(retryable, st.Leg)
		}
	}
	if len(retryable) > 0 {
		fprintf(w, "fix the cause, then `sparkbench study run %d` runs %s again; predictions that read %s wait for it\n",
			id, strings.Join(retryable, ", "), map[bool]string{true: "it", false: "them"}[len(retryable) == 1])
	}
	for _, leg := range final {
		fprintf(w, "`sparkbench study run %d --retry %s` forces one more attempt of %s\n", id, leg, leg)
	}
}

// runPrinter shows a run: on a terminal a progress bar redrawn in place (legs done/total, the
// current leg and its tests, ETA) with finished legs and verdicts scrolling above it; else one
// plain line per event.
type runPrinter struct {
	w      io.Writer
	tty    bool
	last   time.Time
	barLen int
}

func newRunPrinter(w io.Writer) *runPrinter { return &runPrinter{w: w, tty: isTerminal(w)} }

func (p *runPrinter) line(format string, a ...any) {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\r\033[K")
		p.barLen = 0
	}
	// Recorded text (a model path, llama-bench's own output) reaches the terminal escaped.
	fprintf(p.w, "%s\n", textsafe.Escape(fmt.Sprintf(format, a...)))
}

func (p *runPrinter) bar(pr study.Progress, force bool) {
	if !p.tty || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	const width = 24
	filled := 0
	if pr.LegsTotal > 0 {
		filled = width * pr.LegsDone / pr.LegsTotal
	}
	s := fmt.Sprintf("[%s%s] %d/%d legs", strings.Repeat("#", filled), strings.Repeat(".", width-filled), pr.LegsDone, pr.LegsTotal)
	if pr.Current != "" {
		s += " · " + pr.Current
		if pr.LegTests > 0 {
			s += fmt.Sprintf(" (test %d/%d)", min(pr.LegTest+1, pr.LegTests), pr.LegTests)
		}
	}
	s += " · " + pr.Elapsed.Round(time.Second).String()
	if pr.ETA >= 0 {
		s += " · ETA " + pr.ETA.Round(time.Second).String()
	}
	fprintf(p.w, "\r\033[K%s", s)
	p.barLen = len(s)
}

func (p *runPrinter) event(e study.Event) {
	pr := e.Progress
	switch e.Kind {
	case study.EventLegSkipped, study.EventLine, study.EventLegProgress, study.EventProgress:
		// the bar (on a terminal) says enough; the leg's own output is in its transcript
	case study.EventLegStarted, study.EventSample:
		if !p.tty { // a terminal shows the running leg in the bar
			p.line("%s", study.EventText(e))
		}
	case study.EventHalted:
		p.line("%s", study.EventText(e))
		return
	case study.EventDone:
		if p.tty {
			p.bar(pr, true)
			fprintf(p.w, "\n")
			p.barLen = 0
		}
		return
	default:
		if text := study.EventText(e); text != "" {
			p.line("%s", text)
		}
	}
	p.bar(pr, e.Kind != study.EventSample && e.Kind != study.EventLegProgress)
}

func (p *runPrinter) close() {
	if p.tty && p.barLen > 0 {
		fprintf(p.w, "\n")
	}
}

// openShown opens the notebook read-only for a show verb and finds the study that ref names (an
// id or a name, through find). done stops the context (Ctrl-C / SIGTERM) and closes the
// notebook. nb is nil when it could not, and code is then the exit status.
func openShown(verb, nbFlag, ref string, find func(context.Context, *store.Notebook, string) (int64, error), stderr io.Writer) (nb *store.Notebook, ctx context.Context, id int64, done func(), code int) {
	path, err := notebookPath(nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return nil, nil, 0, nil, 2
	}
	if nb, code = openNotebook(verb, path, true, stderr); nb == nil {
		return nil, nil, 0, nil, code
	}
	ctx, stop := studyCtx()
	done = func() {
		stop()
		nb.Close()
	}
	if id, err = find(ctx, nb, ref); err != nil {
		done()
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return nil, nil, 0, nil, 2
	}
	return nb, ctx, id, done, 0
}

// studyShow: sparkbench study show ID [--json] [--notebook P].
func studyShow(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study show", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the report as JSON (every figure with the stored rows it came from)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench study show: want one study id or name\n")
		return 2
	}
	nb, ctx, id, done, code := openShown("study show", *nbFlag, pos[0], findStudy, stderr)
	if nb == nil {
		return code
	}
	defer done()
	rep, err := study.Show(ctx, store.StudyRecorder{N: nb}, id)
	if err != nil {
		fprintf(stderr, "sparkbench study show: %v\n", err)
		return 1
	}
	if *asJSON {
		return printJSON(stdout, stderr, "study show", rep)
	}
	printReport(stdout, rep)
	return 0
}

// studyCompare: sparkbench study compare BASELINE NEW [--alpha A] [--json] [--notebook P]. It
// compares every cell the two studies measured on the same model file (same SHA-256), test,
// depth and configuration, the benchstat way. Exit 0 compared; 2 refused (different model
// files, no shared cell, fewer than 3 repetitions in a shared cell) or bad input; 1 otherwise.
func studyCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study compare", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the comparison as JSON (every cell with the stored rows it came from)")
	alpha := fs.Float64("alpha", study.DefaultAlpha, "significance level: a delta with p >= alpha prints as ~")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 2 {
		fprintf(stderr, "sparkbench study compare: want two study ids or names: the baseline, then the new study\n")
		return 2
	}
	if !(*alpha > 0 && *alpha < 1) {
		fprintf(stderr, "sparkbench study compare: --alpha %g: want a level in (0, 1), e.g. 0.05\n", *alpha)
		return 2
	}
	nb, ctx, baseID, done, code := openShown("study compare", *nbFlag, pos[0], findStudy, stderr)
	if nb == nil {
		return code
	}
	defer done()
	newID, err := findStudy(ctx, nb, pos[1])
	if err != nil {
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 2
	}
	c, err := study.CompareStudies(ctx, store.StudyRecorder{N: nb}, baseID, newID, *alpha)
	switch {
	case errors.Is(err, study.ErrNotComparable):
		fprintf(stderr, "sparkbench study compare: refused: %s\n", strings.TrimSuffix(err.Error(), ": "+study.ErrNotComparable.Error()))
		return 2
	case err != nil:
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 1
	}
	if *asJSON {
		return printJSON(stdout, stderr, "study compare", c)
	}
	printComparison(stdout, c)
	return 0
}

// printComparison prints a comparison as benchstat does: one line per cell with the baseline
// and the new mean, each ± its 95% interval, and the delta with its p-value and n ("~" when
// not significant).
func printComparison(w io.Writer, c *study.StudyComparison) {
	w, flush := escaped(w)
	defer flush()
	for _, s := range []struct {
		head string
		s    study.ComparedStudy
	}{{"baseline", c.Baseline}, {"new", c.New}} {
		fprintf(w, "%-8s  study %d %q (%s), plan sha256 %s\n", s.head, s.s.ID, s.s.Name, s.s.Status, s.s.PlanSHA256)
	}
	configs := map[string]bool{}
	for _, cc := range c.Cells {
		configs[cc.Config] = true
	}
	if len(configs) == 1 {
		fprintf(w, "config    %s\n", c.Cells[0].Config)
	}
	fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  model\ttest\tdepth\t")
	if len(configs) > 1 {
		fprintf(tw, "config\t")
	}
	fprintf(tw, "baseline t/s\tnew t/s\tdelta\n")
	ci := func(s analysis.Summary) string { return fmt.Sprintf("%.2f ± %.2f", s.Mean, s.Hi-s.Mean) }
	for _, cc := range c.Cells {
		model := cc.Model
		if cc.NewModel != cc.Model {
			model += "=" + cc.NewModel
		}
		fprintf(tw, "  %s\t%s\td%d\t", model, cc.Test, cc.Depth)
		if len(configs) > 1 {
			fprintf(tw, "%s\t", cc.Config)
		}
		fprintf(tw, "%s\t%s\t%s\n", ci(cc.Baseline), ci(cc.New), cc.Word)
	}
	tw.Flush()
	fprintf(w, "\n± is the t-based 95%% interval of the mean over the repetitions; delta is new/baseline - 1 with\n"+
		"Welch's two-sided t-test: ~ when p >= %g (no significant difference)\n", c.Alpha)
	for _, x := range []struct {
		head  string
		cells []string
	}{{"only in the baseline (not compared)", c.OnlyBaseline}, {"only in the new study (not compared)", c.OnlyNew}, {"notes", c.Notes}} {
		if len(x.cells) > 0 {
			fprintf(w, "%s:\n", x.head)
			for _, s := range x.cells {
				fprintf(w, "  %s\n", s)
			}
		}
	}
}

func printReport(w io.Writer, r *study.Report) {
	w, flush := escaped(w)
	defer flush()
	s := r.Study
	fprintf(w, "study %d %q: %s, %d/%d legs finished\nplan sha256 %s, registered %s\n", s.ID, s.Name, s.Status, s.LegsDone, s.LegsTotal,
		s.PlanSHA256, s.RegisteredAt.Local().Format("2006-01-02 15:04:05"))
	if s.Halted != "" {
		fprintf(w, "halted: %s\n", s.Halted)
	}
	for _, leg := range s.Incomplete {
		fprintf(w, "no results: %s\n", leg)
	}
	if r.BandwidthGBs != nil {
		fprintf(w, "memory bandwidth %.1f GB/s (%s)\n", *r.BandwidthGBs, r.Bandwidth)
	}

	fprintf(w, "\nlegs\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  id\tlabel\tstate\tclass\trows\tresults\tflagged\tdiscarded\tduration\tconditions\n")
	for _, l := range r.Legs {
		id, dur := "-", "-"
		if l.ID != 0 {
			id = strconv.FormatInt(l.ID, 10)
		}
		if l.Duration > 0 {
			dur = l.Duration.Round(time.Millisecond).String()
		}
		label := l.Label
		if l.Role != study.RoleLeg {
			label += " [" + l.Role + "]"
		}
		fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", id, label, l.State, l.Class, l.Rows, l.Results, l.Flagged,
			l.Discarded+l.Unmarked, dur, strings.Join(l.Conditions, "; "))
	}
	tw.Flush()

	if len(r.Results) > 0 {
		fprintf(w, "\nresults by depth (t/s, mean ± sd over the repetitions)\n")
		var depths []int64
		type key struct{ model, leg, test, config string }
		cells := map[key]map[int64]study.ReportCell{}
		var order []key
		for _, c := range r.Results {
			if !slices.Contains(depths, c.Depth) {
				depths = append(depths, c.Depth)
			}
			leg := ""
			if _, rep, ok := strings.Cut(c.Leg, "#"); ok {
				leg = "#" + rep
			}
			k := key{c.Model, leg, c.Test, c.Config}
			if cells[k] == nil {
				cells[k] = map[int64]study.ReportCell{}
				order = append(order, k)
			}
			cells[k][c.Depth] = c
		}
		slices.Sort(depths)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fprintf(tw, "  model\ttest")
		for _, d := range depths {
			fprintf(tw, "\td%d", d)
		}
		fprintf(tw, "\n")
		for _, k := range order {
			fprintf(tw, "  %s%s\t%s", k.model, k.leg, k.test)
			for _, d := range depths {
				if c, ok := cells[k][d]; ok {
					fprintf(tw, "\t%.2f ± %.2f", c.Mean, c.SD)
				} else {
					fprintf(tw, "\t-")
				}
			}
			fprintf(tw, "\n")
		}
		tw.Flush()
	}

	if len(r.Figures) > 0 {
		fprintf(w, "\nderived figures\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range r.Figures {
			val := "-"
			switch {
			case f.Problem != "":
				val = "(" + f.Problem + ")"
			case f.Value == nil:
				val = f.Detail
			case f.Figure == study.FigureSlope || f.Figure == study.FigureContamination:
				val = fmt.Sprintf("%+.1f%%", *f.Value*100) // a change: signed
			case f.Figure == study.FigureEfficiency || f.Figure == study.FigureRepeatabilityCV || f.Figure == study.FigureCV:
				val = fmt.Sprintf("%.1f%%", *f.Value*100) // a fraction of something: unsigned
			default:
				val = fmt.Sprintf("%.4g", *f.Value)
			}
			fprintf(tw, "  %s\t%s\t%s\n", f.Label, val, strings.Join(f.Sources, ", "))
		}
		tw.Flush()
	}

	fprintf(w, "\nprediction scoreboard\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  id\tkind\tabout\texpected\tobserved\tverdict\thuman\n")
	for _, sc := range r.Scoreboard {
		obs := "-"
		if v := sc.Verdict.Value; v != nil {
			obs = fmt.Sprintf("%.4g", *v)
		}
		human := "-"
		if h := sc.Human; h != nil {
			human = h.Outcome + ": " + h.Rationale
		}
		word := sc.Word
		if sc.Amended {
			word += " (amended)"
		}
		fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", sc.Prediction, sc.Kind, sc.About, sc.Expected, obs, word, human)
		for _, d := range sc.Deviations {
			fprintf(tw, "  \t\tdeviation: %s\t\t\t%s\t(%s)\n", d.Change, d.Word, d.Reason)
		}
		if sc.Verdict.Problem != "" && sc.Verdict.Outcome != study.Pending {
			fprintf(tw, "  \t\t%s\t\t\t\t\n", sc.Verdict.Problem)
		}
	}
	tw.Flush()

	if len(r.Amendments) > 0 {
		fprintf(w, "\namendments (accepted before the legs they touch ran)\n")
		for _, a := range r.Amendments {
			var ch study.AmendmentChange
			_ = json.Unmarshal(a.Change, &ch)
			fprintf(w, "  %s %s: %s → %s; reason: %s\n", a.At.Local().Format("2006-01-02 15:04"), a.Target, ch.Before.Expectation(), ch.After.Expectation(), a.Reason)
		}
	}
	if len(r.Deviations) > 0 {
		fprintf(w, "\ndeviations (recorded after legs ran; never the verdict of record)\n")
		for _, d := range r.Deviations {
			fprintf(w, "  %s DEVIATION: %s\n", d.At.Local().Format("2006-01-02 15:04"), d.Description)
		}
	}
	if len(r.Findings) > 0 {
		fprintf(w, "\nfindings\n")
		for _, f := range r.Findings {
			var ev []string
			if len(f.Legs) > 0 {
				ev = append(ev, "legs "+strings.Join(f.Legs, ", "))
			}
			if len(f.Predictions) > 0 {
				ev = append(ev, "predictions "+strings.Join(f.Predictions, ", "))
			}
			suffix := ""
			if len(ev) > 0 {
				suffix = " (" + strings.Join(ev, "; ") + ")"
			}
			fprintf(w, "  %s %s%s\n", f.Label, f.Text, suffix)
		}
	}
}
