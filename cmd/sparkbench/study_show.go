package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sparkbench/app/analysis"
	"sparkbench/app/study"
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

// studyCompare: sparkbench study compare BASELINE NEW [--alpha A] [--json] [--notebook P]. It
// compares every cell the two studies measured on the same model file (same SHA-256), test,
// depth and configuration, the benchstat way. Exit 0 compared; 2 refused (different model
// files, no shared cell, fewer than 3 repetitions in a shared cell) or bad input; 1 otherwise.
func studyCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("study compare", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, "print the comparison as JSON (every cell with the stored rows it came from)")
	alpha := fs.Float64("alpha", study.DefaultAlpha, "significance level: a delta with p >= alpha prints as ~")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 2 {
		fprintf(stderr, "sparkbench study compare: want two study ids or names: the baseline, then the new study\n")
		return 2
	}
	if !(*alpha > 0 && *alpha < 1) {
		fprintf(stderr, "sparkbench study compare: --alpha %g: want a level in (0, 1), e.g. 0.05\n", *alpha)
		return 2
	}
	nb, ctx, baseID, done, code := openShown("study compare", *nbFlag, pos[0], findStudy, stderr)
	if nb == nil {
		return code
	}
	defer done()
	newID, err := findStudy(ctx, nb, pos[1])
	if err != nil {
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 2
	}
	c, err := study.CompareStudies(ctx, store.StudyRecorder{N: nb}, baseID, newID, *alpha)
	switch {
	case errors.Is(err, study.ErrNotComparable):
		fprintf(stderr, "sparkbench study compare: refused: %s\n", strings.TrimSuffix(err.Error(), ": "+study.ErrNotComparable.Error()))
		return 2
	case err != nil:
		fprintf(stderr, "sparkbench study compare: %v\n", err)
		return 1
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
	ci := func(s analysis.Summary) string { return fmt.Sprintf("%.2f ± %.2f", s.Mean, s.Hi-s.Mean) }
	for _, cc := range c.Cells {
		model := cc.Model
		if cc.NewModel != cc.Model {
			model += "=" + cc.NewModel
		}
		fprintf(tw, "  %s\t%s\td%d\t", model, cc.Test, cc.Depth)
		if len(configs) > 1 {
			fprintf(tw, "%s\t", cc.Config)
		}
		fprintf(tw, "%s\t%s\t%s\n", ci(cc.Baseline), ci(cc.New), cc.Word)
	}
	tw.Flush()
	fprintf(w, "\n± is the t-based 95%% interval of the mean over the repetitions; delta is new/baseline - 1 with\n"+
		"Welch's two-sided t-test: ~ when p >= %g (no significant difference)\n", c.Alpha)
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
}

func printReport(w io.Writer, r *study.Report) {
	w, flush := escaped(w)
	defer flush()
	printStudyHead(w, r)
	printLegs(w, r)
	printResults(w, r)
	printFigures(w, r)
	printScoreboard(w, r)
	printRecorded(w, r)
}

// printStudyHead prints the study line, its plan, halt, legs without results and bandwidth.
func printStudyHead(w io.Writer, r *study.Report) {
	s := r.Study
	fprintf(w, "study %d %q: %s, %d/%d legs finished\nplan sha256 %s, registered %s\n", s.ID, s.Name, s.Status, s.LegsDone, s.LegsTotal,
		s.PlanSHA256, s.RegisteredAt.Local().Format("2006-01-02 15:04:05"))
	if s.Halted != "" {
		fprintf(w, "halted: %s\n", s.Halted)
	}
	for _, leg := range s.Incomplete {
		fprintf(w, "no results: %s\n", leg)
	}
	if r.BandwidthGBs != nil {
		fprintf(w, "memory bandwidth %.1f GB/s (%s)\n", *r.BandwidthGBs, r.Bandwidth)
	}
}

// printLegs prints the legs table.
func printLegs(w io.Writer, r *study.Report) {
	fprintf(w, "\nlegs\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  id\tlabel\tstate\tclass\trows\tresults\tflagged\tdiscarded\tduration\tconditions\n")
	for _, l := range r.Legs {
		id, dur := "-", "-"
		if l.ID != 0 {
			id = strconv.FormatInt(l.ID, 10)
		}
		if l.Duration > 0 {
			dur = l.Duration.Round(time.Millisecond).String()
		}
		label := l.Label
		if l.Role != study.RoleLeg {
			label += " [" + l.Role + "]"
		}
		fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", id, label, l.State, l.Class, l.Rows, l.Results, l.Flagged,
			l.Discarded+l.Unmarked, dur, strings.Join(l.Conditions, "; "))
	}
	tw.Flush()
}

// printResults prints results by depth (mean ± sd), one row per model, leg repeat, test and configuration.
func printResults(w io.Writer, r *study.Report) {
	if len(r.Results) > 0 {
		fprintf(w, "\nresults by depth (t/s, mean ± sd over the repetitions)\n")
		var depths []int64
		type key struct{ model, leg, test, config string }
		cells := map[key]map[int64]study.ReportCell{}
		var order []key
		for _, c := range r.Results {
			if !slices.Contains(depths, c.Depth) {
				depths = append(depths, c.Depth)
			}
			leg := ""
			if _, rep, ok := strings.Cut(c.Leg, "#"); ok {
				leg = "#" + rep
			}
			k := key{c.Model, leg, c.Test, c.Config}
			if cells[k] == nil {
				cells[k] = map[int64]study.ReportCell{}
				order = append(order, k)
			}
			cells[k][c.Depth] = c
		}
		slices.Sort(depths)
		// a model's test measured in several configurations (a device, ubatch or ngl sweep)
		// names each row's configuration; a study with one configuration prints none
		configs := map[key]int{}
		for _, k := range order {
			configs[key{k.model, k.leg, k.test, ""}]++
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fprintf(tw, "  model\ttest")
		for _, d := range depths {
			fprintf(tw, "\td%d", d)
		}
		fprintf(tw, "\n")
		for _, k := range order {
			test := k.test
			if configs[key{k.model, k.leg, k.test, ""}] > 1 {
				test += " [" + k.config + "]"
			}
			fprintf(tw, "  %s%s\t%s", k.model, k.leg, test)
			for _, d := range depths {
				if c, ok := cells[k][d]; ok {
					fprintf(tw, "\t%.2f ± %.2f", c.Mean, c.SD)
				} else {
					fprintf(tw, "\t-")
				}
			}
			fprintf(tw, "\n")
		}
		tw.Flush()
	}
}

// printFigures prints the derived figures with their sources.
func printFigures(w io.Writer, r *study.Report) {
	if len(r.Figures) > 0 {
		fprintf(w, "\nderived figures\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range r.Figures {
			val := "-"
			switch {
			case f.Problem != "":
				val = "(" + f.Problem + ")"
			case f.Value == nil:
				val = f.Detail
			case f.Figure == study.FigureSlope || f.Figure == study.FigureContamination:
				val = fmt.Sprintf("%+.1f%%", *f.Value*100) // a change: signed
			case f.Figure == study.FigureEfficiency || f.Figure == study.FigureRepeatabilityCV || f.Figure == study.FigureCV:
				val = fmt.Sprintf("%.1f%%", *f.Value*100) // a fraction of something: unsigned
			case f.Figure == study.FigureDeviceRatio:
				val = fmt.Sprintf("%.3f×", *f.Value) // one device's rate over another's
			default:
				val = fmt.Sprintf("%.4g", *f.Value)
			}
			fprintf(tw, "  %s\t%s\t%s\n", f.Label, val, strings.Join(f.Sources, ", "))
		}
		tw.Flush()
	}
}

// printScoreboard prints the prediction scoreboard, with deviations and problems under their prediction.
func printScoreboard(w io.Writer, r *study.Report) {
	fprintf(w, "\nprediction scoreboard\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  id\tkind\tabout\texpected\tobserved\tverdict\thuman\n")
	for _, sc := range r.Scoreboard {
		obs := "-"
		if v := sc.Verdict.Value; v != nil {
			obs = fmt.Sprintf("%.4g", *v)
		}
		human := "-"
		if h := sc.Human; h != nil {
			human = h.Outcome + ": " + h.Rationale
		}
		word := sc.Word
		if sc.Amended {
			word += " (amended)"
		}
		fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", sc.Prediction, sc.Kind, sc.About, sc.Expected, obs, word, human)
		for _, d := range sc.Deviations {
			fprintf(tw, "  \t\tdeviation: %s\t\t\t%s\t(%s)\n", d.Change, d.Word, d.Reason)
		}
		if sc.Verdict.Problem != "" && sc.Verdict.Outcome != study.Pending {
			fprintf(tw, "  \t\t%s\t\t\t\t\n", sc.Verdict.Problem)
		}
	}
	tw.Flush()
}

// printRecorded prints the amendments, deviations and findings, when there are any.
func printRecorded(w io.Writer, r *study.Report) {
	if len(r.Amendments) > 0 {
		fprintf(w, "\namendments (accepted before the legs they touch ran)\n")
		for _, a := range r.Amendments {
			var ch study.AmendmentChange
			_ = json.Unmarshal(a.Change, &ch)
			fprintf(w, "  %s %s: %s → %s; reason: %s\n", a.At.Local().Format("2006-01-02 15:04"), a.Target, ch.Before.Expectation(), ch.After.Expectation(), a.Reason)
		}
	}
	if len(r.Deviations) > 0 {
		fprintf(w, "\ndeviations (recorded after legs ran; never the verdict of record)\n")
		for _, d := range r.Deviations {
			fprintf(w, "  %s DEVIATION: %s\n", d.At.Local().Format("2006-01-02 15:04"), d.Description)
		}
	}
	if len(r.Findings) > 0 {
		fprintf(w, "\nfindings\n")
		for _, f := range r.Findings {
			var ev []string
			if len(f.Legs) > 0 {
				ev = append(ev, "legs "+strings.Join(f.Legs, ", "))
			}
			if len(f.Predictions) > 0 {
				ev = append(ev, "predictions "+strings.Join(f.Predictions, ", "))
			}
			suffix := ""
			if len(ev) > 0 {
				suffix = " (" + strings.Join(ev, "; ") + ")"
			}
			fprintf(w, "  %s %s%s\n", f.Label, f.Text, suffix)
		}
	}
}
