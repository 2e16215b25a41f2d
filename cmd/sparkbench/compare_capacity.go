package main

import (
	"context"
	"errors"
	"io"
	"text/tabwriter"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

// capacityCompare is `sparkbench capacity compare A B [C…] [--json] [--alpha A] [--out DIR|FILE.tar.gz]`: capacity or
// concurrency studies compared cell by cell with the first (workbench.CompareCapacity). Exit 0;
// 2 bad input or a refused comparison (no shared cell, a throughput study, …); 1 otherwise.
func capacityCompare(args []string, stdout, stderr io.Writer) int {
	const cmd = "capacity compare"
	fs := newFlagSet(cmd, stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	alpha := fs.Float64("alpha", 0.05, "significance level: a difference with p >= alpha prints as ~")
	out := fs.String("out", "", "also write the comparison's receipt (comparison.json, comparison.md, SHA256SUMS) to this new or empty folder or FILE.tar.gz; `sparkbench verify` checks it")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) < 2 {
		fprintf(stderr, "sparkbench %s: want two or more study ids or names: the baseline, then the studies compared with it\n", cmd)
		return 2
	}
	nb, ctx, baseID, done, code := openShown(cmd, *nbFlag, pos[0], findAnyStudy, stderr)
	if nb == nil {
		return code
	}
	defer done()
	ids := []int64{baseID}
	for _, ref := range pos[1:] {
		id, err := findAnyStudy(ctx, nb, ref)
		if err != nil {
			fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
			return 2
		}
		ids = append(ids, id)
	}
	req := workbench.CapacityCompareRequest{IDs: ids, Alpha: *alpha}
	var c *workbench.CapacityComparison
	if *out != "" {
		c, _, err = workbench.ExportCapacityComparison(ctx, nb, req, *out)
	} else {
		c, err = workbench.CompareCapacity(ctx, nb, req)
	}
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		if errors.As(err, new(*workbench.RequestError)) {
			return 2
		}
		return 1
	}
	if *asJSON {
		return printJSON(stdout, stderr, cmd, c)
	}
	w, flush := escaped(stdout)
	defer flush()
	printCapacityComparison(w, c)
	if *out != "" {
		fprintf(w, "\ncomparison receipt written to %s (check it with `sparkbench verify %s`)\n", *out, *out)
	}
	return 0
}

// printCapacityComparison prints the studies, one line per shared cell and compared study
// (generation rates, then the per-request TTFT, E2E and per-stream rate against the
// baseline, benchstat's column each), the footer and the shared verdicts.
func printCapacityComparison(w io.Writer, c *workbench.CapacityComparison) {
	for i, s := range c.Studies {
		role := "compared"
		if i == 0 {
			role = "baseline"
		}
		fprintf(w, "%s: study %d %q (%s, %s), plan sha256 %s\n", role, s.ID, s.Name, s.Kind, s.Status, s.PlanSHA256)
	}
	fprintf(w, "candidates matched by %s\n\n", c.MatchedBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "candidate\tP\tC\tstudy\tgen t/s\tbase gen t/s\tTTFT\tE2E\tper-stream t/s\n")
	for _, cell := range c.Cells {
		for i, p := range cell.Pairs {
			fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", cell.Candidate, cell.Slots, cell.Clients, p.Study,
				workbench.RateText(cell.GenerationRate[i+1]), workbench.RateText(cell.GenerationRate[0]), p.TTFTMs, p.E2EMs, p.PerStream)
		}
	}
	tw.Flush()
	fprintf(w, "\n%s", workbench.CapacityCompareFooter(c))
	if len(c.Verdicts) > 0 {
		fprintf(w, "\nshared predictions:\n")
		for _, v := range c.Verdicts {
			fprintf(w, "  %s\n", c.VerdictLine(v))
		}
	}
}

// findAnyStudy resolves an id or name whatever the study's kind: the comparison says why a
// study of another kind is not compared.
func findAnyStudy(ctx context.Context, nb *store.Notebook, ref string) (int64, error) {
	s, err := nb.FindStudy(ctx, ref)
	return s.ID, err
}
