package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/overview"
	"sparkbench/app/receipt"
	"sparkbench/plots"
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
	dec := json.NewDecoder(bytes.NewReader(files[FileFleet]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("%s: %v", FileFleet, err)
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

// holdFleet says what a fleet receipt's verify cannot check: fleet.json holds its figures to
// each other (checkFleet) but carries no rows (each member's own receipt carries them).
func holdFleet(src []byte) ([]byte, holdReport) {
	return src, holdReport{Limits: []string{FileFleet + ": carries no rows (each member's own receipt carries them): its means, SDs and repetitions were held to each other (half-widths, ratios, charts, ladder), not re-derived from rows"}}
}
