package main

import (
	"errors"
	"io"
	"strconv"
	"strings"

	"sparkbench/app/quant"
	"sparkbench/app/workbench"
)

// Quantization ladders (docs/quant.md) are registered, run, shown and exported with the study
// verbs; `quant handoff` turns a finished one into a capacity plan.

const quantUsage = "quant handoff ID --out PLAN [--slots 1,2,4] [--clients 1,2,4] [--n-predict N] [--notebook P]"

func cmdQuant(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "handoff" {
		fprintf(stderr, "usage: sparkbench %s\n", quantUsage)
		return 2
	}
	fs := newFlagSet("quant handoff", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	out := fs.String("out", "", "the capacity plan to write (a new file; the built-in prompt plan is written beside it)")
	slots := fs.String("slots", "", "server slot counts to try (default 1,2,4)")
	clients := fs.String("clients", "", "client levels to try (default: the slot counts)")
	nPredict := fs.Int("n-predict", 0, "tokens per request (default 64)")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench quant handoff: "+format+"\n", a...)
		return 2
	}
	if len(pos) != 1 || *out == "" {
		return bad("want one ladder study id and --out PLAN: `sparkbench %s`", quantUsage)
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil {
		return bad("%q is not a study id", pos[0])
	}
	h := quant.HandOff{NPredict: *nPredict}
	for _, f := range []struct {
		name, val string
		to        *[]int
	}{{"--slots", *slots, &h.Slots}, {"--clients", *clients, &h.Clients}} {
		for _, s := range strings.Split(f.val, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return bad("%s %q: want whole numbers from 1, e.g. %s 1,2,4", f.name, f.val, f.name)
			}
			*f.to = append(*f.to, n)
		}
	}
	nb, code := openStudyNotebook("quant handoff", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	sum, err := workbench.QuantHandOff(ctx, nb, workbench.QuantHandOffRequest{ID: id, Out: *out, HandOff: h})
	if err != nil {
		fprintf(stderr, "sparkbench quant handoff: %v\n", err)
		if errors.As(err, new(*workbench.RequestError)) {
			return 2
		}
		return 1
	}
	fprintf(stdout, "%s: capacity plan of ladder study %d, sha256 %s (journaled on the ladder); next: `sparkbench capacity run %s --notebook …`\n", *out, id, sum, *out)
	return 0
}
