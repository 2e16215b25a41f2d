package workbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/analysis"
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
	return verifyDerived("comparison", FileComparison, files, deriveComparison)
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
	if s == "" {
		return "Welch's t-test on the means"
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
