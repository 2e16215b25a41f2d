package workbench

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/receipt"
)

// A derived receipt is one JSON file (a comparison's, the overview's) with every other file
// made from it alone, and SHA256SUMS: verifying it re-makes those files and compares them byte
// for byte. Comparisons (compare_bundle.go, compare_capacity_bundle.go) and the overview's
// receipt (overview_bundle.go) are made, written and verified here.

// derivedFiles is the bundle of v as name (canonical JSON), the files derive makes from it,
// and SHA256SUMS.
func derivedFiles(name string, v any, derive func(receipt.Files) error) (receipt.Files, error) {
	data, err := canon.Marshal(v)
	if err != nil {
		return nil, err
	}
	files := receipt.Files{name: data}
	if err := derive(files); err != nil {
		return nil, err
	}
	files[receipt.FileSums] = receipt.Sums(files)
	return files, nil
}

// writeDerived writes a made bundle to out (a new or empty folder, or FILE.tar.gz) unless ctx
// ended first (then nothing is written).
func writeDerived(ctx context.Context, out string, files receipt.Files) error {
	if ctx.Err() != nil {
		return ErrCancelled
	}
	return bundle.Write(out, files)
}

// verifyDerived checks a derived bundle: SHA256SUMS against every file, then every file
// re-made from name by derive, byte for byte; a file that is held but not made (or made but
// missing) is a problem too.
func verifyDerived(kind, name string, files receipt.Files, derive func(receipt.Files) error) *receipt.VerifyReport {
	rep := &receipt.VerifyReport{Kind: kind, Files: len(files), Bytes: files.Bytes(), Checked: []string{}, Problems: []receipt.Problem{}}
	add := func(file, format string, a ...any) {
		rep.Problems = append(rep.Problems, receipt.Problem{File: file, What: fmt.Sprintf(format, a...)})
	}
	if got, want := files[receipt.FileSums], receipt.Sums(files); !bytes.Equal(got, want) {
		add(receipt.FileSums, "does not list the bundle's files with their SHA-256 (a file was changed, added or removed)")
	} else {
		rep.Checked = append(rep.Checked, fmt.Sprintf("%d files against %s", len(files)-1, receipt.FileSums))
	}
	again := receipt.Files{name: files[name]}
	if err := derive(again); err != nil {
		add(name, "%v", err)
		return rep
	}
	all := slices.Sorted(maps.Keys(again))
	for n := range files {
		if !slices.Contains(all, n) {
			all = append(all, n)
		}
	}
	slices.Sort(all)
	for _, n := range all {
		if n == name || n == receipt.FileSums {
			continue
		}
		want, made := again[n]
		got, held := files[n]
		switch {
		case made && !held:
			add(n, "missing")
		case !made && held:
			add(n, "not made from %s", name)
		case !bytes.Equal(got, want):
			add(n, "differs from the one re-made from %s", name)
		default:
			rep.Checked = append(rep.Checked, n+" re-made from "+name+" byte for byte")
		}
	}
	return rep
}
