package main

import (
	"context"
	"io"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

// cmdVerdict: sparkbench verdict ID --prediction P --human PASS|FAIL|NOTE --why TEXT.
func cmdVerdict(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verdict", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	pred := fs.String("prediction", "", "the prediction's id, e.g. P1")
	human := fs.String("human", "", "PASS, FAIL or NOTE")
	why := fs.String("why", "", "the rationale (required)")
	author := fs.String("author", "", "who decided (default: the login name)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench verdict: want one study id or name, e.g. sparkbench verdict 3 --prediction P1 --human PASS --why \"…\"\n")
		return 2
	}
	req := workbench.VerdictRequest{Prediction: *pred, Outcome: *human, Rationale: *why, Author: *author}
	if err := req.Check(); err != nil {
		fprintf(stderr, "sparkbench verdict: %v\n", err)
		return 2
	}
	h := req.Verdict()
	return withStudy("verdict", *nbFlag, pos[0], stderr, func(ctx context.Context, nb *store.Notebook, id int64) int {
		if err := workbench.RecordVerdict(ctx, nb, id, h); err != nil {
			fprintf(stderr, "sparkbench verdict: %v\n", err)
			return 2
		}
		fprintf(stdout, "study %d %s: human verdict %s recorded (%s)\n", id, h.Prediction, h.Outcome, h.Rationale)
		return 0
	})
}
