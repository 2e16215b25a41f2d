package main

import (
	"context"
	"fmt"
	"strings"

	"sparkbench/app/overview"
	"sparkbench/app/workbench"
	"sparkbench/store"
	"sparkbench/ui"
)

// overviewService is ui.OverviewService over the notebook: one overview.Service for the
// window's life, so reopening the section reads only the studies that changed.
type overviewService struct{ svc *overview.Service }

var _ ui.OverviewService = overviewService{}

func newOverviewService(nb *store.Notebook) overviewService {
	return overviewService{overview.New(overview.Notebook(nb))}
}

// Defaults are the CLI's: --line 70, --test tg, --deep 8192.
func (s overviewService) Defaults() ui.OverviewOptions {
	return ui.OverviewOptions{Line: overview.DefaultLine, Test: overview.DefaultTest, Deep: overview.DefaultDeep}
}

// ExportOverview writes the overview's receipt (workbench.ExportOverview) to out.
func (s overviewService) ExportOverview(ctx context.Context, o ui.OverviewOptions, machine, out string) error {
	_, _, err := workbench.ExportOverview(ctx, s.svc, overview.Options{Line: o.Line, Test: o.Test, Deep: o.Deep}, machine, out)
	return err
}

func (s overviewService) Open(ctx context.Context, o ui.OverviewOptions) (*ui.OverviewResult, error) {
	ov, err := s.svc.Open(ctx, overview.Options{Line: o.Line, Test: o.Test, Deep: o.Deep})
	if err != nil {
		return nil, err
	}
	return windowOverview(ov), nil
}

// windowOverview is what the window shows of an overview: the CLI's columns, and per row the
// study, plan leg and row reference of each value.
func windowOverview(ov *overview.Overview) *ui.OverviewResult {
	t := ov.Badges
	res := &ui.OverviewResult{Heading: overview.BadgeHeading(t)}
	for _, e := range ov.Studies {
		line := fmt.Sprintf("study %d %q (%s): %d series", e.ID, e.Name, e.Status, e.Series)
		if e.Imported {
			line += ", imported from " + e.ImportedFrom
		}
		if e.Skipped != "" {
			line = fmt.Sprintf("study %d %q (%s): left out: %s", e.ID, e.Name, e.Status, e.Skipped)
		}
		res.Studies = append(res.Studies, line)
	}
	for _, u := range t.Unresolved {
		res.Studies = append(res.Studies, fmt.Sprintf("unresolved: %s (%s) %s, study %d: %s", u.Model, u.File, u.Test, u.Study, u.Reason))
	}
	res.Badges.Header = overview.BadgeColumns
	for _, r := range t.Rows {
		res.Badges.Rows = append(res.Badges.Rows, r.Cells())
		src := fmt.Sprintf("%s (%s, sha256 %s) %s, config %s: d0 from study %d %s %s", r.Model, r.File, r.SHA256, r.Test, r.Config, r.Study, r.D0.Leg, r.D0.Row)
		if r.Deep != nil {
			src += fmt.Sprintf("; deep from %s %s", r.Deep.Leg, r.Deep.Row)
		}
		if r.DeepNote != "" {
			src += " (" + r.DeepNote + ")"
		}
		if len(r.Death.Sources) > 0 {
			src += "; badge death between " + strings.Join(r.Death.Sources, " and ")
		}
		if len(r.OtherStudies) > 0 {
			src += fmt.Sprintf("; also measured in studies %v", r.OtherStudies)
		}
		res.Badges.Sources = append(res.Badges.Sources, src)
	}
	res.Ladder.Header = []string{"architecture", "quant", "backend", "n", "models", "studies", "median", "mean", "min–max"}
	for _, c := range ov.Ladder.Constants {
		res.Ladder.Rows = append(res.Ladder.Rows, []string{c.Architecture, c.Quant, c.Backend, fmt.Sprint(c.N), fmt.Sprint(c.Models), fmt.Sprint(c.Studies),
			fmt.Sprintf("%.4f", c.Median), fmt.Sprintf("%.4f", c.Mean), fmt.Sprintf("%.4f–%.4f", c.Min, c.Max)})
		var ms []string
		for _, m := range c.Members {
			ms = append(ms, fmt.Sprintf("%s (%s) %s %.4f = %.2f t/s of %.2f t/s (%g GB/s over %.0f bytes/token); study %d %s %s",
				m.Model, m.File, m.Test, m.Efficiency, m.D0.TS, m.Ceiling, m.BandwidthGBs, m.ActiveBytes, m.Study, m.D0.Leg, m.D0.Row))
		}
		res.Ladder.Sources = append(res.Ladder.Sources, strings.Join(ms, "\n      "))
	}
	for _, u := range ov.Ladder.Unresolved {
		res.Studies = append(res.Studies, fmt.Sprintf("ladder unresolved: %s (%s) %s, study %d: %s", u.Model, u.File, u.Test, u.Study, u.Reason))
	}
	return res
}
