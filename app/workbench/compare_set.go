package workbench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sparkbench/app/charts"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/plots"
	"sparkbench/store"
)

// A comparison of two or more throughput studies, as the window shows it and exports it: each
// study against the first (the baseline) through CompareThroughputWith — the call `study
// compare` makes, so the cells, deltas, intervals and ~ are the CLI's —, the depth curves of
// every study overlaid, and one verdict line per prediction they share.

// ComparisonSchema names a comparison's JSON (comparison.json in its receipt).
const ComparisonSchema = "sparkbench.comparison/v1"

// ComparisonSet is the comparison of Studies[1:] with Studies[0].
type ComparisonSet struct {
	Schema  string                `json:"schema"`
	Studies []study.ComparedStudy `json:"studies"`
	// Pairs are CompareThroughputWith(Studies[0], Studies[i]) for i = 1, 2, …
	Pairs []*study.StudyComparison `json:"pairs"`
	// Verdicts are the predictions every study registered under the same ID about the same
	// figure, each study's verdict side by side.
	Verdicts []SharedVerdict `json:"verdicts"`
	// Depth overlays the studies' depth curves of Metric (absent when none has results).
	Metric string            `json:"metric"`
	Depth  *plots.DepthChart `json:"depth_chart,omitempty"`
	Notes  []string          `json:"notes"`
	// Options are the statistics asked for and Sides every study's result rows, in Studies
	// order: Pairs are study.CompareSides(Sides[0], Sides[i], Options), which verify re-runs.
	// Both are absent in receipts made before comparisons carried their rows (checked for
	// self-consistency only).
	Options *ComparisonOptions  `json:"options,omitempty"`
	Sides   []study.CompareSide `json:"sides,omitempty"`
}

// ComparisonOptions are the statistics a comparison was asked for (study.CompareOptions).
type ComparisonOptions struct {
	Alpha float64 `json:"alpha"`
	Stats string  `json:"stats"`
	AA    bool    `json:"aa"`
	// Rules is the comparison rules' revision: CompareRulesProcess since process-level
	// statistics (auto then means them); absent in receipts made before, whose auto meant
	// benchmath for adaptive studies, else Welch: each is re-derived under its own.
	Rules int `json:"rules,omitempty"`
}

// CompareRulesProcess is the comparison rules' revision in which auto means process-level
// statistics (study.StatsProcess).
const CompareRulesProcess = 2

// CompareRulesStopped is the comparison rules' revision in which a cell of a study with
// adaptive repetitions compares the first processes of each side at equal counts
// (analysis.CompareStopped): the adaptive rule's stop is data-dependent.
const CompareRulesStopped = 3

func (o *ComparisonOptions) compare() study.CompareOptions {
	return study.CompareOptions{Alpha: o.Alpha, Stats: o.Stats, AA: o.AA, OldAuto: o.Rules < CompareRulesProcess,
		OldAllProcesses: o.Rules < CompareRulesStopped}
}

// SharedVerdict is one shared prediction: its ID, claim and each study's verdict word.
type SharedVerdict struct {
	Prediction string   `json:"prediction"`
	Text       string   `json:"text"`
	About      string   `json:"about"`
	Words      []string `json:"words"` // in Studies order
	// Agree says every study reached the same verdict word.
	Agree bool `json:"agree"`
}

// Line is the verdict line people read: "P1 (tg @ d0 of tiny): study 1 HIT · study 2 HIT — agree".
func (v SharedVerdict) Line(studies []study.ComparedStudy) string {
	parts := make([]string, len(v.Words))
	for i, w := range v.Words {
		parts[i] = fmt.Sprintf("study %d %s", studies[i].ID, w)
	}
	agree := "they differ"
	if v.Agree {
		agree = "they agree"
	}
	return fmt.Sprintf("%s (%s): %s — %s", v.Prediction, v.About, strings.Join(parts, " · "), agree)
}

// CompareRequest names the studies (the first is the baseline), the statistics and the
// metric whose depth curves are overlaid ("" is tg).
type CompareRequest struct {
	IDs     []int64
	Options study.CompareOptions
	Metric  string
}

// CompareStudies compares req.IDs[1:] with req.IDs[0]. Fewer than two studies, a study named
// twice, or a pair that shares no cell (study.ErrNotComparable, with the CLI's reason and the
// pair named) is refused.
func CompareStudies(ctx context.Context, nb *store.Notebook, req CompareRequest) (*ComparisonSet, error) {
	if len(req.IDs) < 2 {
		return nil, refused("a comparison needs two or more studies (the first is the baseline); %d chosen", len(req.IDs))
	}
	seen := map[int64]bool{}
	for _, id := range req.IDs {
		if seen[id] {
			return nil, refused("study %d is chosen twice: a study compared with itself is the A/A control (sparkbench study compare --aa %d)", id, id)
		}
		seen[id] = true
	}
	if req.Metric == "" {
		req.Metric = "tg"
	}
	if err := study.CheckStats(req.Options.Stats); err != nil {
		return nil, err
	}
	set := &ComparisonSet{Schema: ComparisonSchema, Metric: req.Metric, Verdicts: []SharedVerdict{}, Notes: []string{},
		Options: &ComparisonOptions{Alpha: req.Options.Alpha, Stats: req.Options.Stats, AA: req.Options.AA, Rules: CompareRulesStopped}}
	for _, id := range req.IDs {
		side, err := study.LoadCompareSide(ctx, store.StudyRecorder{N: nb}, id)
		if err != nil {
			return nil, err
		}
		set.Sides = append(set.Sides, side)
	}
	for i, id := range req.IDs[1:] {
		c, err := study.CompareSides(set.Sides[0], set.Sides[i+1], req.Options)
		if err != nil {
			if errors.Is(err, study.ErrNotComparable) {
				return nil, fmt.Errorf("study %d against study %d: %w", id, req.IDs[0], err)
			}
			return nil, err
		}
		if len(set.Studies) == 0 {
			set.Studies = append(set.Studies, c.Baseline)
		}
		set.Studies = append(set.Studies, c.New)
		set.Pairs = append(set.Pairs, c)
	}
	reports := make([]*study.Report, len(req.IDs))
	for i, id := range req.IDs {
		r, err := ShowThroughput(ctx, nb, id)
		if err != nil {
			return nil, err
		}
		reports[i] = r
	}
	set.Verdicts = sharedVerdicts(reports)
	if ch, err := charts.CompareDepth(reports, req.Metric); err == nil {
		set.Depth = ch
	} else {
		set.Notes = append(set.Notes, "no overlaid depth chart: "+err.Error())
	}
	return set, nil
}

// sharedVerdicts lists the predictions that every report registered with the same ID about
// the same figure, in the first report's order.
func sharedVerdicts(reports []*study.Report) []SharedVerdict {
	out := []SharedVerdict{}
	for _, s := range reports[0].Scoreboard {
		v := SharedVerdict{Prediction: s.Prediction, Text: s.Text, About: s.About, Words: []string{s.Word}, Agree: true}
		for _, r := range reports[1:] {
			found := false
			for _, o := range r.Scoreboard {
				if o.Prediction == s.Prediction && o.About == s.About {
					v.Words = append(v.Words, o.Word)
					v.Agree = v.Agree && o.Word == s.Word
					found = true
					break
				}
			}
			if !found {
				v.Words = nil
				break
			}
		}
		if v.Words != nil {
			out = append(out, v)
		}
	}
	return out
}

// ExportComparison compares the studies and writes the comparison's receipt to out (a new or
// empty folder, or FILE.tar.gz); it returns the bundle's files.
func ExportComparison(ctx context.Context, nb *store.Notebook, req CompareRequest, out string) (*ComparisonSet, receipt.Files, error) {
	if strings.TrimSpace(out) == "" {
		return nil, nil, refused("name the comparison receipt's folder or .tar.gz")
	}
	set, err := CompareStudies(ctx, nb, req)
	if err != nil {
		return nil, nil, err
	}
	files, err := ComparisonFiles(set)
	if err == nil {
		err = writeDerived(ctx, out, files)
	}
	if err != nil {
		return nil, nil, err
	}
	return set, files, nil
}
