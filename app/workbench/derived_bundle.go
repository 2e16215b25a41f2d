package workbench

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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

// holdReport is what holding a derived bundle's source file to the raw rows it carries found:
// what was checked, what could not be (Limits: said in verify's output, never claimed as
// checked) and each figure that differs from what the rows give.
type holdReport struct {
	// Derived says figures were re-derived from rows (false: self-consistency only).
	Derived  bool
	Checked  []string
	Limits   []string
	Problems []receipt.Problem
}

// holder holds a derived bundle's source file to the raw rows it carries. fixed is the source
// with every figure the rows give in place of the one it holds (src itself when they agree, or
// when nothing could be re-derived): the other files are then re-made from it, so a figure
// forged in the source and in the text made from it is named in both.
type holder func(src []byte) (fixed []byte, h holdReport)

// verifyDerived checks a derived bundle: SHA256SUMS against every file, the source file's
// figures against the raw rows it carries (hold, when the kind has one), then every file
// re-made by derive from the source (with the rows' figures in place), byte for byte; a file
// that is held but not made (or made but missing) is a problem too.
func verifyDerived(kind, name string, files receipt.Files, derive func(receipt.Files) error, hold holder) *receipt.VerifyReport {
	rep := &receipt.VerifyReport{Kind: kind, Files: len(files), Bytes: files.Bytes(), Checked: []string{}, Problems: []receipt.Problem{}}
	add := func(file, format string, a ...any) {
		rep.Problems = append(rep.Problems, receipt.Problem{File: file, What: fmt.Sprintf(format, a...)})
	}
	if got, want := files[receipt.FileSums], receipt.Sums(files); !bytes.Equal(got, want) {
		add(receipt.FileSums, "does not list the bundle's files with their SHA-256 (a file was changed, added or removed)")
	} else {
		rep.Checked = append(rep.Checked, fmt.Sprintf("%d files against %s", len(files)-1, receipt.FileSums))
	}
	src, from, tail := files[name], name, ""
	if hold != nil {
		fixed, h := hold(src)
		rep.Checked = append(rep.Checked, h.Checked...)
		rep.Limits = append(rep.Limits, h.Limits...)
		rep.Problems = append(rep.Problems, h.Problems...)
		if fixed != nil {
			src = fixed
		}
		if h.Derived {
			from, tail = name+" (its figures as the rows it carries give them)", ", its figures as the rows "+name+" carries give them"
		} else {
			rep.SelfConsistencyOnly = true
		}
	}
	again := receipt.Files{name: src}
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
			add(n, "not made from %s", from)
		case !bytes.Equal(got, want):
			if line, have, give, ok := firstTextLine(n, got, want); ok {
				add(n, "differs from the one re-made from %s: line %d has %q, re-made gives %q", from, line, have, give)
			} else {
				add(n, "differs from the one re-made from %s", from)
			}
		default:
			rep.Checked = append(rep.Checked, n+" re-made from "+name+" byte for byte"+tail)
		}
	}
	return rep
}

// firstTextLine is the first line where a Markdown file differs from the re-made one (ok false
// for other files).
func firstTextLine(name string, got, want []byte) (line int, have, give string, ok bool) {
	if !strings.HasSuffix(name, ".md") {
		return 0, "", "", false
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		g, w := "(end of file)", "(end of file)"
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return i + 1, clipText(g), clipText(w), true
		}
	}
	return 0, "", "", false
}

func clipText(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
