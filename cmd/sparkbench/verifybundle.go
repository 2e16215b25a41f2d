package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"sparkbench/app/bundle"
	"sparkbench/app/receipt"
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
	path := pos[0]
	start := time.Now()
	var files receipt.Files
	if *extract != "" {
		arch, err := bundle.IsArchive(path)
		if err == nil && !arch {
			fprintf(stderr, "sparkbench verify: --extract takes a .tar.gz; %s is a folder\n", path)
			return 2
		}
		if err == nil {
			files, err = bundle.Extract(path, *extract, bundle.DefaultLimits)
		}
		if err != nil {
			return verifyReadError(path, err, stderr)
		}
	} else if files, err = bundle.Read(path, bundle.DefaultLimits); err != nil {
		return verifyReadError(path, err, stderr)
	}
	if ctx.Err() != nil {
		fprintf(stderr, "sparkbench verify: cancelled before %s was checked\n", path)
		return 2
	}
	rep := receipt.Verify(files, receipt.VerifyOptions{HashPlots: *hashPlots})
	if ctx.Err() != nil {
		fprintf(stderr, "sparkbench verify: cancelled while %s was checked\n", path)
		return 2
	}
	took := time.Since(start)
	if *asJSON {
		if code := printJSON(stdout, stderr, "verify", verifyReport{Bundle: path, OK: rep.OK(), VerifyReport: rep, Seconds: took.Seconds()}); code != 0 {
			return code
		}
	} else {
		fprintf(stdout, "%s: %s bundle, %s\n", path, rep.Kind, receipt.Summary(files))
		for _, c := range rep.Checked {
			fprintf(stdout, "  checked %s\n", c)
		}
		for _, p := range rep.Problems {
			fprintf(stdout, "  DIFFERS %s\n", p)
		}
		if rep.OK() {
			fprintf(stdout, "OK: every file matches SHA256SUMS and the derived files re-assemble byte for byte (%s)\n", took.Round(time.Millisecond))
		} else {
			fprintf(stdout, "FAILED: %d problem(s) (%s)\n", len(rep.Problems), took.Round(time.Millisecond))
		}
	}
	if !rep.OK() {
		return 1
	}
	return 0
}

func verifyReadError(path string, err error, stderr io.Writer) int {
	var re *bundle.RefusedError
	if errors.As(err, &re) {
		fprintf(stderr, "sparkbench verify: %v\n", err)
		return 2
	}
	if errors.Is(err, os.ErrNotExist) {
		fprintf(stderr, "sparkbench verify: %s does not exist\n", path)
		return 2
	}
	fprintf(stderr, "sparkbench verify: cannot read %s: %v\n", path, err)
	return 2
}
