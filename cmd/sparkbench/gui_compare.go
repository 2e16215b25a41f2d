package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"sparkbench/app/fleet"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
	"sparkbench/ui"
)

// compareService is ui.CompareService over the notebook: workbench.CompareStudies, which
// compares each study with the first through the call `study compare` makes.
type compareService struct{ nb *store.Notebook }

var _ ui.CompareService = compareService{}

func (s compareService) Compare(ctx context.Context, ids []int64, o ui.CompareOptions) (*ui.Comparison, error) {
	if s.capacity(ctx, ids) {
		c, err := workbench.CompareCapacity(ctx, s.nb, workbench.CapacityCompareRequest{IDs: ids})
		if err != nil {
			return nil, err
		}
		return windowCapacityComparison(c), nil
	}
	set, err := workbench.CompareStudies(ctx, s.nb, workbench.CompareRequest{IDs: ids, Options: windowCompareOptions(o)})
	if err != nil {
		return nil, err
	}
	return windowComparison(set), nil
}

// windowComparison is what the window shows of a comparison: the CLI's columns and footer.
func windowComparison(set *workbench.ComparisonSet) *ui.Comparison {
	c := &ui.Comparison{Depth: set.Depth, Notes: set.Notes}
	for i, st := range set.Studies {
		role := "new"
		if i == 0 {
			role = "baseline"
		}
		c.Studies = append(c.Studies, fmt.Sprintf("study %d %s (%s), %s", st.ID, st.Name, st.Status, role))
	}
	for _, p := range set.Pairs {
		pair := fmt.Sprintf("%d vs %d", p.New.ID, p.Baseline.ID)
		for _, cc := range p.Cells {
			base, next := workbench.CompareSides(cc)
			c.Cells = append(c.Cells, []string{pair, cc.Label(), base, next, cc.Word})
		}
		for _, n := range p.Notes {
			c.Notes = append(c.Notes, pair+": "+n)
		}
	}
	if len(set.Pairs) > 0 {
		c.Footer = strings.TrimSpace(compareFooter(set.Pairs[0]))
	}
	for _, v := range set.Verdicts {
		c.Verdicts = append(c.Verdicts, v.Line(set.Studies))
	}
	var aa strings.Builder
	for _, p := range set.Pairs {
		if p.AA != nil {
			if aa.Len() > 0 {
				aa.WriteString("\n")
			}
			fmt.Fprintf(&aa, "%d vs %d:\n", p.New.ID, p.Baseline.ID)
			printAA(&aa, p.AA) // the CLI's text
		}
	}
	c.AA = aa.String()
	return c
}

// windowCompareOptions are the window's choices as `study compare` takes them (alpha 0.05).
func windowCompareOptions(o ui.CompareOptions) study.CompareOptions {
	return study.CompareOptions{Alpha: study.DefaultAlpha, Stats: o.Stats, AA: o.AA}
}

func (s compareService) ExportComparison(ctx context.Context, ids []int64, out string, o ui.CompareOptions) (ui.ReceiptExport, error) {
	if s.capacity(ctx, ids) {
		c, files, err := workbench.ExportCapacityComparison(ctx, s.nb, workbench.CapacityCompareRequest{IDs: ids}, out)
		if err != nil {
			return ui.ReceiptExport{}, err
		}
		abs, _ := filepath.Abs(out)
		return ui.ReceiptExport{Summary: fmt.Sprintf("wrote the comparison of %d studies (%d files) to %s; check it with: sparkbench verify %s", len(c.Studies), len(files), abs, abs), Files: files}, nil
	}
	set, files, err := workbench.ExportComparison(ctx, s.nb, workbench.CompareRequest{IDs: ids, Options: windowCompareOptions(o)}, out)
	if err != nil {
		return ui.ReceiptExport{}, err
	}
	abs, _ := filepath.Abs(out)
	return ui.ReceiptExport{Summary: fmt.Sprintf("wrote the comparison of %d studies (%d files) to %s; check it with: sparkbench verify %s", len(set.Studies), len(files), abs, abs), Files: files}, nil
}

var _ ui.FleetLister = compareService{}

// Fleets are the notebook's fleet runs (fleet.List), as `sparkbench fleet list` prints them.
func (s compareService) Fleets(ctx context.Context) ([]ui.FleetChoice, error) {
	all, err := fleet.List(ctx, s.nb)
	if err != nil {
		return nil, err
	}
	out := make([]ui.FleetChoice, 0, len(all))
	for _, f := range all {
		c := ui.FleetChoice{ID: f.ID, Line: strings.TrimPrefix(fleetLine(f), fmt.Sprintf("fleet %q: ", f.ID))}
		for _, m := range f.Complete() {
			c.Members = append(c.Members, m.StudyID)
		}
		out = append(out, c)
	}
	return out, nil
}
