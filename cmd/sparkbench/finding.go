package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// cmdFinding: sparkbench finding add ID --text TEXT [--leg L]… [--prediction P]….
func cmdFinding(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "add" {
		fprintf(stderr, "sparkbench finding: want `sparkbench finding add ID --text TEXT [--leg L] [--prediction P]`\n")
		return 2
	}
	fs := newFlagSet("finding add", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	text := fs.String("text", "", "the finding, in words")
	var legs, preds multiFlag
	fs.Var(&legs, "leg", "a leg that evidences it: plan leg id (tiny/d128), label or notebook leg id (repeatable)")
	fs.Var(&preds, "prediction", "a prediction it bears on, e.g. P2 (repeatable)")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench finding add: want one study id or name\n")
		return 2
	}
	if strings.TrimSpace(*text) == "" {
		fprintf(stderr, "sparkbench finding add: --text is required\n")
		return 2
	}
	return withStudy("finding add", *nbFlag, pos[0], stderr, func(ctx context.Context, nb *store.Notebook, id int64) int {
		label, err := workbench.AddFinding(ctx, nb, id, study.FindingRequest{Text: *text, Legs: legs, Predictions: preds})
		if err != nil {
			fprintf(stderr, "sparkbench finding add: %v\n", err)
			var stopped *store.StoppedError
			if errors.As(err, &stopped) {
				return 1 // stopped by a signal: not a refusal
			}
			return 2
		}
		fprintf(stdout, "study %d: %s recorded\n", id, label)
		return 0
	})
}
