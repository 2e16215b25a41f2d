package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/capacity/caprun"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// Capacity and concurrency studies in the notebook (docs/capacity.md):
//
//	sparkbench capacity register PLAN [--notebook P] [--json]
//	sparkbench capacity run ID|PLAN --notebook P … | capacity run ID [--fresh] [--out DIR] …
//	sparkbench capacity show ID [--json] [--notebook P]
//
// `capacity run PLAN` without --notebook stays the notebook-free run (capacity_run.go).

const nbFlagHelp = "notebook file (default: $" + store.EnvNotebook + ", then the user's data folder)"

// capacityRunsInNotebook says whether `capacity run ARGS` goes through the notebook: when
// --notebook is given, or when the one argument names no file and does not look like a path
// (no separator, no .json suffix): a study id or name.
func capacityRunsInNotebook(args []string) bool {
	valued := map[string]bool{"llama-dir": true, "out": true, "start-timeout": true, "request-timeout": true, "grace": true,
		"quality-cases": true, "notebook": true, "resume": true}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "notebook" {
				return true
			}
			if valued[name] && !hasVal {
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) != 1 {
		return false
	}
	if st, err := os.Stat(pos[0]); err == nil {
		return st.IsDir()
	}
	// Not there: a path (a missing plan file) stays with the plain run, which says so.
	return !strings.ContainsRune(pos[0], os.PathSeparator) && !strings.HasSuffix(strings.ToLower(pos[0]), ".json")
}

// capacityRegisterFileWith registers a plan file (idempotently) and prints what happened, as
// `capacity register` does, with the llama-server folder whose --help the plan's server_flags
// are checked against (llamaDir, else the plan's build.dir, else the usual search; no
// llama-server found: a warning, not checked).
func capacityRegisterFileWith(ctx context.Context, nb *store.Notebook, file, llamaDir string, stdout, stderr io.Writer) (capacity.Registration, int) {
	reg, err := workbench.RegisterCapacity(ctx, nb, workbench.CapacityRegisterRequest{File: file, LlamaDir: llamaDir, Hash: hashShow(stderr)})
	var shown *workbench.Registered
	if reg != nil {
		shown = reg.Registered(file)
	}
	commit := func(context.Context) error { return reg.CacheErr }
	if code := printRegistered("capacity register", workbench.DefaultKind("capacity"), shown, err, commit, ctx, stdout, stderr); code != 0 {
		return capacity.Registration{}, code
	}
	return reg.Registration, 0
}

// capacityRegister: sparkbench capacity register PLAN [--notebook P] [--json].
func capacityRegister(args []string, stdout, stderr io.Writer) int {
	return registerCommand("capacity register", args, stdout, stderr, func(ctx context.Context, nb *store.Notebook, file string, out, stderr io.Writer) (any, int) {
		reg, _, code := registerAnyFile(ctx, nb, "capacity", file, out, stderr)
		return reg, code
	})
}

// capacityStudyRun: sparkbench capacity run ID|PLAN [--notebook P] [--fresh] [--out DIR] …: the
// run is recorded in the notebook (one leg per server lifetime), the run folder kept (default
// DATA/runs/ID), study.json's SHA-256 and the verdicts journaled. A study whose last run was
// stopped, halted or killed resumes in that run folder at its first unfinished server lifetime
// (the finished ones are kept); --fresh, or --out, starts a new run folder. Exit 0 complete, 1
// halted, failed, busy or incomplete (a lifetime ended without results), 2 bad input or a
// refused plan (a server flag llama-server does not know included).
func capacityStudyRun(o *capacityRunOpts, ref string, stdout, stderr io.Writer) int {
	nbFlag, llamaDir, out, fresh, asJSON := &o.notebook, &o.llamaDir, &o.out, &o.fresh, &o.asJSON
	pos := []string{ref}
	nb, code := openStudyNotebook("capacity run", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	info := stdout
	if *asJSON {
		info = stderr
	}
	var id int64
	if st, err := os.Stat(pos[0]); err == nil && !st.IsDir() {
		reg, code := capacityRegisterFileWith(ctx, nb, pos[0], *llamaDir, info, stderr)
		if code != 0 {
			return code
		}
		id = reg.StudyID
	} else if id, err = workbench.FindCapacity(ctx, nb, pos[0]); err != nil {
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		return 2
	}
	enc := json.NewEncoder(stdout)
	sum, st, err := workbench.RunCapacity(ctx, nb, workbench.CapacityRunRequest{ID: id, LlamaDir: *llamaDir, Out: *out, Fresh: *fresh,
		StartTimeout: o.startTimeout, RequestTimeout: o.reqTimeout, Grace: o.grace, QualityCases: o.qualityCases, Batched: o.batched,
		Warn: func(msg string) { fprintf(stderr, "sparkbench capacity run: %s\n", msg) }, Hash: hashShow(stderr),
		OnEvent: func(ev capacity.RunEvent) {
			if *asJSON {
				_ = enc.Encode(ev)
			}
			capacityRunProgress(stderr, ev)
		}})
	if errors.As(err, new(*workbench.NotStartedError)) {
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		if errors.As(err, new(*workbench.RequestError)) {
			return 2
		}
		return 1
	}
	if ie, ok := capacity.IsIncomplete(err); ok && sum != nil {
		fprintf(stderr, "sparkbench capacity run: study %d %s\n", id, err)
		fprintf(stderr, "sparkbench capacity run: %s; the raw files are in %s (run.json lists them); %d server lifetimes recorded%s; no verdict is journaled\n",
			capacityIncompleteStudyText(ie), sum.RunDir, sum.Legs, capacityKeptText(sum))
		fprintf(stderr, "sparkbench capacity run: fix the cause, then `sparkbench capacity run %d` measures those lifetimes again (--fresh starts over in a new run folder)\n", id)
		return 1
	}
	if err != nil {
		switch {
		case capacity.IsRefusal(err):
			fprintf(stderr, "sparkbench capacity run: %v\n", err)
			return 2
		case errors.Is(err, capacity.ErrAlreadyAssembled), errors.Is(err, capacity.ErrBusy):
			fprintf(stderr, "sparkbench capacity run: %v\n", err)
			return 1
		}
		fprintf(stderr, "sparkbench capacity run: study %d halted: %v\n", id, err)
		if sum != nil && sum.RunDir != "" {
			fprintf(stderr, "sparkbench capacity run: the raw files are in %s (run.json says what happened); %d server lifetimes recorded%s\n",
				sum.RunDir, sum.Legs, capacityKeptText(sum))
			fprintf(stderr, "sparkbench capacity run: `sparkbench capacity run %d` resumes it at the first unfinished server lifetime (--fresh starts over in a new run folder)\n", id)
		}
		return 1
	}
	if sum.NotResumed != "" {
		fprintf(info, "not resumed: %s; ran in a new run folder\n", sum.NotResumed)
	}
	fprintf(info, "study %d %q: %s, %d server lifetimes recorded%s, run folder %s, study.json sha256 %s\n",
		id, st.Name, sum.Status, sum.Legs, capacityKeptText(sum), sum.RunDir, sum.StudySHA256)
	if sum.Report != nil && sum.Report.Result != nil {
		for _, sp := range capacityShowSelected(sum.Report.Result) {
			fprintf(info, "  %s\n", sp)
		}
		for _, c := range sum.Report.Result.Candidates {
			if c.ServerTax != nil {
				fprintf(info, "  %s\n", capacity.ServerTaxLine(c.ID, c.ServerTax))
			}
		}
	}
	for _, v := range sum.Verdicts {
		fprintf(info, "  %-8s %-12s %s (journaled)\n", v.Prediction, v.Outcome, v.Detail)
	}
	return 0
}

// capacityKeptText says what a resumed run kept from before ("" for a run that did not resume).
func capacityKeptText(sum *capacity.RunSummary) string {
	if !sum.Resumed {
		return ""
	}
	s := fmt.Sprintf(" (resumed: %d kept from before", sum.LifetimesKept)
	if sum.GuardsKept > 0 {
		s += fmt.Sprintf(", and %d quality guards", sum.GuardsKept)
	}
	return s + ")"
}

// capacityEngine is the engine that runs study id, as `capacity run` and the window use it
// (workbench.CapacityEngine; warnings on warn). needDataDir: no --out was given, so runs go
// under the data folder. code is the exit status for the error (2: bad input, 1: the notebook).
func capacityEngine(ctx context.Context, nb *store.Notebook, id int64, llamaDir string, needDataDir bool, warn io.Writer) (*caprun.Engine, capacity.StoredStudy, int, error) {
	out := ""
	if !needDataDir {
		out = "given"
	}
	e, st, err := workbench.CapacityEngine(ctx, nb, workbench.CapacityRunRequest{ID: id, LlamaDir: llamaDir, Out: out, Hash: hashShow(warn),
		Warn: func(msg string) { fprintf(warn, "sparkbench capacity run: %s\n", msg) }})
	if errors.As(err, new(*workbench.RequestError)) {
		return nil, st, 2, err
	}
	if err != nil {
		return nil, st, 1, err
	}
	return e, st, 0, nil
}

// capacityShowSelected is one line per candidate: the selected point and its gain.
func capacityShowSelected(res *capacity.Result) []string {
	var out []string
	for _, c := range res.Candidates {
		out = append(out, capacity.SelectedLine(c.ID, c.Selected, c.Base, c.SelectionNote))
	}
	return out
}
