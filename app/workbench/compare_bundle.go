package workbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/plots"
)

// A comparison's receipt: comparison.json (the ComparisonSet, canonical JSON), comparison.md
// and plots/depth.png made from it alone, and SHA256SUMS. Verifying it re-makes the Markdown
// and the chart from comparison.json and compares them byte for byte, as a study's receipt is
// verified.

// Files of a comparison bundle.
const (
	FileComparison   = "comparison.json"
	FileComparisonMD = "comparison.md"
	FileCompareDepth = "plots/depth.png"
)

// Size of the overlaid depth chart in a comparison's receipt (CSS pixels).
const compareChartW, compareChartH = 900, 520

// ComparisonFiles is the comparison's bundle.
func ComparisonFiles(set *ComparisonSet) (receipt.Files, error) {
	return derivedFiles(FileComparison, set, deriveComparison)
}

// deriveComparison adds the Markdown and the chart made from files' comparison.json.
func deriveComparison(files receipt.Files) error {
	if comparisonSchema(files[FileComparison]) == CapacityComparisonSchema {
		return deriveCapacityComparison(files) // compare_capacity_bundle.go
	}
	var set ComparisonSet
	if err := json.Unmarshal(files[FileComparison], &set); err != nil {
		return fmt.Errorf("%s: %v", FileComparison, err)
	}
	if set.Schema != ComparisonSchema {
		return fmt.Errorf("%s: schema %q, want %q", FileComparison, set.Schema, ComparisonSchema)
	}
	files[FileComparisonMD] = []byte(ComparisonMarkdown(&set))
	if set.Depth != nil {
		p, err := set.Depth.Plot()
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := plots.Export(p, plots.PNG, plots.Pixels(compareChartW), plots.Pixels(compareChartH), &b); err != nil {
			return err
		}
		files[FileCompareDepth] = b.Bytes()
	}
	return nil
}

// IsComparisonBundle says whether files are a comparison's receipt.
func IsComparisonBundle(files receipt.Files) bool {
	_, ok := files[FileComparison]
	return ok
}

// VerifyComparison checks a comparison's receipt: SHA256SUMS against every file, and the
// Markdown and chart re-made from comparison.json, byte for byte.
func VerifyComparison(files receipt.Files) *receipt.VerifyReport {
	return verifyDerived("comparison", FileComparison, files, deriveComparison, holdComparison)
}

// holdComparison holds comparison.json's pairs to the rows it carries: each pair is
// study.CompareSides of the baseline's rows and the study's, with the statistics asked for
// (the call the notebook's comparison made), compared figure by figure. A comparison made
// before comparisons carried their rows, and a capacity comparison (whose request records stay
// in each study's own receipt), is checked for self-consistency only, and verify says so.
func holdComparison(src []byte) ([]byte, holdReport) {
	var h holdReport
	if comparisonSchema(src) == CapacityComparisonSchema {
		h.Limits = append(h.Limits, FileComparison+": a capacity comparison carries no request records: its rates, medians, deltas and p-values were checked for self-consistency only (comparison.md and the charts re-made from it), not re-derived; each study's own receipt carries its records")
		return src, h
	}
	var set ComparisonSet
	if err := json.Unmarshal(src, &set); err != nil {
		return src, h // deriveComparison names it
	}
	if set.Sides == nil && set.Options == nil {
		h.Limits = append(h.Limits, FileComparison+": an old-layout comparison (made before comparisons carried their rows): its cells, deltas and p-values were checked for self-consistency only (comparison.md and the chart re-made from it), not re-derived from rows")
		return src, h
	}
	bad := func(format string, a ...any) ([]byte, holdReport) {
		h.Problems = append(h.Problems, receipt.Problem{File: FileComparison, What: fmt.Sprintf(format, a...)})
		return src, h
	}
	switch {
	case set.Options == nil:
		return bad("carries the studies' rows but not the statistics asked for (options): its cells cannot be re-derived")
	case set.Options.Rules < 0 || set.Options.Rules > CompareRulesStopped:
		return bad("options.rules %d: this sparkbench knows comparison rules up to %d (a newer version wrote the receipt?); verify it with that version", set.Options.Rules, CompareRulesStopped)
	case len(set.Sides) != len(set.Studies) || len(set.Pairs) != len(set.Studies)-1:
		return bad("carries the rows of %d studies for %d studies and %d pairs: its cells cannot be re-derived", len(set.Sides), len(set.Studies), len(set.Pairs))
	}
	for i, s := range set.Sides {
		if d, err := receipt.JSONDiffs(set.Studies[i], s.Study, 1); err != nil || len(d) > 0 {
			return bad("studies[%d] (study %d) is not the study whose rows sides[%d] carries (study %d)", i, set.Studies[i].ID, i, s.Study.ID)
		}
	}
	rows := 0
	h.Derived = true
	for i, held := range set.Pairs {
		want, err := study.CompareSides(set.Sides[0], set.Sides[i+1], set.Options.compare())
		if err != nil {
			bad("pairs[%d] (study %d against study %d): the rows it carries give no comparison: %v", i, set.Studies[i+1].ID, set.Studies[0].ID, err)
			continue
		}
		diffs, err := receipt.JSONDiffs(held, want, 8)
		if err != nil {
			bad("pairs[%d]: %v", i, err)
			continue
		}
		for _, d := range diffs {
			bad("pairs[%d] (study %d against study %d): %s%s is %s, the rows give %s", i, want.New.ID, want.Baseline.ID, cellName(d.Path, held, want), d.Path, d.Has, d.Give)
		}
		set.Pairs[i] = want
	}
	for _, s := range set.Sides {
		rows += len(s.Rows)
	}
	if len(h.Problems) == 0 {
		h.Checked = append(h.Checked, fmt.Sprintf("every cell of %d pair(s) (summaries, delta, interval, p, word) re-derived from the %d rows %s carries", len(set.Pairs), rows, FileComparison))
	}
	h.Limits = append(h.Limits, FileComparison+": the shared prediction verdicts and the overlaid depth chart are re-made from it as they were exported, not re-derived from the rows")
	fixed, err := canon.Marshal(&set)
	if err != nil {
		return src, h
	}
	return fixed, h
}

// cellName names the cell a pair's JSON path is in ("cell tg32 @ d0 of tiny [...]: "), or ""
// when the path is not in a cell.
func cellName(path string, held, want *study.StudyComparison) string {
	var j int
	if _, err := fmt.Sscanf(path, "cells[%d]", &j); err != nil {
		return ""
	}
	for _, c := range [][]study.CellComparison{held.Cells, want.Cells} {
		if j >= 0 && j < len(c) {
			return "cell " + c[j].Label() + ": "
		}
	}
	return ""
}

// ComparisonMarkdown is the comparison's receipt text: the studies, then per pair the
// benchstat-style table of the shared cells, then the shared predictions' verdict lines.
func ComparisonMarkdown(set *ComparisonSet) string {
	var b strings.Builder
	b.WriteString("# Comparison of ")
	ids := make([]string, len(set.Studies))
	for i, s := range set.Studies {
		ids[i] = fmt.Sprintf("study %d", s.ID)
	}
	b.WriteString(strings.Join(ids, ", ") + "\n\n")
	b.WriteString("| | study | status | plan sha256 |\n|---|---|---|---|\n")
	for i, s := range set.Studies {
		role := "new"
		if i == 0 {
			role = "baseline"
		}
		fmt.Fprintf(&b, "| %s | %d %s | %s | `%s` |\n", role, s.ID, mdCell(s.Name), s.Status, s.PlanSHA256)
	}
	for _, c := range set.Pairs {
		fmt.Fprintf(&b, "\n## Study %d against study %d (%s, alpha %g)\n\n", c.New.ID, c.Baseline.ID, statsName(c.Stats), c.Alpha)
		b.WriteString("| cell | baseline t/s | new t/s | delta |\n|---|---|---|---|\n")
		for _, cc := range c.Cells {
			base, next := CompareSides(cc)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCell(cc.Label()), base, next, mdCell(cc.Word))
		}
		for _, only := range [][]string{c.OnlyBaseline, c.OnlyNew} {
			for _, s := range only {
				fmt.Fprintf(&b, "\n- not compared (one side only): %s", mdCell(s))
			}
		}
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "\n- %s", mdCell(n))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Shared predictions\n\n")
	if len(set.Verdicts) == 0 {
		b.WriteString("The studies share no prediction (same ID, same figure).\n")
	}
	for _, v := range set.Verdicts {
		fmt.Fprintf(&b, "- %s\n", mdCell(v.Line(set.Studies)))
	}
	if set.Depth != nil {
		fmt.Fprintf(&b, "\n## Depth curves\n\n![%s against depth](%s)\n", set.Depth.Metric, FileCompareDepth)
	}
	for _, n := range set.Notes {
		fmt.Fprintf(&b, "\n- %s\n", mdCell(n))
	}
	return b.String()
}

func statsName(s string) string {
	switch s {
	case "":
		return "Welch's t-test on the means"
	case study.StatsProcess:
		return s + ": Welch's t-test on the means of the llama-bench processes (n processes of m repetitions)"
	}
	return s + ": medians, Mann-Whitney U"
}

// mdCell keeps text inside one Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// CompareSides are a cell's baseline and new columns: the mean ± its t-based 95% interval
// (Welch), or the median with its distribution-free 95% interval (benchmath; "?" bounds when
// the repetitions are too few for one). `study compare` prints them, the window and the
// comparison's receipt show them.
func CompareSides(cc study.CellComparison) (base, next string) {
	if p := cc.Processes; p != nil {
		side := func(s analysis.ProcessSummary) string {
			if s.N < 2 {
				return fmt.Sprintf("%.2f (1 process of %s)", s.Mean, s.MString())
			}
			return fmt.Sprintf("%.2f ± %.2f (%d×%s)", s.Mean, s.Hi-s.Mean, s.N, s.MString())
		}
		return side(p.Base), side(p.New)
	}
	if cc.Medians == nil {
		ci := func(s analysis.Summary) string { return fmt.Sprintf("%.2f ± %.2f", s.Mean, s.Hi-s.Mean) }
		return ci(cc.Baseline), ci(cc.New)
	}
	med := func(m analysis.MedianSummary) string {
		if m.Lo == nil {
			return fmt.Sprintf("%.2f [?]", m.Median)
		}
		return fmt.Sprintf("%.2f [%.2f, %.2f]", m.Median, *m.Lo, *m.Hi)
	}
	return med(cc.Medians.Base), med(cc.Medians.New)
}
