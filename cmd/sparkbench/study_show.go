package main

import (
	"context"
	"io"
	"text/tabwriter"

	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// openShown opens the notebook read-only for a show verb and finds the study that ref names (an
// id or a name, through find). done stops the context (Ctrl-C / SIGTERM) and closes the
// notebook. nb is nil when it could not, and code is then the exit status.
func openShown(verb, nbFlag, ref string, find func(context.Context, *store.Notebook, string) (int64, error), stderr io.Writer) (nb *store.Notebook, ctx context.Context, id int64, done func(), code int) {
	path, err := notebookPath(nbFlag)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return nil, nil, 0, nil, 2
	}
	if nb, code = openNotebook(verb, path, true, stderr); nb == nil {
		return nil, nil, 0, nil, code
	}
	ctx, stop := studyCtx()
	done = func() {
		stop()
		nb.Close()
	}
	if id, err = find(ctx, nb, ref); err != nil {
		done()
		fprintf(stderr, "sparkbench %s: %v\n", verb, err)
		return nil, nil, 0, nil, 2
	}
	return nb, ctx, id, done, 0
}

// studyCompare: sparkbench study compare BASELINE NEW [NEW…] [--alpha A] [--stats S] [--aa] [--json] [--out D]
// [--notebook P], or study compare --aa ID. It compares every cell the two studies measured on
// the same model file (same SHA-256), test, depth and configuration, the benchstat way; --aa
// adds (or, with one study, is) the A/A control. Exit 0 compared; 2 refused (different model
// files, no shared cell, fewer than 3 repetitions in a shared cell) or bad input; 1 otherwise.
func studyCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study compare", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the comparison as JSON (every cell with the stored rows it came from)")
	alpha := fs.Float64("alpha", study.DefaultAlpha, "significance level: a delta with p >= alpha prints as ~")
	stats := fs.String("stats", study.StatsAuto, "process (the default, auto: the llama-bench process is the unit, Welch's t-test on the process means), benchmath (medians over the repetitions, Mann-Whitney U) or welch (means over the repetitions, as if independent)")
	aa := fs.Bool("aa", false, "add the A/A control: every cell against itself split in halves, and the false-positive rate (with one study: the control alone)")
	outFlag := fs.String("out", "", "write the comparison's receipt (a folder, or a .tar.gz), which `sparkbench verify` re-derives from the rows it carries")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) < 2 && !(*aa && len(pos) == 1 && *outFlag == "") {
		fprintf(stderr, "sparkbench study compare: want two or more study ids or names: the baseline, then the studies compared with it (or one with --aa)\n")
		return 2
	}
	if !(*alpha > 0 && *alpha < 1) {
		fprintf(stderr, "sparkbench study compare: --alpha %g: want a level in (0, 1), e.g. 0.05\n", *alpha)
		return 2
	}
	o := study.CompareOptions{Alpha: *alpha, Stats: *stats, AA: *aa}
	if err := study.CheckStats(o.Stats); err != nil {
		fprintf(stderr, "sparkbench study compare: --stats: %v\n", err)
		return 2
	}
	nb, ctx, baseID, done, code := openShown("study compare", *nbFlag, pos[0], findStudy, stderr)
	if nb == nil {
		return code
	}
	defer done()
	if len(pos) == 1 {
		return studyAAOnly(ctx, nb, baseID, o, *asJSON, stdout, stderr)
	}
	if len(pos) > 2 || *outFlag != "" {
		return studyCompareSet(ctx, nb, baseID, pos[1:], o, *outFlag, *asJSON, stdout, stderr)
	}
	newID, err := findStudy(ctx, nb, pos[1])
	if err != nil {
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 2
	}
	c, err := workbench.CompareThroughputWith(ctx, nb, baseID, newID, o)
	if code := compareRefusal(err, stderr); code != 0 {
		return code
	}
	if *asJSON {
		return printJSON(stdout, stderr, "study compare", c)
	}
	printComparison(stdout, c)
	return 0
}

// printComparison prints a comparison as benchstat does: one line per cell with the baseline
// and the new mean, each ± its 95% interval, and the delta with its p-value and n ("~" when
// not significant).
func printComparison(w io.Writer, c *study.StudyComparison) {
	w, flush := escaped(w)
	defer flush()
	for _, s := range []struct {
		head string
		s    study.ComparedStudy
	}{{"baseline", c.Baseline}, {"new", c.New}} {
		fprintf(w, "%-8s  study %d %q (%s), plan sha256 %s\n", s.head, s.s.ID, s.s.Name, s.s.Status, s.s.PlanSHA256)
	}
	configs := map[string]bool{}
	for _, cc := range c.Cells {
		configs[cc.Config] = true
	}
	if len(configs) == 1 {
		fprintf(w, "config    %s\n", c.Cells[0].Config)
	}
	fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  model\ttest\tdepth\t")
	if len(configs) > 1 {
		fprintf(tw, "config\t")
	}
	fprintf(tw, "baseline t/s\tnew t/s\tdelta\n")
	for _, cc := range c.Cells {
		model := cc.Model
		if cc.NewModel != cc.Model {
			model += "=" + cc.NewModel
		}
		fprintf(tw, "  %s\t%s\td%d\t", model, cc.Test, cc.Depth)
		if len(configs) > 1 {
			fprintf(tw, "%s\t", cc.Config)
		}
		base, next := sideColumns(cc)
		fprintf(tw, "%s\t%s\t%s\n", base, next, cc.Word)
	}
	tw.Flush()
	fprintf(w, "\n%s", compareFooter(c))
	for _, x := range []struct {
		head  string
		cells []string
	}{{"only in the baseline (not compared)", c.OnlyBaseline}, {"only in the new study (not compared)", c.OnlyNew}, {"notes", c.Notes}} {
		if len(x.cells) > 0 {
			fprintf(w, "%s:\n", x.head)
			for _, s := range x.cells {
				fprintf(w, "  %s\n", s)
			}
		}
	}
	if c.AA != nil {
		fprintf(w, "\n")
		printAA(w, c.AA)
	}
}

// studyCompareSet is `study compare BASE S2 S3 … [--out DIR]`: each study compared with the
// baseline as the two-study form does (the window's comparison), and with --out the receipt.
func studyCompareSet(ctx context.Context, nb *store.Notebook, baseID int64, refs []string, o study.CompareOptions, out string, asJSON bool, stdout, stderr io.Writer) int {
	ids := []int64{baseID}
	for _, ref := range refs {
		id, err := findStudy(ctx, nb, ref)
		if err != nil {
			fprintf(stderr, "sparkbench study compare: %v\n", err)
			return 2
		}
		ids = append(ids, id)
	}
	req := workbench.CompareRequest{IDs: ids, Options: o}
	var set *workbench.ComparisonSet
	var files receipt.Files
	var err error
	if out != "" {
		set, files, err = workbench.ExportComparison(ctx, nb, req, out)
	} else {
		set, err = workbench.CompareStudies(ctx, nb, req)
	}
	if code := compareRefusal(err, stderr); code != 0 {
		return code
	}
	if asJSON {
		if code := printJSON(stdout, stderr, "study compare", set); code != 0 {
			return code
		}
	} else {
		for i, c := range set.Pairs {
			if i > 0 {
				fprintf(stdout, "\n")
			}
			printComparison(stdout, c)
		}
	}
	if out != "" {
		w := stdout
		if asJSON {
			w = stderr
		}
		fprintf(w, "wrote %s: %d studies compared with study %d (%d files); check it anywhere with `sparkbench verify %s`\n", out, len(ids)-1, baseID, len(files), out)
	}
	return 0
}
