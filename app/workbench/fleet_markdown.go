package workbench

import (
	"fmt"
	"strings"

	"sparkbench/plots"
)

// FleetMarkdown is the fleet receipt's text, made from fleet.json alone: the fleet, its hosts
// with what each ran on, the same cell of every host side by side (each host ÷ the baseline
// host), one chart per figure, the constants ladder by host, and each member's journal
// anchors.
func FleetMarkdown(r *FleetReceipt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fleet receipt: %s\n\n", mdCell(r.Name))
	fmt.Fprintf(&b, "Fleet `%s`, started `%s`: one registered plan (the plan file's SHA-256 `%s`) run on %d hosts, one study per host. "+
		"The complete members are compared; ratios are each host's mean ÷ the baseline host's (`%s`).\n\n",
		r.Fleet, r.Start, r.PlanSHA256, len(r.Hosts), r.Baseline)
	writeFleetHosts(&b, r)
	writeFleetCells(&b, r)
	b.WriteString("\n## Figures\n\n")
	if len(r.Figures) == 0 {
		b.WriteString("No figure: the compared hosts have no result cell.\n")
	}
	for _, f := range r.Figures {
		fmt.Fprintf(&b, "### %s of %s%s\n\n![%s of %s against depth, one series per host](%s)\n\n", f.Test, mdCell(f.Model), configSuffix(f.Config), f.Test, mdCell(f.Model), f.File)
	}
	writeFleetLadder(&b, r)
	writeFleetProvenance(&b, r)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n- %s\n", mdCell(n))
	}
	return b.String()
}

func configSuffix(c string) string {
	if c == "" {
		return ""
	}
	return " (" + mdCell(c) + ")"
}

func writeFleetHosts(b *strings.Builder, r *FleetReceipt) {
	b.WriteString("## Hosts\n\n| host | study | status | CPU | devices | llama.cpp | bandwidth |\n|---|---|---|---|---|---|---|\n")
	for _, h := range r.Hosts {
		cpu := orNotRecorded(h.CPU)
		if h.Cores > 0 {
			cpu = fmt.Sprintf("%s (%d cores)", cpu, h.Cores)
		}
		if h.Machines > 1 {
			cpu += fmt.Sprintf("; its legs name %d machine records, the first shown", h.Machines)
		}
		build := orNotRecorded(h.LlamaCpp)
		if h.Commit != "" {
			build = fmt.Sprintf("%s (commit `%s`)", build, h.Commit)
		}
		bw := "none: no bandwidth figure"
		switch {
		case !h.Compared:
			bw = "—"
		case h.BandwidthGBs != nil:
			bw = fmt.Sprintf("%g GB/s (%s)", *h.BandwidthGBs, h.Bandwidth)
		}
		status := h.Status
		if !h.Compared {
			status += " (not compared)"
		}
		fmt.Fprintf(b, "| %s | %d %s | %s | %s | %s | %s | %s |\n", mdCell(h.Host), h.Study, mdCell(h.Name), status,
			mdCell(cpu), mdCell(orNotRecorded(h.Devices)), mdCell(build), bw)
	}
}

func orNotRecorded(s string) string {
	if strings.TrimSpace(s) == "" {
		return "not recorded"
	}
	return s
}

func writeFleetCells(b *strings.Builder, r *FleetReceipt) {
	iv := string(r.Interval)
	if r.Interval == plots.IntervalCI95 {
		iv = "95% t-interval"
	}
	fmt.Fprintf(b, "\n## The same cell on every host\n\nt/s: the mean ± the half-width of its %s over the repetitions (one repetition: ± its SD).\n\n", iv)
	if len(r.Cells) == 0 {
		b.WriteString("No result cell on the compared hosts.\n")
		return
	}
	hosts := r.Cells[0].Values
	b.WriteString("| model | test | depth |")
	sep := "|---|---|---|"
	for i, v := range hosts {
		fmt.Fprintf(b, " %s t/s |", mdCell(v.Host))
		sep += "---|"
		if i > 0 {
			fmt.Fprintf(b, " %s ÷ %s |", mdCell(v.Host), mdCell(r.Baseline))
			sep += "---|"
		}
	}
	b.WriteString("\n" + sep + "\n")
	for _, c := range r.Cells {
		fmt.Fprintf(b, "| %s%s | %s | %d |", mdCell(c.Model), configSuffix(c.Config), c.Test, c.Depth)
		for i, v := range c.Values {
			if v.Present {
				fmt.Fprintf(b, " %.2f ± %.2f |", v.Mean, v.Half)
			} else {
				b.WriteString(" — |")
			}
			if i > 0 {
				if v.Ratio != nil {
					fmt.Fprintf(b, " %.3f |", *v.Ratio)
				} else {
					b.WriteString(" — |")
				}
			}
		}
		b.WriteString("\n")
	}
}

func writeFleetLadder(b *strings.Builder, r *FleetReceipt) {
	l := r.Ladder
	fmt.Fprintf(b, "## Constants ladder by host\n\n%s at depth 0 over the bandwidth ceiling (%s bytes per token), by architecture, quant, backend and host: the mean efficiency (n, min–max). "+
		"A host without a bandwidth figure has none here, and its cell says so.\n\n", l.Test, strings.ReplaceAll(l.Convention, "_", "-"))
	if len(l.Rows) == 0 {
		b.WriteString("No group: no compared host has a result of the test at depth 0 with a model header read.\n")
	} else {
		b.WriteString("| architecture | quant | backend |")
		sep := "|---|---|---|"
		for _, h := range l.Rows[0].Hosts {
			fmt.Fprintf(b, " %s |", mdCell(h.Host))
			sep += "---|"
		}
		b.WriteString("\n" + sep + "\n")
		for _, row := range l.Rows {
			fmt.Fprintf(b, "| %s | %s | %s |", mdCell(row.Architecture), mdCell(row.Quant), mdCell(row.Backend))
			for _, h := range row.Hosts {
				if c := h.Constant; c != nil {
					fmt.Fprintf(b, " %.4f (n=%d, %.4f–%.4f) |", c.Mean, c.N, c.Min, c.Max)
				} else {
					fmt.Fprintf(b, " %s |", mdCell(h.Missing))
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\nMembers:\n\n")
		for _, row := range l.Rows {
			for _, h := range row.Hosts {
				if h.Constant == nil {
					continue
				}
				for _, m := range h.Constant.Members {
					fmt.Fprintf(b, "- %s/%s/%s on %s: %s %s %.4f = %.2f t/s of %.2f t/s (%g GB/s over %.0f bytes/token); study %d `%s` `%s`\n",
						mdCell(row.Architecture), mdCell(row.Quant), mdCell(row.Backend), mdCell(h.Host), mdCell(m.Model), m.Test,
						m.Efficiency, m.D0.TS, m.Ceiling, m.BandwidthGBs, m.ActiveBytes, m.Study, m.D0.Leg, m.D0.Row)
				}
			}
		}
	}
	for _, u := range l.Unresolved {
		fmt.Fprintf(b, "\n- unresolved on %s: %s (%s) %s, study %d: %s", mdCell(u.Host), mdCell(u.Model), mdCell(u.File), u.Test, u.Study, mdCell(u.Reason))
	}
	b.WriteString("\n")
}

func writeFleetProvenance(b *strings.Builder, r *FleetReceipt) {
	b.WriteString("\n## Provenance\n\nEach member's `study.fleet` entry and its study's last journal entry (receipts exported left out): the notebook's chain head after it.\n\n")
	b.WriteString("| host | study | plan sha256 | fleet entry | last entry | entries |\n|---|---|---|---|---|---|\n")
	for _, h := range r.Hosts {
		fmt.Fprintf(b, "| %s | %d | `%s` | seq %d `%s` | seq %d %s `%s` | %d |\n", mdCell(h.Host), h.Study, h.PlanSHA256,
			h.FleetEntry.Seq, h.FleetEntry.Hash, h.Last.Seq, h.Last.Kind, h.Last.Hash, h.Entries)
	}
	fmt.Fprintf(b, "\n`sparkbench verify` re-makes this file and every chart from `%s` byte for byte; each member study's own receipt (`sparkbench receipt STUDY`) carries its rows.\n", FileFleet)
}
