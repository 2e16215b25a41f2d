package main

import (
	"context"
	"errors"
	"io"
	"os/signal"
	"strconv"
	"strings"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

const receiptUsage = "receipt STUDY --out DIR|FILE.tar.gz [--no-redact] | receipt --capacity-run DIR --out DIR|FILE.tar.gz [--prompt-plan FILE] [--bench-tg C=T…] [--batched C=FILE…] [--no-redact]"

// cmdReceipt writes a study's receipt bundle (docs/receipts.md): its raw files, receipt.md,
// study.json, plots and SHA256SUMS, into a new folder or a .tar.gz. A throughput study comes
// from the notebook; a capacity study from its run folder, with its journal excerpt and its
// prompt plan (checked against the plan's SHA-256) when it is a notebook study. Exit 0 written, 2 bad usage or input (an unknown study, an incomplete
// run folder), 1 failure.
func cmdReceipt(args []string, stdout, stderr io.Writer) int {
	return cmdReceiptCtx(context.Background(), args, stdout, stderr)
}

// cmdReceiptCtx is cmdReceipt stopped when parent is cancelled (the window's Cancel) or on
// Ctrl-C: the bundle is assembled in memory first, so a cancel before the write leaves nothing
// on disk.
func cmdReceiptCtx(parent context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("receipt", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	out := fs.String("out", "", "a new or empty folder, or a FILE.tar.gz")
	noRedact := fs.Bool("no-redact", false, "keep home-folder paths as recorded (default: written as ~)")
	capRun := fs.String("capacity-run", "", "a capacity run folder (plan.json, runs/PASS/CANDIDATE/pP/…) instead of a notebook study")
	promptPlan := fs.String("prompt-plan", "", "the prompt plan file, when the run folder has no copy of it (capacity only)")
	var benchTG, batched multiFlag
	fs.Var(&benchTG, "bench-tg", "CANDIDATE=T: llama-bench tg (t/s) for the serving tax of a capacity study (repeat)")
	fs.Var(&batched, "batched", "CANDIDATE=FILE: llama-batched-bench output for the server tax of a capacity run folder (repeat; the folder's batched/CANDIDATE.txt is taken without it)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench receipt: "+format+"\n", a...)
		return 2
	}
	req := workbench.ReceiptRequest{Out: *out, NoRedact: *noRedact, CapacityRun: *capRun, PromptPlan: *promptPlan}
	switch {
	case *out == "":
	case *capRun == "" && len(pos) != 1:
		return bad("want one study id or name (or --capacity-run DIR); usage: sparkbench %s", receiptUsage)
	case len(pos) == 1:
		req.Study = pos[0]
	case len(pos) > 1:
		return bad("give either a study or --capacity-run, not both")
	}
	fail := func(err error) int {
		var re *workbench.RequestError
		if errors.As(err, &re) {
			return bad("%v", err)
		}
		fprintf(stderr, "sparkbench receipt: %v\n", err)
		return 1
	}
	if *capRun == "" && len(benchTG) > 0 {
		req.BenchTG = map[string]float64{} // Check refuses it: --bench-tg is for --capacity-run
		for _, v := range benchTG {
			req.BenchTG[v] = 0
		}
	}
	for _, v := range batched {
		id, path, ok := strings.Cut(v, "=")
		if !ok || id == "" || path == "" {
			return bad("--batched %q: want CANDIDATE=FILE, a llama-batched-bench output, e.g. q8-generic=batched.md", v)
		}
		if _, dup := req.Batched[id]; dup {
			return bad("--batched %s is given twice; give one llama-batched-bench file per candidate", id)
		}
		if req.Batched == nil {
			req.Batched = map[string]string{}
		}
		req.Batched[id] = path
	}
	if err := req.Check(); err != nil {
		return fail(err)
	}
	for _, v := range benchTG {
		id, num, ok := strings.Cut(v, "=")
		x, err := strconv.ParseFloat(num, 64)
		if !ok || id == "" || err != nil || !(x > 0) {
			return bad("--bench-tg %q: want CANDIDATE=T with T llama-bench's tg in t/s, e.g. q8-generic=41.2", v)
		}
		if req.BenchTG == nil {
			req.BenchTG = map[string]float64{}
		}
		req.BenchTG[id] = x
	}
	ctx, stop := signal.NotifyContext(parent, stopSignals...)
	defer stop()
	var nb *store.Notebook
	if req.Study != "" && ctx.Err() == nil {
		path, err := notebookPath(*nbFlag)
		if err != nil {
			return bad("%v", err)
		}
		var code int
		if nb, code = openNotebook("receipt", path, false, stderr); nb == nil {
			return code
		}
		defer nb.Close()
	}
	x, err := workbench.ExportReceipt(ctx, nb, req)
	if err != nil {
		return fail(err)
	}
	if x.RecordErr != nil {
		fprintf(stderr, "sparkbench receipt: the bundle is written, but the notebook could not record it: %v\n", x.RecordErr)
	}
	fprintf(stdout, "%s", workbench.ReceiptText(x))
	return 0
}
