package workbench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sparkbench/app/analysis"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// A capacity comparison's receipt: comparison.json (the CapacityComparison, canonical JSON),
// comparison.md and the overlaid charts (compare_capacity_charts.go) made from it alone, and SHA256SUMS — the files of a throughput comparison's
// receipt, verified by VerifyComparison the same way (deriveComparison reads the schema).

// CapacityComparisonFiles is the comparison's bundle.
func CapacityComparisonFiles(c *CapacityComparison) (receipt.Files, error) {
	return derivedFiles(FileComparison, c, deriveComparison)
}

// comparisonSchema is the schema comparison.json names ("" when it names none).
func comparisonSchema(data []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	_ = json.Unmarshal(data, &head)
	return head.Schema
}

// deriveCapacityComparison adds the Markdown made from files' comparison.json.
func deriveCapacityComparison(files receipt.Files) error {
	var c CapacityComparison
	if err := json.Unmarshal(files[FileComparison], &c); err != nil {
		return fmt.Errorf("%s: %v", FileComparison, err)
	}
	if len(c.Studies) < 2 {
		return fmt.Errorf("%s: %d studies, a comparison has two or more", FileComparison, len(c.Studies))
	}
	files[FileComparisonMD] = []byte(CapacityComparisonMarkdown(&c))
	return addCapacityCompareCharts(files, &c)
}

// ExportCapacityComparison compares the studies and writes the comparison's receipt to out (a
// new or empty folder, or FILE.tar.gz); it returns the bundle's files.
func ExportCapacityComparison(ctx context.Context, nb *store.Notebook, req CapacityCompareRequest, out string) (*CapacityComparison, receipt.Files, error) {
	if strings.TrimSpace(out) == "" {
		return nil, nil, refused("name the comparison receipt's folder or .tar.gz")
	}
	c, err := CompareCapacity(ctx, nb, req)
	if err != nil {
		return nil, nil, err
	}
	files, err := CapacityComparisonFiles(c)
	if err == nil {
		err = writeDerived(ctx, out, files)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, files, nil
}

// CapacityComparisonMarkdown is the receipt text: the studies, the table of shared cells
// (each compared study against the baseline), the statistics used, the shared verdicts.
func CapacityComparisonMarkdown(c *CapacityComparison) string {
	var b strings.Builder
	ids := make([]string, len(c.Studies))
	for i, s := range c.Studies {
		ids[i] = fmt.Sprintf("study %d", s.ID)
	}
	fmt.Fprintf(&b, "# Capacity comparison of %s\n\n", strings.Join(ids, ", "))
	b.WriteString("| | study | kind | status | plan sha256 |\n|---|---|---|---|---|\n")
	for i, s := range c.Studies {
		role := "compared"
		if i == 0 {
			role = "baseline"
		}
		fmt.Fprintf(&b, "| %s | %d %s | %s | %s | `%s` |\n", role, s.ID, mdCell(s.Name), s.Kind, s.Status, s.PlanSHA256)
	}
	fmt.Fprintf(&b, "\nCandidates matched by %s.\n\n## Shared cells\n\n", c.MatchedBy)
	b.WriteString("| candidate | P | C | study | gen t/s | baseline gen t/s | TTFT | E2E | per-stream t/s |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, cell := range c.Cells {
		for i, p := range cell.Pairs {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s | %s | %s | %s |\n", mdCell(cell.Candidate), cell.Slots, cell.Clients, p.Study,
				RateText(cell.GenerationRate[i+1]), RateText(cell.GenerationRate[0]), p.TTFTMs, p.E2EMs, p.PerStream)
		}
	}
	b.WriteString("\n" + CapacityCompareFooter(c) + "\n## Shared predictions\n\n")
	if len(c.Verdicts) == 0 {
		b.WriteString("The studies share no prediction with a verdict.\n")
	}
	for _, v := range c.Verdicts {
		fmt.Fprintf(&b, "- %s\n", mdCell(c.VerdictLine(v)))
	}
	charts := CapacityCompareCharts(c)
	if len(charts) > 0 {
		b.WriteString("\n## Charts\n\n")
	}
	for _, name := range slices.Sorted(maps.Keys(charts)) {
		fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(strings.TrimPrefix(name, "plots/"), ".png"), name)
	}
	return b.String()
}

// CapacityCompareFooter says what the per-request columns are and which test was used (the
// CLI prints it, the receipt shows it).
func CapacityCompareFooter(c *CapacityComparison) string {
	s := fmt.Sprintf("TTFT, E2E and per-stream rate: each study's completed measured requests (every pass) against the\n"+
		"baseline's: delta of the medians, [..] the Hodges-Lehmann 95%% interval of the difference, test %s\n"+
		"(two-sided): ~ when p >= %g (no significant difference)\n", analysis.TestMannWhitney, c.Alpha)
	if c.RequestsPooled {
		s += "These per-request figures are POOLED across passes: the requests of one pass share its server\n" +
			"lifetime and are not independent of each other, so the test treats as independent what is not,\n" +
			"and its p-values and intervals are narrower than a test over passes would give. The unit is\n" +
			"the pass (one server lifetime): the cells' generation rates are medians over passes.\n"
	}
	return s
}

// RateText is a rate with two decimals, "-" when absent.
func RateText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}
