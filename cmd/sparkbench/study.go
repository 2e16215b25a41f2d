package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/runner/hashing"
)

func cmdStudy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench study: want a verb: validate FILE\n")
		return 2
	}
	switch args[0] {
	case "validate":
		return studyValidate(args[1:], stdout, stderr)
	}
	fprintf(stderr, "sparkbench study: unknown verb %q; want validate\n", args[0])
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
	probs, _ := study.Validate(p, opts)
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
				fprintf(stdout, "  %-24s %d rows  llama-bench %s\n", l.ID, l.ExpectedRows, joinArgs(l.Args))
			}
		}
	}
	if !rep.Valid {
		return 2
	}
	return 0
}

// joinArgs prints argv for reading, quoting only the arguments that need it.
func joinArgs(a []string) string {
	out := make([]string, len(a))
	for i, s := range a {
		if s == "" || strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			s = strconv.Quote(s)
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}
