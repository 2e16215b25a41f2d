package fleet

import (
	"context"
	"fmt"

	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/plots"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// The fleet's receipt (workbench.FleetReceipt, fleet_bundle.go there), gathered from the
// notebook: every member, the complete ones compared cell by cell with the first complete
// member (the baseline), one chart per figure with one series per host, the constants ladder by
// host. Nothing in it depends on the time it is written: the same notebook gives the same bytes.

// TooFewError refuses a fleet receipt of fewer than two complete members.
type TooFewError struct {
	Fleet           string
	Complete, Total int
}

func (e *TooFewError) Error() string {
	return fmt.Sprintf("fleet %q has %d complete member(s) of %d; a fleet receipt compares two or more (run the others again: sparkbench study run ID)", e.Fleet, e.Complete, e.Total)
}

// ReceiptOf gathers the fleet's receipt.
func ReceiptOf(ctx context.Context, nb *store.Notebook, f Fleet) (*workbench.FleetReceipt, error) {
	ms := f.Complete()
	if len(ms) < 2 {
		return nil, &TooFewError{Fleet: f.ID, Complete: len(ms), Total: len(f.Members)}
	}
	name, start, _ := cutLast(f.ID, " ")
	r := &workbench.FleetReceipt{Schema: workbench.FleetReceiptSchema, Fleet: f.ID, Name: name, Start: start, PlanSHA256: f.PlanSHA,
		Baseline: ms[0].Host, Interval: plots.IntervalCI95, Notes: []string{}}
	reports := map[string]*study.Report{}
	for _, m := range ms {
		rep, err := workbench.ShowThroughput(ctx, nb, m.StudyID)
		if err != nil {
			return nil, fmt.Errorf("%s (study %d): %w", m.Host, m.StudyID, err)
		}
		reports[m.Host] = rep
	}
	for _, m := range f.Members {
		h, err := hostOf(ctx, nb, m, reports[m.Host])
		if err != nil {
			return nil, fmt.Errorf("%s (study %d): %w", m.Host, m.StudyID, err)
		}
		r.Hosts = append(r.Hosts, h)
		if !h.Compared {
			r.Notes = append(r.Notes, fmt.Sprintf("%s (study %d) is %s: left out of the tables, charts and ladder", m.Host, m.StudyID, m.Status))
		} else if m.BandwidthFrom == "plan" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s's ceilings use the plan's entered bandwidth, the figure for every host without a %s label: give %s its own (sparkbench host add %s … --label %s=GBS) before comparing its efficiency",
				m.Host, remote.BandwidthLabel, m.Host, m.Host, remote.BandwidthLabel))
		}
	}
	r.Rows = rowsOf(ms, reports)
	r.Cells = cellsOf(r.Rows)
	r.Figures = workbench.FleetFigures(r.Cells, r.Hosts)
	ladder, err := ladderOf(ctx, nb, ms)
	if err != nil {
		return nil, err
	}
	r.Ladder = ladder
	return r, nil
}

// ExportReceipt gathers the fleet's receipt and writes it to out (a new or empty folder, or
// FILE.tar.gz); it returns the bundle's files.
func ExportReceipt(ctx context.Context, nb *store.Notebook, f Fleet, out string) (*workbench.FleetReceipt, receipt.Files, error) {
	r, err := ReceiptOf(ctx, nb, f)
	if err != nil {
		return nil, nil, err
	}
	files, err := workbench.WriteFleetReceipt(ctx, out, r)
	if err != nil {
		return nil, nil, err
	}
	return r, files, nil
}

// hostOf is one member's line: its study, what its legs ran on (the first machine and build
// record they name), its bandwidth, and its journal anchors.
func hostOf(ctx context.Context, nb *store.Notebook, m Member, rep *study.Report) (workbench.FleetHost, error) {
	st, err := nb.StudySummaryOf(ctx, m.StudyID)
	if err != nil {
		return workbench.FleetHost{}, err
	}
	h := workbench.FleetHost{Host: m.Host, Study: m.StudyID, Name: st.Name, Status: m.Status, Compared: rep != nil, PlanSHA256: st.PlanSHA256, Bandwidth: "none"}
	if rep != nil {
		h.BandwidthGBs, h.Bandwidth = rep.BandwidthGBs, rep.Bandwidth
		if m.BandwidthFrom == "host" && h.BandwidthGBs != nil {
			h.Bandwidth = "host label" // the host's bandwidth_gbs label, not the plan's figure
		}
	}
	legs, err := nb.LegTimeline(ctx, m.StudyID)
	if err != nil {
		return h, err
	}
	machines := map[int64]bool{}
	var machineID, buildID int64
	for _, l := range legs {
		if l.MachineID != 0 {
			machines[l.MachineID] = true
			if machineID == 0 {
				machineID = l.MachineID
			}
		}
		if buildID == 0 {
			buildID = l.BuildID
		}
	}
	h.Machines = len(machines)
	if machineID != 0 {
		mc, err := nb.Machine(ctx, machineID)
		if err != nil {
			return h, err
		}
		h.CPU, h.Cores, h.Devices = mc.CPUModel, mc.Cores, mc.GPU
	}
	if buildID != 0 {
		b, err := nb.Build(ctx, buildID)
		if err != nil {
			return h, err
		}
		h.LlamaCpp, h.Commit = b.VersionLine, b.Commit
	}
	entries, err := nb.Journal(ctx, m.StudyID, 0, 0)
	if err != nil {
		return h, err
	}
	for len(entries) > 0 && entries[len(entries)-1].Kind == store.KindReceiptExported {
		entries = entries[:len(entries)-1] // as a study's journal excerpt: exports are left out
	}
	for _, e := range entries {
		if e.Kind == NoteKind {
			h.FleetEntry = workbench.JournalAnchor{Seq: e.Seq, Kind: e.Kind, Hash: e.Hash}
			break
		}
	}
	if n := len(entries); n > 0 {
		e := entries[n-1]
		h.Last, h.Entries = workbench.JournalAnchor{Seq: e.Seq, Kind: e.Kind, Hash: e.Hash}, n
	}
	return h, nil
}

// rowsOf are the compared members' result rows, as their reports give them, in their order.
func rowsOf(ms []Member, reports map[string]*study.Report) []workbench.FleetHostRows {
	out := []workbench.FleetHostRows{}
	for _, m := range ms {
		hr := workbench.FleetHostRows{Host: m.Host, Study: m.StudyID, Rows: []workbench.FleetRow{}}
		for _, c := range reports[m.Host].Results {
			hr.Rows = append(hr.Rows, workbench.FleetRow{Leg: c.Leg, Source: c.Source, Model: c.Model, Test: c.Test, Depth: c.Depth, Config: c.Config, Mean: c.Mean, SD: c.SD, Reps: c.Reps})
		}
		out = append(out, hr)
	}
	return out
}

// cellsOf lines up the result cells of the compared members (the plan legs, not their
// repeatability copies): workbench.FleetCells of their rows, which verify re-runs.
func cellsOf(rows []workbench.FleetHostRows) []workbench.FleetCell {
	hosts := make([]string, len(rows))
	rs := make([][]workbench.FleetRow, len(rows))
	for i, hr := range rows {
		hosts[i], rs[i] = hr.Host, hr.Rows
	}
	return workbench.FleetCells(hosts, rs)
}
