package main

import (
	"context"
	"io"

	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
)

const verifyUsage = "verify BUNDLE [--extract DIR] [--hash-plots] [--json]"

// verifyReport is `verify --json`.
type verifyReport struct {
	Bundle string `json:"bundle"`
	OK     bool   `json:"ok"`
	*receipt.VerifyReport
	Seconds float64 `json:"seconds"`
}

// cmdVerify checks a receipt bundle (a folder or a .tar.gz, possibly someone else's): every
// file against SHA256SUMS, the journal excerpt's hash chain, study.json and receipt.md
// re-assembled from the raw files and the plots re-rendered, each compared byte for byte.
// Exit 0 only if all hold; 1 when something differs (each file named, with its first
// differing line); 2 when the bundle cannot be read or is refused (unsafe entries, limits).
func cmdVerify(args []string, stdout, stderr io.Writer) int {
	return cmdVerifyCtx(context.Background(), args, stdout, stderr)
}

// cmdVerifyCtx is cmdVerify stopped when ctx is cancelled (the window's Cancel): between
// reading the bundle and checking it, and before reporting; exit 2 then.
func cmdVerifyCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", stderr)
	extract := fs.String("extract", "", "extract a .tar.gz into this new or empty folder first (nothing is written unless the whole archive is accepted)")
	hashPlots := fs.Bool("hash-plots", false, "check the plots against SHA256SUMS only instead of re-rendering them")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench verify: want one bundle (a folder or a .tar.gz); usage: sparkbench %s\n", verifyUsage)
		return 2
	}
	v, err := workbench.VerifyBundle(ctx, workbench.VerifyRequest{Path: pos[0], Extract: *extract, HashPlots: *hashPlots})
	if err != nil {
		fprintf(stderr, "sparkbench verify: %v\n", err)
		return 2
	}
	if *asJSON {
		if code := printJSON(stdout, stderr, "verify", verifyReport{Bundle: v.Path, OK: v.OK(), VerifyReport: v.Report, Seconds: v.Took.Seconds()}); code != 0 {
			return code
		}
	} else {
		for _, l := range workbench.VerifyText(v) {
			fprintf(stdout, "%s\n", l)
		}
	}
	if !v.OK() {
		return 1
	}
	return 0
}
