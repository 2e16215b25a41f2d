package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// compareRefusal prints why a comparison was not made: 2 refused (study.ErrNotComparable), 1
// another error, 0 none.
func compareRefusal(err error, stderr io.Writer) int {
	var req *workbench.RequestError
	switch {
	case errors.As(err, &req):
		fprintf(stderr, "sparkbench study compare: refused: %v\n", err)
		return 2
	case errors.Is(err, study.ErrNotComparable):
		fprintf(stderr, "sparkbench study compare: refused: %s\n", strings.TrimSuffix(err.Error(), ": "+study.ErrNotComparable.Error()))
		return 2
	case err != nil:
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 1
	}
	return 0
}

// studyAAOnly is `study compare --aa ID`: the A/A control of one study.
func studyAAOnly(ctx context.Context, nb *store.Notebook, id int64, o study.CompareOptions, asJSON bool, stdout, stderr io.Writer) int {
	c, err := workbench.AAControlThroughput(ctx, nb, id, o)
	if code := compareRefusal(err, stderr); code != 0 {
		return code
	}
	if asJSON {
		return printJSON(stdout, stderr, "study compare", c)
	}
	w, flush := escaped(stdout)
	defer flush()
	fprintf(w, "study %d %q (%s), plan sha256 %s\n\n", c.Study.ID, c.Study.Name, c.Study.Status, c.Study.PlanSHA256)
	printAA(w, c.AA)
	return 0
}

// sideColumns are a cell's baseline and new columns (workbench.CompareSides: the window and
// a comparison's receipt show the same).
func sideColumns(cc study.CellComparison) (base, next string) { return workbench.CompareSides(cc) }

// compareFooter says what the columns are and which test was used; with benchmath, the
// cells' warnings follow, each once.
func compareFooter(c *study.StudyComparison) string {
	if c.Stats == study.StatsProcess {
		return fmt.Sprintf("the unit is the llama-bench process: t/s is the mean of the processes' means ± the t-based 95%% interval over\n"+
			"n processes (n×m: n processes of m repetitions); delta is new/baseline - 1, [..] its 95%% interval, with Welch's\n"+
			"two-sided t-test on the process means: ~ when p >= %g (no significant difference); ? when a side has one process\n"+
			"(a point estimate: the repetitions inside one process are not independent samples)\n", c.Alpha)
	}
	if c.Stats != study.StatsBenchmath {
		return fmt.Sprintf("± is the t-based 95%% interval of the mean over the repetitions; delta is new/baseline - 1 with\n"+
			"Welch's two-sided t-test: ~ when p >= %g (no significant difference)\n", c.Alpha)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "t/s is the median with its distribution-free 95%% interval (benchmath); delta is new/baseline - 1\n"+
		"of the medians, [..] the Hodges-Lehmann 95%% interval of the difference, test %s (two-sided):\n"+
		"~ when p >= %g (no significant difference)\n", analysis.TestMannWhitney, c.Alpha)
	seen := map[string]bool{}
	for _, cc := range c.Cells {
		for _, w := range cc.Medians.Warnings {
			if !seen[w] {
				if len(seen) == 0 {
					b.WriteString("warnings:\n")
				}
				seen[w] = true
				fmt.Fprintf(&b, "  %s\n", w)
			}
		}
	}
	return b.String()
}

// printAA prints an A/A control: each cell against itself, then the false-positive rate.
func printAA(w io.Writer, c *study.AAControl) {
	test := "Welch's t-test"
	switch c.Stats {
	case study.StatsBenchmath:
		test = analysis.TestMannWhitney
	case study.StatsProcess:
		test = "Welch's t-test on the process means"
	}
	fprintf(w, "A/A control (%s, alpha %g): every cell against itself, split in halves\n", test, c.Alpha)
	if len(c.Cells) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fprintf(tw, "  study\tcell\tsplit\tdelta\n")
		for _, x := range c.Cells {
			fprintf(tw, "  %d\t%s\t%s\t%s\n", x.Study, x.Cell, x.Split, x.Word)
		}
		tw.Flush()
	}
	if len(c.Untestable) > 0 {
		fprintf(w, "not tested:\n")
		for _, s := range c.Untestable {
			fprintf(w, "  %s\n", s)
		}
	}
	fprintf(w, "%s\n", c.Words())
}
