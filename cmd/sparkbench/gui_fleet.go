package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"sparkbench/app/fleet"
	"sparkbench/app/workbench"
	"sparkbench/ui"
)

// The window's fleet receipt and Fleet hosts tab (ui/compare_fleet.go), over the same code as
// `sparkbench fleet receipt` and `fleet show`.

var _ ui.FleetExporter = compareService{}

// ExportFleet writes fleet id's receipt to out, as `sparkbench fleet receipt ID --out OUT`.
func (s compareService) ExportFleet(ctx context.Context, id, out string) (ui.ReceiptExport, error) {
	f, err := fleet.Find(ctx, s.nb, id)
	if err != nil {
		return ui.ReceiptExport{}, err
	}
	r, files, err := fleet.ExportReceipt(ctx, s.nb, f, out)
	if err != nil {
		return ui.ReceiptExport{}, err
	}
	abs, _ := filepath.Abs(out)
	return ui.ReceiptExport{Files: files, Summary: fmt.Sprintf("wrote fleet %q: %d hosts side by side against %s, %d cells, %d charts, %d ladder groups (%d files) to %s; check it with: sparkbench verify %s",
		f.ID, len(f.Complete()), r.Baseline, len(r.Cells), len(r.Figures), len(r.Ladder.Rows), len(files), abs, abs)}, nil
}

// FleetHosts describes fleet id's hosts and its constants ladder by host, from its receipt.
func (s compareService) FleetHosts(ctx context.Context, id string) (string, error) {
	f, err := fleet.Find(ctx, s.nb, id)
	if err != nil {
		return "", err
	}
	r, err := fleet.ReceiptOf(ctx, s.nb, f)
	if err != nil {
		return "", err
	}
	return fleetHostsText(r), nil
}

// fleetHostsText is the receipt's hosts and ladder as aligned plain text.
func fleetHostsText(r *workbench.FleetReceipt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet %s · plan %.12s · baseline %s\n\nHosts\n", r.Fleet, r.PlanSHA256, r.Baseline)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "host\tstudy\tstatus\tCPU\tdevices\tllama.cpp\tbandwidth")
	for _, h := range r.Hosts {
		cpu := h.CPU
		if h.Cores > 0 {
			cpu = fmt.Sprintf("%s (%d cores)", cpu, h.Cores)
		}
		bw := "none"
		if h.BandwidthGBs != nil {
			bw = fmt.Sprintf("%g GB/s (%s)", *h.BandwidthGBs, h.Bandwidth)
		}
		if !h.Compared {
			bw = "not compared"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", h.Host, h.Study, h.Status, dash(cpu), dash(h.Devices), dash(h.LlamaCpp), bw)
	}
	tw.Flush()
	l := r.Ladder
	fmt.Fprintf(&b, "\nConstants ladder by host: %s at depth 0 ÷ the bandwidth ceiling (%s), mean (n, min–max)\n", l.Test, l.Convention)
	if len(l.Rows) == 0 {
		b.WriteString("no group: no compared host has a result of the test at depth 0 with a model header read\n")
		return b.String()
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "architecture\tquant\tbackend")
	for _, h := range l.Rows[0].Hosts {
		fmt.Fprintf(tw, "\t%s", h.Host)
	}
	fmt.Fprintln(tw)
	for _, row := range l.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s", row.Architecture, row.Quant, row.Backend)
		for _, h := range row.Hosts {
			if c := h.Constant; c != nil {
				fmt.Fprintf(tw, "\t%.4f (n=%d, %.4f–%.4f)", c.Mean, c.N, c.Min, c.Max)
			} else {
				fmt.Fprintf(tw, "\t%s", h.Missing)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return b.String()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}
