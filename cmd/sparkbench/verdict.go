package main

import (
	"context"
	"io"
	"os/user"
	"strings"

	"sparkbench/app/study"
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
	switch {
	case len(pos) != 1:
		fprintf(stderr, "sparkbench verdict: want one study id or name, e.g. sparkbench verdict 3 --prediction P1 --human PASS --why \"…\"\n")
		return 2
	case *pred == "":
		fprintf(stderr, "sparkbench verdict: --prediction is required (e.g. P1)\n")
		return 2
	case *human == "":
		fprintf(stderr, "sparkbench verdict: --human is required: PASS, FAIL or NOTE\n")
		return 2
	case strings.TrimSpace(*why) == "":
		fprintf(stderr, "sparkbench verdict: --why is required: a human verdict records its rationale\n")
		return 2
	}
	h := study.HumanVerdict{Prediction: *pred, Outcome: strings.ToUpper(*human), Rationale: *why, Author: *author}
	switch h.Outcome {
	case "PASS", "FAIL", "NOTE":
	default:
		fprintf(stderr, "sparkbench verdict: --human %q: want PASS, FAIL or NOTE\n", *human)
		return 2
	}
	if h.Author == "" {
		h.Author = currentUser()
	}
	return withStudy("verdict", *nbFlag, pos[0], stderr, func(ctx context.Context, nb *store.Notebook, id int64) int {
		if err := study.RecordHumanVerdict(ctx, store.StudyRecorder{N: nb}, id, h); err != nil {
			fprintf(stderr, "sparkbench verdict: %v\n", err)
			return 2
		}
		fprintf(stdout, "study %d %s: human verdict %s recorded (%s)\n", id, h.Prediction, h.Outcome, h.Rationale)
		return 0
	})
}

// currentUser is the login name recorded as a human verdict's author ("" when unknown).
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
