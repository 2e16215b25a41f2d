package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
	"sparkbench/runner/hashing"
	"sparkbench/runner/llamacpp"
)

const capacityRunUsage = "capacity run PLAN [--llama-dir D] [--out DIR | --resume DIR] [--quality-cases FILE] [--start-timeout DUR] [--request-timeout DUR] [--grace DUR] [--json]"

// capacityRun is `sparkbench capacity run PLAN`: every server lifetime of the plan's schedule
// (forward and reverse passes, llama-server restarted per candidate and slot count), the raw
// files written into a run folder laid out for `capacity assemble`, then study.json. Progress
// goes to stderr; the selected points (or, with --json, every event as a JSON line) to stdout.
// --resume DIR continues a stopped, halted or killed run of the same plan in its folder: the
// server lifetimes it finished are kept, the rest run. Exit 0 when study.json was assembled, 1
// when the run or the assembly failed (the raw files stay), 2 for bad input (a folder that
// cannot be resumed included).
func capacityRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("capacity run", stderr)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-server (default: the plan's build.dir, then the usual search)")
	out := fs.String("out", "", "run folder to create (default capacity-run-YYYYMMDD-HHMMSS here)")
	resume := fs.String("resume", "", "resume the stopped, halted or killed run of this plan in this run folder (its finished server lifetimes are kept)")
	startTimeout := fs.Duration("start-timeout", 0, "per server start, until /health answers 200 (default 5m)")
	reqTimeout := fs.Duration("request-timeout", 0, "per request, send to final event (default 5m)")
	grace := fs.Duration("grace", 0, "SIGTERM to SIGKILL when a server is stopped (default 5s)")
	asJSON := fs.Bool("json", false, "print every run event as a JSON line on stdout")
	qualityCases := fs.String("quality-cases", "", "the quality guard's case list (sparkbench.quality-cases/v1); required when the plan has a quality gate")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench capacity run: "+format+"\n", a...)
		return 2
	}
	if len(pos) != 1 {
		return bad("want exactly one plan file: `sparkbench %s`", capacityRunUsage)
	}
	if *startTimeout < 0 || *reqTimeout < 0 || *grace < 0 {
		return bad("timeouts must be positive")
	}
	if *out != "" && *resume != "" {
		return bad("give --out (a new run folder) or --resume (an existing one), not both")
	}
	planFile := pos[0]
	plan, err := capacity.Load(planFile)
	if err != nil {
		return bad("%v", err)
	}
	dir := *llamaDir
	if dir == "" && plan.Build.Dir != "" {
		dir = study.ResolvePath(filepath.Dir(planFile), plan.Build.Dir)
	}
	loc, err := llamacpp.Locate(dir)
	if err != nil {
		return bad("%v", err)
	}
	if *resume != "" {
		*out = *resume
	} else if *out == "" {
		*out = "capacity-run-" + time.Now().UTC().Format("20060102-150405")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	build, err := llamacpp.Inspect(ctx, loc)
	if err != nil {
		fprintf(stderr, "sparkbench capacity run: warning: %v (the build is not fingerprinted in run.json)\n", err)
		build = nil
	}
	run := capacity.StartRun(context.Background(), capacity.RunSpec{PlanFile: planFile, Plan: plan, Server: loc.Server,
		OutDir: *out, Resume: *resume != "", Build: build, StartTimeout: *startTimeout, RequestTimeout: *reqTimeout, Grace: *grace, QualityCases: *qualityCases,
		Hash: func(path string) (string, error) { return hashing.File(ctx, path, nil) }})
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
	for _, c := range res.Candidates {
		rejected := 0
		for _, cell := range c.Cells {
			if !cell.Passed {
				rejected++
			}
		}
		if s := c.Selected; s != nil {
			gain := "gain n/a"
			if s.Gain != nil {
				gain = fmt.Sprintf("%+.1f%% vs P%d/C%d", *s.Gain*100, c.Base.Slots, c.Base.Clients)
			}
			fprintf(w, "  %-24s selected P%d/C%d  %.2f tok/s  %s  (%d of %d cells rejected)\n", c.ID, s.Slots, s.Clients, s.GenerationRate, gain, rejected, len(c.Cells))
		} else {
			fprintf(w, "  %-24s no point selected: %s (%d of %d cells rejected)\n", c.ID, c.SelectionNote, rejected, len(c.Cells))
		}
	}
	for _, v := range res.Verdicts {
		fprintf(w, "  %-8s %-12s %s\n", v.Prediction, v.Outcome, v.Detail)
	}
	fprintf(w, "reproduce: sparkbench capacity assemble %s\n", strings.Join(rep.AssembleArgs, " "))
}
