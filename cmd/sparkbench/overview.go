package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"sparkbench/app/overview"
	"sparkbench/app/workbench"
	"sparkbench/runner"
	"sparkbench/store"
)

const overviewUsage = "overview badges [--line T/S] [--test tgN] [--deep D] [--json] | overview constants [--test tgN] [--json] | overview receipt --out DIR|FILE.tar.gz [--line T/S] [--test tgN] [--deep D]"

// cmdOverview: the figures that span studies (docs/overview.md): the badge table and the
// constants ladder over every throughput study of the notebook.
func cmdOverview(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench overview: want a verb: badges, constants or receipt\n")
		return 2
	}
	switch args[0] {
	case "badges", "constants", "receipt":
		return overviewVerb(args[0], args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fprintf(stdout, "usage: sparkbench %s\n", overviewUsage)
		return 0
	}
	fprintf(stderr, "sparkbench overview: unknown verb %q; want badges, constants or receipt\n", args[0])
	return 2
}

func overviewVerb(verb string, args []string, stdout, stderr io.Writer) int {
	name := "overview " + verb
	fs := newFlagSet(name, stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	test := fs.String("test", overview.DefaultTest, "the tg test: \"tg\" (every tg length, each its own rows) or \"tgN\" such as tg128")
	asJSON := fs.Bool("json", false, "print the table as JSON (every value with the study, leg and row it came from)")
	line, deep, out := new(string), new(string), new(string)
	if verb == "receipt" {
		out = fs.String("out", "", "the receipt's folder (new or empty) or .tar.gz")
	}
	if verb == "badges" || verb == "receipt" {
		line = fs.String("line", strconv.FormatFloat(overview.DefaultLine, 'g', -1, 64), "the badge line in t/s (tg must reach it; equal counts)")
		deep = fs.String("deep", strconv.Itoa(overview.DefaultDeep), "the deep depth of the \"both depths\" convention (the nearest measured depth is used, and named)")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 0 {
		fprintf(stderr, "sparkbench %s: takes no arguments (got %q)\n", name, strings.Join(pos, " "))
		return 2
	}
	opts := overview.Options{Test: *test}
	if verb == "receipt" && strings.TrimSpace(*out) == "" {
		fprintf(stderr, "sparkbench %s: --out DIR|FILE.tar.gz is required\n", name)
		return 2
	}
	if verb == "badges" || verb == "receipt" {
		if opts.Line, err = strconv.ParseFloat(strings.TrimSpace(*line), 64); err != nil || !(opts.Line > 0) {
			fprintf(stderr, "sparkbench %s: --line %q: want a positive number of tokens per second, e.g. --line 70\n", name, *line)
			return 2
		}
		if opts.Deep, err = strconv.ParseInt(strings.TrimSpace(*deep), 10, 64); err != nil || opts.Deep <= 0 {
			fprintf(stderr, "sparkbench %s: --deep %q: want a positive whole number of tokens, e.g. --deep 8192\n", name, *deep)
			return 2
		}
	}
	if err := opts.Defaults().Check(); err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 2
	}
	nb, code := openNotebookFlag(name, *nbFlag, true, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	if verb == "receipt" {
		return overviewReceipt(nb, opts, *out, stdout, stderr)
	}
	ov, err := overview.New(overview.Notebook(nb)).Open(context.Background(), opts)
	var oe *overview.OptionError
	switch {
	case errors.As(err, &oe):
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 2
	case errors.Is(err, overview.ErrNoResults):
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 1
	case err != nil:
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 1
	}
	if *asJSON {
		if verb == "badges" {
			return printJSON(stdout, stderr, name, struct {
				Studies []overview.StudyEntry `json:"studies"`
				overview.BadgeTable
			}{ov.Studies, ov.Badges})
		}
		return printJSON(stdout, stderr, name, struct {
			Studies []overview.StudyEntry `json:"studies"`
			overview.Ladder
		}{ov.Studies, ov.Ladder})
	}
	w, flush := escaped(stdout)
	defer flush()
	if verb == "badges" {
		overview.WriteBadges(w, ov)
	} else {
		overview.WriteLadder(w, ov)
	}
	return 0
}

// overviewReceipt is `overview receipt --out OUT`: both tables over the notebook as a receipt
// bundle that `sparkbench verify` re-makes byte for byte (docs/overview.md).
func overviewReceipt(nb *store.Notebook, opts overview.Options, out string, stdout, stderr io.Writer) int {
	machine := (&runner.Fingerprinter{}).Machine().String()
	r, files, err := workbench.ExportOverview(context.Background(), overview.New(overview.Notebook(nb)), opts, machine, out)
	var oe *overview.OptionError
	var re *workbench.RequestError
	switch {
	case errors.As(err, &oe) || errors.As(err, &re) || errors.Is(err, overview.ErrNoResults):
		fprintf(stderr, "sparkbench overview receipt: %v\n", err)
		return 2
	case err != nil:
		fprintf(stderr, "sparkbench overview receipt: %v\n", err)
		return 1
	}
	fprintf(stdout, "wrote %s: %d files, %d studies read; check it anywhere with `sparkbench verify %s`\n", out, len(files), len(r.Overview.Studies), out)
	return 0
}
