package workbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
)

// VerifyRequest asks for one bundle's check: a folder or a .tar.gz (Extract: a new or empty
// folder the archive is extracted into first, nothing written unless all of it is accepted).
type VerifyRequest struct {
	Path      string
	Extract   string
	HashPlots bool // check the plots against SHA256SUMS only instead of re-rendering them
}

// Verification is a bundle's check: its files and what re-assembling them found.
type Verification struct {
	Path   string
	Files  receipt.Files
	Report *receipt.VerifyReport
	Took   time.Duration
}

// OK says every file matched and re-assembled byte for byte.
func (v *Verification) OK() bool { return v.Report.OK() }

// VerifyBundle reads a bundle within bundle.DefaultLimits and re-derives everything in it. It
// returns an error (the bundle cannot be read or is refused, or ctx ended) only when nothing
// was checked; what differs is in the report.
func VerifyBundle(ctx context.Context, req VerifyRequest) (*Verification, error) {
	start := time.Now()
	var files receipt.Files
	var err error
	if req.Extract != "" {
		arch, aerr := bundle.IsArchive(req.Path)
		if aerr == nil && !arch {
			return nil, fmt.Errorf("--extract takes a .tar.gz; %s is a folder", req.Path)
		}
		if err = aerr; err == nil {
			files, err = bundle.Extract(req.Path, req.Extract, bundle.DefaultLimits)
		}
	} else {
		files, err = bundle.Read(req.Path, bundle.DefaultLimits)
	}
	if err != nil {
		return nil, readError(req.Path, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("cancelled before %s was checked", req.Path)
	}
	var rep *receipt.VerifyReport
	if IsComparisonBundle(files) {
		rep = VerifyComparison(files) // a comparison's receipt (compare_bundle.go)
	} else if IsFleetBundle(files) {
		rep = VerifyFleet(files) // a fleet's receipt (fleet_bundle.go)
	} else if IsOverviewBundle(files) {
		rep = VerifyOverview(files) // the notebook's overview receipt (overview_bundle.go)
	} else {
		rep = receipt.Verify(files, receipt.VerifyOptions{HashPlots: req.HashPlots})
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("cancelled while %s was checked", req.Path)
	}
	return &Verification{Path: req.Path, Files: files, Report: rep, Took: time.Since(start)}, nil
}

func readError(path string, err error) error {
	var re *bundle.RefusedError
	switch {
	case errors.As(err, &re):
		return err
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist", path)
	}
	return fmt.Errorf("cannot read %s: %v", path, err)
}

// VerifyText is what a check says, line by line: the CLI prints it, the window shows it.
func VerifyText(v *Verification) []string {
	lines := []string{fmt.Sprintf("%s: %s bundle, %s", v.Path, v.Report.Kind, receipt.Summary(v.Files))}
	for _, c := range v.Report.Checked {
		lines = append(lines, "  checked "+c)
	}
	for _, l := range v.Report.Limits {
		lines = append(lines, "  NOT CHECKED "+l)
	}
	for _, p := range v.Report.Problems {
		lines = append(lines, fmt.Sprintf("  DIFFERS %s", p))
	}
	if v.OK() && v.Report.SelfConsistencyOnly {
		lines = append(lines, fmt.Sprintf("OK, self-consistency only: every file matches SHA256SUMS and the derived files re-make byte for byte, but no figure was re-derived from rows (NOT CHECKED above) (%s)",
			v.Took.Round(time.Millisecond)))
	} else if v.OK() && len(v.Report.Limits) > 0 {
		lines = append(lines, fmt.Sprintf("OK: every file matches SHA256SUMS, the derived files re-make byte for byte and the figures re-derive from the rows the bundle carries, except what is NOT CHECKED above (%s)",
			v.Took.Round(time.Millisecond)))
	} else if v.OK() {
		lines = append(lines, fmt.Sprintf("OK: every file matches SHA256SUMS and the derived files re-assemble byte for byte (%s)", v.Took.Round(time.Millisecond)))
	} else {
		lines = append(lines, fmt.Sprintf("FAILED: %d problem(s) (%s)", len(v.Report.Problems), v.Took.Round(time.Millisecond)))
	}
	return lines
}
