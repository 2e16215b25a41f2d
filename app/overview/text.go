package overview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteBadges prints the badge table as `sparkbench overview badges` does.
func WriteBadges(w io.Writer, ov *Overview) {
	t := ov.Badges
	fmt.Fprintf(w, "%s\n", BadgeHeading(t))
	writeStudies(w, ov.Studies)
	if len(t.Rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\n%s\n", strings.Join(BadgeColumns, "\t"))
		for _, r := range t.Rows {
			fmt.Fprintf(tw, "%s\n", strings.Join(r.Cells(), "\t"))
		}
		tw.Flush()
		fmt.Fprintf(w, "\nrows:\n")
		for _, r := range t.Rows {
			fmt.Fprintf(w, "  %s (%s, sha256 %s…) %s, config %s: d0 from study %d %s %s", r.Model, r.File, short(r.SHA256), r.Test, r.Config, r.Study, r.D0.Leg, r.D0.Row)
			if r.Deep != nil {
				fmt.Fprintf(w, "; deep from %s %s", r.Deep.Leg, r.Deep.Row)
			}
			if r.DeepNote != "" {
				fmt.Fprintf(w, " (%s)", r.DeepNote)
			}
			if len(r.OtherStudies) > 0 {
				fmt.Fprintf(w, "; also measured in studies %s", joinIDs(r.OtherStudies))
			}
			fmt.Fprintln(w)
		}
	}
	writeUnresolved(w, t.Unresolved)
}

// BadgeHeading is the badge table's first line: the line, the test and the depth the
// both-depths convention asks. A table made before DeepExact (an older overview receipt's)
// took the nearest measured depth, and its heading says so.
func BadgeHeading(t BadgeTable) string {
	if t.DeepRule != DeepExact {
		return fmt.Sprintf("badge table: %s reaching %g t/s; \"d0 only\" at depth 0, \"both depths\" at depth 0 and at %d (the nearest measured depth)", t.Test, t.Line, t.Deep)
	}
	return fmt.Sprintf("badge table: %s reaching %g t/s; \"d0 only\" at depth 0, \"both depths\" at depth 0 and at depth %d itself (undecided where %d was not measured: the nearest measured depth is named, never used)", t.Test, t.Line, t.Deep, t.Deep)
}

// WriteLadder prints the constants ladder as `sparkbench overview constants` does.
func WriteLadder(w io.Writer, ov *Overview) {
	l := ov.Ladder
	fmt.Fprintf(w, "constants ladder: %s at depth 0 over the bandwidth ceiling (%s bytes per token), by architecture, quant and backend\n", l.Test, strings.ReplaceAll(l.Convention, "_", "-"))
	writeStudies(w, ov.Studies)
	if len(l.Constants) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "\narchitecture\tquant\tbackend\tn\tmodels\tstudies\tmedian\tmean\tmin–max\n")
		for _, c := range l.Constants {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f–%.4f\n", c.Architecture, c.Quant, c.Backend, c.N, c.Models, c.Studies, c.Median, c.Mean, c.Min, c.Max)
		}
		tw.Flush()
		fmt.Fprintf(w, "\nmembers:\n")
		for _, c := range l.Constants {
			for _, m := range c.Members {
				imp := ""
				if m.Imported {
					imp = " (imported)"
				}
				fmt.Fprintf(w, "  %s/%s/%s: %s (%s) %s %.4f = %.2f t/s of %.2f t/s (%g GB/s over %.0f bytes/token); study %d%s %s %s\n",
					c.Architecture, c.Quant, c.Backend, m.Model, m.File, m.Test, m.Efficiency, m.D0.TS, m.Ceiling, m.BandwidthGBs, m.ActiveBytes, m.Study, imp, m.D0.Leg, m.D0.Row)
			}
		}
	}
	writeUnresolved(w, l.Unresolved)
}

func writeStudies(w io.Writer, es []StudyEntry) {
	read, imported := 0, 0
	var skipped []string
	for _, e := range es {
		switch {
		case e.Skipped != "":
			skipped = append(skipped, fmt.Sprintf("  study %d %q: %s", e.ID, e.Name, e.Skipped))
		default:
			read++
			if e.Imported {
				imported++
			}
		}
	}
	fmt.Fprintf(w, "from %d throughput studies (%d imported)\n", read, imported)
	if len(skipped) > 0 {
		fmt.Fprintf(w, "left out:\n%s\n", strings.Join(skipped, "\n"))
	}
}

func writeUnresolved(w io.Writer, us []Unresolved) {
	if len(us) == 0 {
		return
	}
	fmt.Fprintf(w, "\nunresolved:\n")
	for _, u := range us {
		fmt.Fprintf(w, "  %s (%s, sha256 %s…) %s, study %d: %s\n", u.Model, u.File, short(u.SHA256), u.Test, u.Study, u.Reason)
	}
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// BadgeColumns are the badge table's columns, as the CLI and the window show them.
var BadgeColumns = []string{"model", "test", "backend", "study", "d0 t/s", "deep t/s", "d0 only", "both depths", "badge death"}

// Cells is the row's text under BadgeColumns.
func (r BadgeRow) Cells() []string {
	deep := "-"
	if r.Deep != nil {
		deep = fmt.Sprintf("%.2f @%d", r.Deep.TS, r.Deep.Depth)
	}
	st := fmt.Sprint(r.Study)
	if r.Imported {
		st += " (imported)"
	}
	return []string{r.Model, r.Test, r.Backend, st, fmt.Sprintf("%.2f", r.D0.TS), deep, r.D0Only.Word, r.BothDepths.Word, r.Death.Text}
}
