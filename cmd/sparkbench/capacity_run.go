package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/capacity/caprun"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
)

const capacityRunUsage = "capacity run ID|PLAN [--notebook P | --no-notebook] [--llama-dir D] [--out DIR | --resume DIR | --fresh] [--quality-cases FILE] [--batched CANDIDATE=FILE…] [--start-timeout DUR] [--request-timeout DUR] [--grace DUR] [--on HOST [--hosts F]] [--json]"

// capacityRunOpts are the flags of `capacity run`: one set, whether the argument is a study
// id or name, or a plan file (registered in the notebook and run as a study, unless
// --no-notebook or --resume DIR asks for the notebook-free run).
type capacityRunOpts struct {
	notebook, llamaDir, out, resume, qualityCases string
	on, hosts                                     string
	fresh, asJSON, noNotebook, trustCache         bool
	startTimeout, reqTimeout, grace               time.Duration
	batchedFlag                                   multiFlag
	batched                                       map[string]string // candidate → llama-batched-bench output
}

func capacityRunFlags(stderr io.Writer) (*flag.FlagSet, *capacityRunOpts) {
	fs := newFlagSet("capacity run", stderr)
	o := &capacityRunOpts{}
	fs.StringVar(&o.notebook, "notebook", "", "run through this notebook ("+nbFlagHelp+"); a PLAN file is registered in it first")
	fs.BoolVar(&o.noNotebook, "no-notebook", false, "run a PLAN file without the notebook: raw files and study.json in a run folder only (`capacity assemble`, a folder receipt); nothing registered, so `sparkbench receipt NAME` will not find it")
	fs.StringVar(&o.llamaDir, "llama-dir", "", "folder holding llama-server (default: the plan's build.dir, then $"+"SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	fs.StringVar(&o.out, "out", "", "a new run folder to create (default: a study resumes its last run folder, else ${XDG_DATA_HOME:-~/.local/share}/sparkbench/runs/ID; a notebook-free PLAN run: capacity-run-YYYYMMDD-HHMMSS here)")
	fs.StringVar(&o.resume, "resume", "", "notebook-free PLAN run: resume the stopped, halted, killed or incomplete run of this plan in this run folder (its finished server lifetimes are kept); a study resumes its last run folder by itself")
	fs.BoolVar(&o.fresh, "fresh", false, "start a new run folder instead of resuming the study's last run (that folder stays as it is); a notebook-free PLAN run always starts a new one unless --resume")
	fs.BoolVar(&o.trustCache, "trust-cache", false, "take the models' hashes from the notebook's cache instead of reading the files before the first leg (for models too large to read at every run; journaled, and a model written in place with its size, mtime, inode and ctime put back goes unnoticed)")
	fs.StringVar(&o.qualityCases, "quality-cases", "", "the quality guard's case list (sparkbench.quality-cases/v1); required when the plan has a quality gate and no quality_cases")
	fs.Var(&o.batchedFlag, "batched", "CANDIDATE=FILE: llama-batched-bench output (md or jsonl) of the candidate's model, for the server tax; copied into the run folder (repeat)")
	fs.DurationVar(&o.startTimeout, "start-timeout", 0, "per server start, until /health answers 200 (default 5m)")
	fs.DurationVar(&o.reqTimeout, "request-timeout", 0, "per request, send to final event (default 5m)")
	fs.DurationVar(&o.grace, "grace", 0, "SIGTERM to SIGKILL when a server is stopped (default 5s)")
	fs.StringVar(&o.on, "on", "", "run every llama-server on this bench host over ssh, the load generator here against a forwarded port (docs/fleet.md)")
	fs.StringVar(&o.hosts, "hosts", "", "with --on: "+hostsFlagHelp)
	fs.BoolVar(&o.asJSON, "json", false, "print every run event as a JSON line on stdout")
	fs.Usage = func() {
		fprintf(stderr, "usage: sparkbench %s\n\nRuns every server lifetime of a capacity or concurrency study on llama-server (docs/capacity.md).\nExit 0 complete; 1 halted, failed, busy or incomplete (a lifetime ended without results); 2 bad input or a refused plan.\n\n", capacityRunUsage)
		fs.PrintDefaults()
	}
	return fs, o
}

// capacityRunCommand is `sparkbench capacity run ID|PLAN`: it parses the one flag set, then
// runs through the notebook (a study id or name, or --notebook) or notebook-free (a PLAN).
func capacityRunCommand(args []string, stdout, stderr io.Writer) int {
	return capacityRunKnown(args, false, stdout, stderr)
}

// capacityRunKnown is capacityRunCommand; known says the caller found already that the target
// is a capacity plan or study (run_any.go), so the notebook is not read again to ask.
func capacityRunKnown(args []string, known bool, stdout, stderr io.Writer) int {
	fs, o := capacityRunFlags(stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench capacity run: "+format+"\n", a...)
		return 2
	}
	switch {
	case len(pos) != 1:
		return bad("want one study id (or name) or one plan file: `sparkbench %s`", capacityRunUsage)
	case o.startTimeout < 0 || o.reqTimeout < 0 || o.grace < 0:
		return bad("timeouts must be positive")
	case o.out != "" && o.resume != "":
		return bad("give --out (a new run folder) or --resume (an existing one), not both")
	case o.fresh && o.resume != "":
		return bad("--fresh starts a new run folder and --resume continues one: give one of them")
	case o.hosts != "" && o.on == "":
		return bad("--hosts names the hosts list of --on HOST: give --on too")
	case o.noNotebook && o.notebook != "":
		return bad("--no-notebook runs a plan file without a notebook and --notebook names the one to run it in: give one of them")
	}
	if !known && !o.noNotebook && o.resume == "" {
		if v := runVerbOf(pos[0], o.notebook); v != "" && v != "capacity" { // one verb runs any kind (run_any.go)
			return studyRunOwn(args, stdout, stderr)
		}
	}
	for _, v := range o.batchedFlag {
		id, path, ok := strings.Cut(v, "=")
		if !ok || id == "" || path == "" {
			return bad("%s %q: want CANDIDATE=FILE, a llama-batched-bench output, e.g. %s q8-generic=batched.md", capacity.FlagBatched, v, capacity.FlagBatched)
		}
		if o.batched == nil {
			o.batched = map[string]string{}
		}
		if _, dup := o.batched[id]; dup {
			return bad("%s %s is given twice; give one llama-batched-bench file per candidate", capacity.FlagBatched, id)
		}
		o.batched[id] = path
	}
	// A plan file runs in the notebook (registered first) unless --no-notebook, or --resume DIR
	// of a notebook-free run folder, asks otherwise; a study id or name always does.
	if !o.noNotebook && (o.notebook != "" || capacityRunsInNotebook(args) || o.resume == "" && isRegularFile(pos[0])) {
		if o.resume != "" {
			return bad("--resume DIR resumes a notebook-free run folder of a plan file; a study resumes its own last run folder (`sparkbench capacity run ID`), and --fresh starts a new one")
		}
		return capacityStudyRun(o, pos[0], stdout, stderr)
	}
	if o.noNotebook && capacityRunsInNotebook(args) {
		return bad("--no-notebook runs a plan file; %q is not one (a study runs through the notebook: drop --no-notebook)", pos[0])
	}
	return capacityRun(o, pos[0], stdout, stderr)
}

// isRegularFile reports whether path names a regular file (a plan file to register).
func isRegularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// capacityRun is `sparkbench capacity run PLAN --no-notebook`: every server lifetime of the plan's schedule
// (forward and reverse passes, llama-server restarted per candidate and slot count), the raw
// files written into a run folder laid out for `capacity assemble`, then study.json. Progress
// goes to stderr; the selected points (or, with --json, every event as a JSON line) to stdout.
// --resume DIR continues a stopped, halted, killed or incomplete run of the same plan in its
// folder: the server lifetimes it finished are kept, the rest run. Exit 0 when study.json was
// assembled from every lifetime, 1 when the run or the assembly failed or a lifetime ended
// without results (incomplete; the raw files stay), 2 for bad input (a folder that cannot be
// resumed, a server flag llama-server does not know).
func capacityRun(o *capacityRunOpts, planFile string, stdout, stderr io.Writer) int {
	llamaDir, out, resume, asJSON := &o.llamaDir, &o.out, &o.resume, &o.asJSON
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench capacity run: "+format+"\n", a...)
		return 2
	}
	plan, err := capacity.Load(planFile)
	if err != nil {
		return bad("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	spec := caprun.RunSpec{PlanFile: planFile, Plan: plan, StartTimeout: o.startTimeout, RequestTimeout: o.reqTimeout, Grace: o.grace,
		QualityCases: o.qualityCases, Batched: o.batched, Hash: func(path string) (string, error) { return hashing.File(ctx, path, nil) }}
	if o.on != "" {
		host, closeHost, code := capacityRunHost(ctx, o, plan, planFile, stderr)
		if code != 0 {
			return code
		}
		defer closeHost()
		spec.Host, spec.Server, spec.Build = host, host.Binary, host.Build
	} else {
		dir := *llamaDir
		if dir == "" && plan.Build.Dir != "" {
			dir = study.ResolvePath(filepath.Dir(planFile), plan.Build.Dir)
		}
		loc, err := llamacpp.Locate(dir)
		if err != nil {
			return bad("%v", err)
		}
		if code := capacityCheckServerFlags("capacity run", plan, loc.Server, stderr); code != 0 {
			return code
		}
		spec.Server = loc.Server
		if spec.Build, err = llamacpp.Inspect(ctx, loc); err != nil {
			fprintf(stderr, "sparkbench capacity run: warning: %v (the build is not fingerprinted in run.json)\n", err)
			spec.Build = nil
		}
	}
	if *resume != "" {
		*out = *resume
	} else if *out == "" {
		*out = "capacity-run-" + time.Now().UTC().Format("20060102-150405")
	}
	spec.OutDir, spec.Resume = *out, *resume != ""
	run := caprun.StartRun(context.Background(), spec)
	go func() {
		<-ctx.Done()
		run.Stop()
	}()
	enc := json.NewEncoder(stdout)
	for ev := range run.Events() {
		if *asJSON {
			_ = enc.Encode(ev)
		}
		capacityRunProgress(stderr, ev)
	}
	rep, err := run.Wait()
	if ie, ok := capacity.IsIncomplete(err); ok {
		if ie.Assembled && !*asJSON {
			capacityRunSummary(stdout, rep)
		}
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		fprintf(stderr, "sparkbench capacity run: %s; the raw files are in %s (run.json lists them); fix the cause, then `sparkbench capacity run %s --resume %s` measures those lifetimes again\n",
			capacity.IncompleteStudyText(ie), rep.OutDir, planFile, rep.OutDir)
		return 1
	}
	if err != nil {
		if capacity.IsRefusal(err) {
			return bad("%v", err)
		}
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		if rep != nil {
			fprintf(stderr, "sparkbench capacity run: the raw files are in %s (run.json says what happened)\n", rep.OutDir)
		}
		return 1
	}
	if !*asJSON {
		capacityRunSummary(stdout, rep)
	}
	return 0
}

// capacityRunHost readies --on HOST for a notebook-free run (workbench.CapacityHost): exit 2
// with the reason when the host cannot serve the plan.
func capacityRunHost(ctx context.Context, o *capacityRunOpts, plan *capacity.Plan, planFile string, stderr io.Writer) (*caprun.RemoteHost, func(), int) {
	found, err := findHosts(o.hosts, o.notebook)
	if err != nil {
		fprintf(stderr, "sparkbench capacity run: --on %s: %v\n", o.on, err)
		return nil, nil, 2
	}
	dir, err := filepath.Abs(filepath.Dir(planFile))
	if err != nil {
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		return nil, nil, 2
	}
	host, closeHost, err := workbench.CapacityHost(ctx, found.Hosts, o.on, plan, []string{dir},
		func(msg string) { fprintf(stderr, "sparkbench capacity run: %s\n", msg) })
	if err != nil {
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		return nil, nil, 2
	}
	return host, closeHost, 0
}

// capacityCheckServerFlags refuses (exit 2) a plan whose server_flags hold a flag the
// llama-server at server does not list in its --help; when the help cannot be read it warns
// and lets the run go on (the servers' own start-up then says what is wrong).
func capacityCheckServerFlags(cmd string, p *capacity.Plan, server string, stderr io.Writer) int {
	known, err := llamacpp.HelpFlags(context.Background(), server)
	if err != nil {
		fprintf(stderr, "sparkbench %s: warning: server_flags not checked against llama-server: %v\n", cmd, err)
		return 0
	}
	probs := capacity.CheckServerFlags(p, known, server)
	for _, pr := range probs {
		fprintf(stderr, "sparkbench %s: plan refused: %s: %s\n", cmd, pr.Path, pr.Msg)
	}
	if len(probs) > 0 {
		return 2
	}
	return 0
}

// capacityRunProgress prints one progress line per event worth a line.
func capacityRunProgress(w io.Writer, ev capacity.RunEvent) {
	if line := capacity.ProgressLine(ev); line != "" {
		fprintf(w, "%s\n", line)
	}
}

// capacityRunSummary prints the selected points and how to reproduce study.json.
func capacityRunSummary(w io.Writer, rep *capacity.RunReport) {
	res := rep.Result
	fprintf(w, "%s: %s study %q, sha256 %s (plan %s), %d server lifetimes in %s\n", filepath.Join(rep.OutDir, rep.Study),
		res.Kind, res.Plan.Name, rep.StudySHA, res.PlanSHA256, len(rep.Lifetimes), rep.Duration.Round(time.Millisecond))
	printSelections(w, res)
	fprintf(w, "reproduce: sparkbench capacity assemble %s\n", strings.Join(rep.AssembleArgs, " "))
}
