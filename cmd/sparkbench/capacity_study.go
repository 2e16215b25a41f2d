package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// Capacity and concurrency studies in the notebook (docs/capacity.md):
//
//	sparkbench capacity register PLAN [--notebook P] [--json]
//	sparkbench capacity run ID|PLAN --notebook P … | capacity run ID [--fresh] [--out DIR] …
//	sparkbench capacity show ID [--json] [--notebook P]
//
// `capacity run PLAN --no-notebook` is the notebook-free run (capacity_run.go).

const nbFlagHelp = "notebook file (default: $" + store.EnvNotebook + ", then the user's data folder)"

// capacityRunsInNotebook says whether `capacity run ARGS`'s argument is a study of the
// notebook: when --notebook is given, or when the one argument names no file and does not look
// like a path (no separator, no .json suffix): a study id or name. (A plan file runs in the
// notebook too unless --no-notebook or --resume: capacityRunCommand.)
func capacityRunsInNotebook(args []string) bool {
	ref, notebook, ok := runTarget(args) // run_any.go
	if notebook != "" {
		return true
	}
	if !ok {
		return false
	}
	if st, err := os.Stat(ref); err == nil {
		return st.IsDir()
	}
	// Not there: a path (a missing plan file) stays with the plain run, which says so.
	return !strings.ContainsRune(ref, os.PathSeparator) && !strings.HasSuffix(strings.ToLower(ref), ".json")
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
// (the finished ones are kept); --fresh, or --out, starts a new run folder. It runs through the
// capacity kind's Run (runKind). Exit 0 complete, 1 halted, failed, busy or incomplete (a
// lifetime ended without results), 2 bad input or a refused plan (a server flag llama-server
// does not know included).
func capacityStudyRun(o *capacityRunOpts, ref string, stdout, stderr io.Writer) int {
	nb, code := openStudyNotebook("capacity run", o.notebook, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	info := stdout
	if o.asJSON {
		info = stderr
	}
	var id int64
	if st, err := os.Stat(ref); err == nil && !st.IsDir() {
		reg, code := capacityRegisterFileWith(ctx, nb, ref, o.llamaDir, info, stderr)
		if code != 0 {
			return code
		}
		id = reg.StudyID
	} else if id, err = workbench.FindCapacity(ctx, nb, ref); err != nil {
		fprintf(stderr, "sparkbench capacity run: %v\n", err)
		return 2
	}
	opts := &workbench.CapacityRunOptions{QualityCases: o.qualityCases, Batched: o.batched, StartTimeout: o.startTimeout,
		RequestTimeout: o.reqTimeout, Grace: o.grace, On: o.on}
	if o.on != "" {
		found, err := findHosts(o.hosts, o.notebook)
		if err != nil {
			fprintf(stderr, "sparkbench capacity run: --on %s: %v\n", o.on, err)
			return 2
		}
		opts.Hosts = found.Hosts
	}
	req := workbench.RunRequest{LlamaDir: o.llamaDir, Out: o.out, Fresh: o.fresh, Options: opts, TrustCache: o.trustCache}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		req.JSON = func(ev any) { _ = enc.Encode(ev) }
	}
	return runKind(ctx, nb, workbench.DefaultKind("capacity"), id, "capacity run", req, stdout, stderr)
}
