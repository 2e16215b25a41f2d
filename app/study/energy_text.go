package study

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// writeEnergy prints the sampled legs' energy per device and the result cells' Joules per
// token, when the study has telemetry samples.
func writeEnergy(w io.Writer, r *Report) {
	e := r.Energy
	if e == nil {
		return
	}
	fprintf(w, "\nenergy (telemetry samples of each sampled leg; docs/telemetry.md)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  leg\ttotal\tsamples\tunreadable\n")
	for _, l := range e.Legs {
		fprintf(tw, "  %s\t%s\t%d\t%d\n", l.Label, l.TotalText(l.HasEnergy), l.Samples, l.Unreadable)
	}
	tw.Flush()
	fprintf(w, "\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  leg\tdevice\tenergy\tpower\tclock\ttemperature\tthrottle\n")
	for _, l := range e.Legs {
		for _, d := range l.Devices {
			fprintf(tw, "  %s\t%s %s\t%s\t%s\t%s\t%s\t%s\n", l.Label, d.Source, d.Device, d.EnergyText(), d.PowerText(), d.ClockText(),
				d.TempText(), d.ThrottleText())
		}
	}
	tw.Flush()
	if len(e.Cells) == 0 {
		return
	}
	fprintf(w, "\nenergy per token (J per prompt token for pp, per generated token for tg)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fprintf(tw, "  model\ttest\tdepth\tJ/token\ttokens/J\tmean W\tsource\n")
	for _, c := range e.Cells {
		fprintf(tw, "  %s\t%s\td%d\t%s\t%s\t%.1f\t%s\n", c.Model, c.Test, c.Depth, fmt.Sprintf("%.4g", c.JPerToken),
			fmt.Sprintf("%.4g", c.TokensPerJ), c.MeanW, c.Source)
	}
	tw.Flush()
}
