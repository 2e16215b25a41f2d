package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/overview"
	"sparkbench/app/receipt"
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
	r := &OverviewReceipt{Machine: machine, Overview: ov}
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
	dec := json.NewDecoder(bytes.NewReader(files[FileOverview]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return fmt.Errorf("%s: %v", FileOverview, err)
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

// holdOverview says what an overview receipt's verify cannot check: overview.json carries the
// figures and where each came from, not the rows (each study's own receipt carries those).
func holdOverview(src []byte) ([]byte, holdReport) {
	return src, holdReport{Limits: []string{FileOverview + ": carries no rows (each value names the study, leg and row it came from; each study's own receipt carries them): its badges and constants were checked for self-consistency only (overview.md re-made from it), not re-derived from rows"}}
}
