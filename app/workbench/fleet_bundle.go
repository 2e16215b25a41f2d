package workbench

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/overview"
	"sparkbench/app/receipt"
	"sparkbench/plots"
	"sparkbench/runner/jsonlex"
)

// A fleet's receipt (docs/fleet.md): fleet.json (the FleetReceipt, canonical JSON: the fleet,
// each host's study and fingerprint summary, the same cell of every host side by side with
// each host ÷ the first host, one depth chart per figure with one series per host, the
// constants ladder by host, and each member's journal anchors), fleet.md and the charts made
// from it alone, and SHA256SUMS. Verifying it holds fleet.json's figures to each other
// (checkFleet), re-makes fleet.md and every chart from it and compares them byte for byte.
// app/fleet gathers the FleetReceipt from the notebook.

// FleetReceiptSchema names fleet.json.
const FleetReceiptSchema = "sparkbench.fleet-receipt/v1"

// Files of a fleet receipt (the charts are plots/fleet-NN.png, one per figure).
const (
	FileFleet   = "fleet.json"
	FileFleetMD = "fleet.md"
)

// FleetReceipt is fleet.json.
type FleetReceipt struct {
	Schema     string `json:"schema"`
	Fleet      string `json:"fleet"` // the fleet's ID: its name and start time
	Name       string `json:"name"`
	Start      string `json:"start"`
	PlanSHA256 string `json:"base_plan_sha256"` // the plan file's SHA-256, as written
	// Hosts are every member, in the fleet's host order; the first complete one is the
	// baseline of the ratios.
	Hosts    []FleetHost        `json:"hosts"`
	Baseline string             `json:"baseline"`
	Cells    []FleetCell        `json:"cells"`
	Figures  []FleetFigure      `json:"figures"`
	Ladder   FleetLadder        `json:"ladder"`
	Notes    []string           `json:"notes"`
	Interval plots.IntervalKind `json:"interval"` // what ± spans in Cells
	// Rows are each compared member's result rows (plan legs, not repeatability copies), in
	// the compared hosts' order: Cells are FleetCells of them, which verify re-runs. Absent in
	// receipts made before fleet receipts carried their rows (held to each other only).
	Rows []FleetHostRows `json:"rows,omitempty"`
}

// FleetHostRows are one compared member's result rows.
type FleetHostRows struct {
	Host  string     `json:"host"`
	Study int64      `json:"study"`
	Rows  []FleetRow `json:"rows"`
}

// FleetRow is one result row as the member's study report gives it: its plan leg, the stored
// row it is (source), its cell, and llama-bench's avg_ts, stddev_ts and repetition count.
type FleetRow struct {
	Leg    string  `json:"leg"`
	Source string  `json:"source"`
	Model  string  `json:"model"`
	Test   string  `json:"test"`
	Depth  int64   `json:"depth"`
	Config string  `json:"config,omitempty"`
	Mean   float64 `json:"mean_ts"`
	SD     float64 `json:"sd_ts"`
	Reps   int     `json:"reps"`
}

// FleetCells lines up the result cells of the compared members' rows (hosts[i]'s are rows[i];
// the first host is the baseline of the ratios), sorted by model, test, depth and
// configuration; rows of repeatability copies (a leg with "#") are left out.
func FleetCells(hosts []string, rows [][]FleetRow) []FleetCell {
	idx := map[string]int{}
	var cells []FleetCell
	for hi := range hosts {
		for _, c := range rows[hi] {
			if strings.Contains(c.Leg, "#") {
				continue
			}
			k := fmt.Sprintf("%s|%s|%d|%s", c.Model, c.Test, c.Depth, c.Config)
			i, ok := idx[k]
			if !ok {
				i = len(cells)
				idx[k] = i
				vals := make([]FleetValue, len(hosts))
				for j, o := range hosts {
					vals[j].Host = o
				}
				cells = append(cells, FleetCell{Model: c.Model, Test: c.Test, Depth: c.Depth, Config: c.Config, Values: vals})
			}
			half, _ := plots.HalfWidth(plots.IntervalCI95, c.SD, c.Reps)
			cells[i].Values[hi] = FleetValue{Host: hosts[hi], Present: true, Mean: c.Mean, SD: c.SD, Reps: c.Reps, Half: half, Leg: c.Leg}
		}
	}
	for i := range cells {
		base := cells[i].Values[0]
		for j := 1; j < len(hosts); j++ {
			if v := &cells[i].Values[j]; v.Present && base.Present && base.Mean > 0 {
				ratio := v.Mean / base.Mean
				v.Ratio = &ratio
			}
		}
	}
	sort.SliceStable(cells, func(i, j int) bool {
		a, b := cells[i], cells[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		if a.Depth != b.Depth {
			return a.Depth < b.Depth
		}
		return a.Config < b.Config
	})
	if cells == nil {
		cells = []FleetCell{}
	}
	return cells
}

// FleetHost is one member: its study, status, what it ran on, and its journal anchors.
type FleetHost struct {
	Host         string   `json:"host"`
	Study        int64    `json:"study"`
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	Compared     bool     `json:"compared"` // complete: its cells are in the tables and charts
	PlanSHA256   string   `json:"plan_sha256"`
	CPU          string   `json:"cpu"`
	Cores        int      `json:"cores"`
	Devices      string   `json:"devices"`
	LlamaCpp     string   `json:"llama_cpp"` // the build's version line
	Commit       string   `json:"commit"`
	Machines     int      `json:"machines"` // distinct machine records its legs name
	BandwidthGBs *float64 `json:"bandwidth_gbs"`
	Bandwidth    string   `json:"bandwidth"` // "entered" (the plan's), "measured", "host label", "none"
	// FleetEntry is its study.fleet journal entry; Last the study's last entry (receipts
	// exported left out), whose hash is the notebook's chain head after it.
	FleetEntry JournalAnchor `json:"fleet_entry"`
	Last       JournalAnchor `json:"last_entry"`
	Entries    int           `json:"entries"` // the study's journal entries up to Last
}

// JournalAnchor names one journal entry.
type JournalAnchor struct {
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
	Hash string `json:"hash"`
}

// FleetCell is one cell (model, test, depth, configuration) on every compared host, in the
// hosts' order.
type FleetCell struct {
	Model  string       `json:"model"`
	Test   string       `json:"test"`
	Depth  int64        `json:"depth"`
	Config string       `json:"config,omitempty"`
	Values []FleetValue `json:"values"`
}

// FleetValue is one host's result of a cell (Present false: the host has none).
type FleetValue struct {
	Host    string  `json:"host"`
	Present bool    `json:"present"`
	Mean    float64 `json:"mean_ts"`
	SD      float64 `json:"sd_ts"`
	Reps    int     `json:"reps"`
	Half    float64 `json:"half_width"` // ± in t/s (Interval, or SD with one repetition)
	// Ratio is Mean ÷ the baseline host's mean (null: either side lacks the cell).
	Ratio *float64 `json:"ratio"`
	Leg   string   `json:"leg"`
}

// FleetFigure is one chart: a test of one model (and configuration), t/s against depth, one
// series per host.
type FleetFigure struct {
	File   string           `json:"file"`
	Model  string           `json:"model"`
	Test   string           `json:"test"`
	Config string           `json:"config,omitempty"`
	Chart  plots.DepthChart `json:"chart"`
}

// FleetLadder is the constants ladder by host: each group's efficiency on every host.
type FleetLadder struct {
	Test       string           `json:"test"`
	Convention string           `json:"convention"`
	Rows       []FleetLadderRow `json:"rows"`
	// Unresolved are series without a group (their model's header was not read, no depth 0).
	Unresolved []FleetUnresolved `json:"unresolved"`
}

// FleetLadderRow is one group (architecture, quant, backend) on every compared host.
type FleetLadderRow struct {
	Architecture string          `json:"architecture"`
	Quant        string          `json:"quant"`
	Backend      string          `json:"backend"`
	Hosts        []FleetConstant `json:"hosts"`
}

// FleetConstant is one group's constant on one host, or why it has none there.
type FleetConstant struct {
	Host     string             `json:"host"`
	Constant *overview.Constant `json:"constant"` // null: none (Missing says why)
	Missing  string             `json:"missing,omitempty"`
}

// FleetUnresolved is a host's series that no group holds.
type FleetUnresolved struct {
	Host string `json:"host"`
	overview.Unresolved
}

// FleetFiles is the fleet's receipt bundle.
func FleetFiles(r *FleetReceipt) (receipt.Files, error) {
	r.Schema = FleetReceiptSchema
	return derivedFiles(FileFleet, r, deriveFleet)
}

// deriveFleet adds fleet.md and the charts made from files' fleet.json.
func deriveFleet(files receipt.Files) error {
	var r FleetReceipt
	if e := jsonlex.DecodeStrict(files[FileFleet], &r); e != nil { // the one strict decoder (a bundle: no Input checks, old ones still verify)
		l, c := jsonlex.LineCol(files[FileFleet], e.Offset)
		return fmt.Errorf("%s:%d:%d: %s", FileFleet, l, c, e.Detail())
	}
	if r.Schema != FleetReceiptSchema {
		return fmt.Errorf("%s: schema %q, want %q", FileFleet, r.Schema, FleetReceiptSchema)
	}
	if err := checkFleet(&r); err != nil {
		return fmt.Errorf("%s: %v", FileFleet, err)
	}
	for i, f := range r.Figures {
		if want := FleetChartFile(i); f.File != want {
			return fmt.Errorf("%s: figure %d is named %q, want %q", FileFleet, i+1, f.File, want)
		}
		p, err := f.Chart.Plot()
		if err != nil {
			return fmt.Errorf("%s: %v", f.File, err)
		}
		var b bytes.Buffer
		if err := plots.Export(p, plots.PNG, plots.Pixels(compareChartW), plots.Pixels(compareChartH), &b); err != nil {
			return err
		}
		files[f.File] = b.Bytes()
	}
	files[FileFleetMD] = []byte(FleetMarkdown(&r))
	return nil
}

// FleetChartFile is the name of the i-th figure's chart (from 0).
func FleetChartFile(i int) string { return fmt.Sprintf("plots/fleet-%02d.png", i+1) }

// IsFleetBundle says whether files are a fleet receipt.
func IsFleetBundle(files receipt.Files) bool {
	_, ok := files[FileFleet]
	return ok
}

// VerifyFleet checks a fleet receipt: SHA256SUMS against every file, and fleet.md and the
// charts re-made from fleet.json, byte for byte.
func VerifyFleet(files receipt.Files) *receipt.VerifyReport {
	return verifyDerived("fleet", FileFleet, files, deriveFleet, holdFleet)
}

// WriteFleetReceipt makes the fleet's receipt bundle from r and writes it to out (a new or
// empty folder, or FILE.tar.gz) unless ctx ended first.
func WriteFleetReceipt(ctx context.Context, out string, r *FleetReceipt) (receipt.Files, error) {
	if strings.TrimSpace(out) == "" {
		return nil, refused("name the fleet receipt's folder or .tar.gz")
	}
	files, err := FleetFiles(r)
	if err != nil {
		return nil, err
	}
	if err := writeDerived(ctx, out, files); err != nil {
		return nil, err
	}
	return files, nil
}

// holdFleet holds fleet.json's cells to the rows it carries: the cells are FleetCells of the
// compared members' rows, compared figure by figure (the figures and ladder are then held to
// the cells by checkFleet). A receipt made before fleet receipts carried their rows is held to
// itself only, and verify says so.
func holdFleet(src []byte) ([]byte, holdReport) {
	var h holdReport
	var r FleetReceipt
	if e := jsonlex.DecodeStrict(src, &r); e != nil { // the one strict decoder; deriveFleet names it
		return src, h
	}
	if r.Rows == nil {
		h.Limits = append(h.Limits, FileFleet+": an old-layout fleet receipt (made before fleet receipts carried their rows): its means, SDs and repetitions were held to each other (half-widths, ratios, charts, ladder), not re-derived from rows")
		return src, h
	}
	bad := func(format string, a ...any) ([]byte, holdReport) {
		h.Problems = append(h.Problems, receipt.Problem{File: FileFleet, What: fmt.Sprintf(format, a...)})
		return src, h
	}
	var hosts []string
	for _, x := range r.Hosts {
		if x.Compared {
			hosts = append(hosts, x.Host)
		}
	}
	if len(r.Rows) != len(hosts) {
		return bad("carries the rows of %d hosts for %d compared hosts: its cells cannot be re-derived", len(r.Rows), len(hosts))
	}
	rows := make([][]FleetRow, len(hosts))
	n := 0
	for i, hr := range r.Rows {
		if hr.Host != hosts[i] {
			return bad("rows[%d] are %q's, want the compared host %q's", i, hr.Host, hosts[i])
		}
		rows[i] = hr.Rows
		n += len(hr.Rows)
	}
	h.Derived = true
	if err := checkFleet(&r); err != nil { // as held, before the rows' cells replace its own
		bad("%v", err)
	}
	want := FleetCells(hosts, rows)
	diffs, err := receipt.JSONDiffs(r.Cells, want, 8)
	if err != nil {
		return bad("%v", err)
	}
	for _, d := range diffs {
		name := ""
		var j int
		if _, err := fmt.Sscanf(d.Path, "[%d]", &j); err == nil {
			for _, cs := range [][]FleetCell{r.Cells, want} {
				if j >= 0 && j < len(cs) {
					name = fmt.Sprintf("cell %s %s d%d [%s]: ", cs[j].Model, cs[j].Test, cs[j].Depth, cs[j].Config)
					break
				}
			}
		}
		bad("%scells%s is %s, the rows give %s", name, d.Path, d.Has, d.Give)
	}
	if len(diffs) == 0 {
		h.Checked = append(h.Checked, fmt.Sprintf("%d cells (means, SDs, repetitions, half-widths, ratios) re-derived from the %d rows %s carries", len(want), n, FileFleet))
	}
	h.Limits = append(h.Limits, FileFleet+": the constants ladder is held to each other (ceilings, efficiencies, n, mean, median, min, max of its members), not to the rows")
	r.Cells = want
	r.Figures = FleetFigures(want, r.Hosts)
	fixed, err := canon.Marshal(&r)
	if err != nil {
		return src, h
	}
	return fixed, h
}
