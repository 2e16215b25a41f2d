package study

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sparkbench/app/textsafe"
)

// The text `sparkbench study show` prints: a throughput study's report, section by section.

func fprintf(w io.Writer, format string, a ...any) { _, _ = fmt.Fprintf(w, format, a...) }

func WriteReport(w io.Writer, r *Report) {
	w, flush := textsafe.Buffered(w)
	defer flush()
	writeStudyHead(w, r)
	writeLegs(w, r)
	writeLaunches(w, r)
	writeRPCSplits(w, r)
	writeResults(w, r)
	writeEnergy(w, r)
	writeAdaptive(w, r.Adaptive)
	writeFigures(w, r)
	writeKVQuality(w, r)
	writeScoreboard(w, r)
	writeRecorded(w, r)
}

// writeKVQuality prints each cheaper KV cache type's speed gain beside its KL divergence from
// an f16 cache ("faster by X%, KLD Y"), when the study has the check.
func writeKVQuality(w io.Writer, r *Report) {
	if len(r.KVQuality) == 0 {
		return
	}
	fprintf(w, "\nKV cache types: speed against quality (KL divergence from an f16 cache)\n")
	for _, q := range r.KVQuality {
		speed := q.SpeedWords()
		if len(speed) == 0 {
			speed = []string{"speed against f16 not measured"}
		}
		gate := ""
		if q.Max != nil {
			gate = fmt.Sprintf("; gate (mean KLD <= %g): %s", *q.Max, q.Gate)
		}
		fprintf(w, "  %s %s: %s; mean KLD %.6f (99%% %.6f, same top p %.2f%%)%s — leg %s, lines %v\n",
			q.Model, q.KV, strings.Join(speed, ", "), q.MeanKLD, q.P99KLD, q.SameTopP*100, gate, q.Leg, q.Lines)
	}
}

// writeStudyHead prints the study line, its plan, halt, legs without results and bandwidth.
func writeStudyHead(w io.Writer, r *Report) {
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

// writeLegs prints the legs table.
func writeLegs(w io.Writer, r *Report) {
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
		if l.Role != RoleLeg {
			label += " [" + l.Role + "]"
		}
		fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", id, label, l.State, l.Class, l.Rows, l.Results, l.Flagged,
			l.Discarded+l.Unmarked, dur, strings.Join(l.Conditions, "; "))
	}
	tw.Flush()
	// Why each leg that ended otherwise than ok ended (a gate's code — device:not_used,
	// cv_above_limit, model:changed — a crash's message), so that the text says what --json says.
	var why []string
	for _, l := range r.Legs {
		if l.Class != "" && l.Class != "ok" && l.Reason != "" {
			why = append(why, fmt.Sprintf("  %s: %s: %s", l.Label, l.Class, l.Reason))
		}
	}
	if len(why) > 0 {
		fprintf(w, "\nwhy legs ended otherwise than ok\n%s\n", strings.Join(why, "\n"))
	}
}

// writeResults prints results by depth (mean ± sd), one row per model, leg repeat, test and configuration.
func writeResults(w io.Writer, r *Report) {
	if len(r.Results) > 0 {
		if r.processMeans() {
			fprintf(w, "\nresults by depth (t/s, the mean of the chunks' means ± sd over the repetitions)\n")
		} else {
			fprintf(w, "\nresults by depth (t/s, mean ± sd over the repetitions)\n")
		}
		var depths []int64
		type key struct{ model, leg, test, config string }
		cells := map[key]map[int64]ReportCell{}
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
				cells[k] = map[int64]ReportCell{}
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
		writeUnit(w, r.Results)
	}
	if len(r.CountedFlags) > 0 {
		fprintf(w, "\ncounted with a CV flag (the plan's gates.on_cv is count: a process above its gate is anomalous, not missing)\n")
		for _, f := range r.CountedFlags {
			fprintf(w, "  %s\n", f)
		}
	}
}

// writeFigures prints the derived figures with their sources.
func writeFigures(w io.Writer, r *Report) {
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
			case f.Figure == FigureSlope || f.Figure == FigureContamination:
				val = fmt.Sprintf("%+.1f%%", *f.Value*100) // a change: signed
			case f.Figure == FigureEfficiency || f.Figure == FigureRepeatabilityCV || f.Figure == FigureCV:
				val = fmt.Sprintf("%.1f%%", *f.Value*100) // a fraction of something: unsigned
			case f.Figure == FigureDeviceRatio:
				val = fmt.Sprintf("%.3f×", *f.Value) // one device's rate over another's
			default:
				val = fmt.Sprintf("%.4g", *f.Value)
			}
			fprintf(tw, "  %s\t%s\t%s\n", f.Label, val, strings.Join(f.Sources, ", "))
		}
		tw.Flush()
	}
}

// writeScoreboard prints the prediction scoreboard, with deviations and problems under their prediction.
func writeScoreboard(w io.Writer, r *Report) {
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
		if sc.Verdict.Problem != "" && sc.Verdict.Outcome != Pending {
			fprintf(tw, "  \t\t%s\t\t\t\t\n", sc.Verdict.Problem)
		}
	}
	tw.Flush()
	for _, sc := range r.Scoreboard {
		if sc.Processes != nil {
			fprintf(w, "  %s %s\n", sc.Prediction, sc.Processes.Words)
		}
	}
}

// writeRecorded prints the amendments, deviations and findings, when there are any.
func writeRecorded(w io.Writer, r *Report) {
	if len(r.Amendments) > 0 {
		fprintf(w, "\namendments (accepted before the legs they touch ran)\n")
		for _, a := range r.Amendments {
			var ch AmendmentChange
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

// processMeans reports whether the results' means are adaptive cells' means of their process
// means (a plan whose rule is over processes).
func (r *Report) processMeans() bool {
	if r.Adaptive == nil {
		return false
	}
	for _, l := range r.Adaptive.Legs {
		for _, c := range l.Cells {
			if c.Process != nil {
				return true
			}
		}
	}
	return false
}

// writeUnit says what the results' ± are and states each cell at the process level: ± is
// the spread of the repetitions (of one process, or an adaptive cell's chunks together),
// never the spread between processes; the intervals are over processes.
func writeUnit(w io.Writer, cells []ReportCell) {
	minN, maxN, minM, maxM := 0, 0, 0, 0
	for i, c := range cells {
		n := 1
		if c.Unit != nil {
			n = c.Unit.N
		}
		if i == 0 {
			minN, minM, maxM = n, c.Reps, c.Reps
		}
		minN, maxN, minM, maxM = min(minN, n), max(maxN, n), min(minM, c.Reps), max(maxM, c.Reps)
	}
	span := func(a, b int) string {
		if a == b {
			return fmt.Sprint(a)
		}
		return fmt.Sprintf("%d–%d", a, b)
	}
	reps := span(minM, maxM)
	if maxN == 1 {
		fprintf(w, "the unit is the llama-bench process: each cell above is one process of %s repetitions, and ± is the spread within it,\n"+
			"not between processes (a second run of the cell can differ by more; study compare and the planner read processes)\n", reps)
	} else {
		fprintf(w, "the unit is the llama-bench process: each cell above ran as %s processes (its chunks), %s repetitions in all, and ± is\n"+
			"the spread of those repetitions together; the intervals below are over the processes\n", span(minN, maxN), reps)
	}
	fprintf(w, "processes: %s\n", UnitLine(cells))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cells {
		u := c.Unit
		if u == nil {
			continue
		}
		spread := fmt.Sprintf("within %.2f%%", u.WithinCV*100)
		if u.BetweenCV != nil {
			spread = fmt.Sprintf("between %.2f%%, %s", *u.BetweenCV*100, spread)
		}
		ci := ""
		if u.Lo != nil {
			ci = fmt.Sprintf(" [%.2f, %.2f]", *u.Lo, *u.Hi)
		}
		leg := ""
		if _, rep, ok := strings.Cut(c.Leg, "#"); ok {
			leg = " #" + rep
		}
		fprintf(tw, "  %s%s %s d%d\t%.2f t/s\t%s%s\t%s\n", c.Model, leg, c.Test, c.Depth, u.Mean, u.Words(), ci, spread)
	}
	tw.Flush()
}

// UnitLine states the results' model in one line (docs/adaptive.md, "Processes and
// repetitions"): "95% intervals over 6 processes of 3 repetitions; between-process spread
// 1.3%, within 0.2% (medians over 4 cells)", or, where every cell is one process, "one
// process of 5 repetitions per cell: point estimates, no intervals; within-process spread 0.3%
// (median over 4 cells); the spread between processes is not measured".
func UnitLine(cells []ReportCell) string {
	var ns, ms []int
	var between, within []float64
	counted, stopped := 0, false
	for _, c := range cells {
		u := c.Unit
		if u == nil {
			continue
		}
		counted++
		ns = append(ns, u.N)
		lo, hi, _ := strings.Cut(u.M, "–")
		a, _ := strconv.Atoi(lo)
		ms = append(ms, a)
		if hi != "" {
			b, _ := strconv.Atoi(hi)
			ms = append(ms, b)
		}
		within = append(within, u.WithinCV)
		if u.BetweenCV != nil {
			between = append(between, *u.BetweenCV)
		}
		stopped = stopped || u.Stopped
	}
	if counted == 0 {
		return "no result cells"
	}
	span := func(xs []int) string {
		a, b := slices.Min(xs), slices.Max(xs)
		if a == b {
			return fmt.Sprint(a)
		}
		return fmt.Sprintf("%d–%d", a, b)
	}
	med := func(xs []float64) string {
		ys := slices.Clone(xs)
		slices.Sort(ys)
		m := ys[len(ys)/2]
		if len(ys)%2 == 0 {
			m = (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
		}
		return fmt.Sprintf("%.2f%%", m*100)
	}
	over := fmt.Sprintf("median over %d cells", counted)
	if counted == 1 {
		over = "one cell"
	}
	if slices.Max(ns) == 1 {
		return fmt.Sprintf("one process of %s repetitions per cell: point estimates, no intervals; within-process spread %s (%s); the spread between processes is not measured",
			span(ms), med(within), over)
	}
	line := fmt.Sprintf("95%% intervals over %s processes of %s repetitions", span(ns), span(ms))
	if stopped {
		line += " (one degree of freedom charged for the adaptive stop)"
	}
	if len(between) > 0 {
		line += fmt.Sprintf("; between-process spread %s, within %s (%s)", med(between), med(within), over)
	} else {
		line += fmt.Sprintf("; within-process spread %s (%s)", med(within), over)
	}
	if slices.Min(ns) == 1 {
		line += "; a cell of one process is a point estimate, no interval"
	}
	return line
}
