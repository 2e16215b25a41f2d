package workbench

import (
	"context"
	"fmt"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/overview"
	"sparkbench/app/receipt"
	"sparkbench/runner/jsonlex"
)

// A notebook-level overview receipt (docs/overview.md): overview.json (the badge table under
// both conventions and the constants ladder, every value with the study, leg and row it came
// from, canonical JSON), overview.md made from it alone, and SHA256SUMS. Verifying it re-makes
// overview.md from overview.json and compares it byte for byte; the rows themselves stay in the
// notebook (each study's own receipt carries them).

// OverviewReceiptSchema names overview.json.
const OverviewReceiptSchema = "sparkbench.overview-receipt/v1"

// Files of an overview receipt.
const (
	FileOverview   = "overview.json"
	FileOverviewMD = "overview.md"
)

// OverviewReceipt is overview.json.
type OverviewReceipt struct {
	Schema string `json:"schema"`
	// Machine is the machine line of the notebook's newest fingerprint, as the window shows it
	// ("" when none was recorded).
	Machine  string             `json:"machine"`
	Overview *overview.Overview `json:"overview"`
	// Series are the rows the tables were computed from (overview.Badges and the ladder read
	// them: each point names its study, leg and row with llama-bench's avg_ts): verify
	// re-derives the badge table from them and holds the ladder's members to them. Absent in
	// receipts made before overview receipts carried their rows (self-consistency only).
	Series []overview.Series `json:"series,omitempty"`
}

// OverviewFiles is the overview's receipt bundle.
func OverviewFiles(r *OverviewReceipt) (receipt.Files, error) {
	r.Schema = OverviewReceiptSchema
	return derivedFiles(FileOverview, r, deriveOverview)
}

// ExportOverview computes the overview with opts through svc (the window's keeps what it read;
// the CLI's is new: overview.New(overview.Notebook(nb))) and writes its receipt to out (a new
// folder or .tar.gz). The receipt is computed from the rows (opts.FromRows), never from the
// notebook's stored summaries, so it stays what the rows say.
func ExportOverview(ctx context.Context, svc *overview.Service, opts overview.Options, machine, out string) (*OverviewReceipt, receipt.Files, error) {
	if strings.TrimSpace(out) == "" {
		return nil, nil, refused("name the overview receipt's folder or .tar.gz")
	}
	opts.FromRows = true
	ov, err := svc.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	r := &OverviewReceipt{Machine: machine, Overview: ov, Series: ov.Series}
	if r.Series == nil {
		r.Series = []overview.Series{}
	}
	files, err := OverviewFiles(r)
	if err == nil {
		err = writeDerived(ctx, out, files)
	}
	if err != nil {
		return nil, nil, err
	}
	return r, files, nil
}

// deriveOverview adds overview.md made from files' overview.json.
func deriveOverview(files receipt.Files) error {
	var r OverviewReceipt
	if e := jsonlex.DecodeStrict(files[FileOverview], &r); e != nil { // the one strict decoder (a bundle: no Input checks, old ones still verify)
		l, c := jsonlex.LineCol(files[FileOverview], e.Offset)
		return fmt.Errorf("%s:%d:%d: %s", FileOverview, l, c, e.Detail())
	}
	if r.Schema != OverviewReceiptSchema || r.Overview == nil {
		return fmt.Errorf("%s: schema %q, want %q with an overview", FileOverview, r.Schema, OverviewReceiptSchema)
	}
	files[FileOverviewMD] = []byte(OverviewMarkdown(&r))
	return nil
}

// OverviewMarkdown is the receipt's text: what it is, the machine, then both tables as the
// CLI prints them (every value with its study, leg and row), verbatim.
func OverviewMarkdown(r *OverviewReceipt) string {
	var b strings.Builder
	ov := r.Overview
	b.WriteString("# Overview: the figures that span studies\n\n")
	fmt.Fprintf(&b, "Every throughput study of one notebook: the badge table under both conventions (a line reached at d0 only; at d0 and the deep depth) and the constants ladder (efficiency against the bandwidth ceiling by architecture, quant and backend, with n and spread). Test `%s`, line %g t/s, deep depth %d.\n\n",
		ov.Options.Test, ov.Options.Line, ov.Options.Deep)
	machine := r.Machine
	if machine == "" {
		machine = "not recorded"
	}
	fmt.Fprintf(&b, "Machine: %s. Studies read: %d.\n\n", machine, len(ov.Studies))
	b.WriteString("## Badge table\n\n```text\n")
	overview.WriteBadges(&b, ov)
	b.WriteString("```\n\n## Constants ladder\n\n```text\n")
	overview.WriteLadder(&b, ov)
	b.WriteString("```\n\n")
	fmt.Fprintf(&b, "`sparkbench verify` re-makes this file from `%s` byte for byte; each value names the study, leg and row it came from, and each study's own receipt carries those rows.\n", FileOverview)
	return b.String()
}

// IsOverviewBundle says whether files are an overview receipt.
func IsOverviewBundle(files receipt.Files) bool {
	_, ok := files[FileOverview]
	return ok
}

// VerifyOverview checks an overview receipt: SHA256SUMS against every file, and overview.md
// re-made from overview.json, byte for byte.
func VerifyOverview(files receipt.Files) *receipt.VerifyReport {
	return verifyDerived("overview", FileOverview, files, deriveOverview, holdOverview)
}

// holdOverview holds overview.json to the rows it carries: the badge table is overview.Badges
// of the series, compared figure by figure; each ladder member's d0 value is its series' d0
// row, and its ceiling, efficiency and the constant's n, mean, median, min and max follow from
// them (checkConstant). The ladder's grouping (architecture, quant) and bytes per token come
// from GGUF headers the receipt does not carry: verify says so. A receipt made before overview
// receipts carried their rows is checked for self-consistency only, and verify says so.
func holdOverview(src []byte) ([]byte, holdReport) {
	var h holdReport
	var r OverviewReceipt
	if e := jsonlex.DecodeStrict(src, &r); e != nil || r.Overview == nil { // deriveOverview names it
		return src, h
	}
	if r.Series == nil {
		h.Limits = append(h.Limits, FileOverview+": an old-layout overview receipt (made before overview receipts carried their rows): its badges and constants were checked for self-consistency only (overview.md re-made from it), not re-derived from rows")
		return src, h
	}
	h.Derived = true
	bad := func(format string, a ...any) {
		h.Problems = append(h.Problems, receipt.Problem{File: FileOverview, What: fmt.Sprintf(format, a...)})
	}
	ov := r.Overview
	want := overview.Badges(r.Series, ov.Options)
	diffs, err := receipt.JSONDiffs(ov.Badges, want, 8)
	if err != nil {
		bad("%v", err)
	}
	for _, d := range diffs {
		name := ""
		var j int
		if _, err := fmt.Sscanf(d.Path, "rows[%d]", &j); err == nil {
			for _, rs := range [][]overview.BadgeRow{ov.Badges.Rows, want.Rows} {
				if j >= 0 && j < len(rs) {
					name = fmt.Sprintf("badge row %s (%s): ", rs[j].Model, rs[j].Test)
					break
				}
			}
		}
		bad("%sbadges.%s is %s, the rows give %s", name, d.Path, d.Has, d.Give)
	}
	points := 0
	d0 := map[string]overview.Cell{}
	for _, sr := range r.Series {
		points += len(sr.Points)
		for _, p := range sr.Points {
			if p.Depth == 0 {
				d0[fmt.Sprintf("%d|%s|%s|%s|%s", sr.ID, sr.SHA256, sr.Test, sr.Config, sr.Backend)] = p
			}
		}
	}
	members := 0
	for ci, c := range ov.Ladder.Constants {
		for mi, m := range c.Members {
			members++
			p, ok := d0[fmt.Sprintf("%d|%s|%s|%s|%s", m.Study, m.SHA256, m.Test, m.Config, c.Backend)]
			if !ok {
				bad("ladder.constants[%d].members[%d] (%s, study %d): no depth-0 row of its series among the rows overview.json carries", ci, mi, m.Model, m.Study)
			} else if m.D0 != p {
				d, _ := receipt.JSONDiffs(m.D0, p, 1)
				for _, x := range d {
					bad("ladder.constants[%d].members[%d] (%s, study %d): d0.%s is %s, the rows give %s", ci, mi, m.Model, m.Study, x.Path, x.Has, x.Give)
				}
			}
		}
		if err := checkConstant(c); err != nil {
			bad("ladder.constants[%d] (%s/%s/%s): %v", ci, c.Architecture, c.Quant, c.Backend, err)
		}
	}
	if len(h.Problems) == 0 {
		h.Checked = append(h.Checked, fmt.Sprintf("the badge table re-derived, and the %d ladder members held, to the %d rows of %d series %s carries", members, points, len(r.Series), FileOverview))
	}
	h.Limits = append(h.Limits, FileOverview+": the ladder's grouping (architecture, quant) and each model's bytes per token come from GGUF headers the receipt does not carry; its studies list is as exported")
	ov.Badges = want
	fixed, err := canon.Marshal(&r)
	if err != nil {
		return src, h
	}
	return fixed, h
}
