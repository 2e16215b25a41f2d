package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"sparkbench/app/fleet"
	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// `sparkbench fleet list|show|receipt`: the fleets the notebook holds (from their members'
// study.fleet entries), one fleet's members and the same cell of every host side by side, and
// its receipt: the fleet receipt (sparkbench.fleet-receipt/v1: the hosts, the same cell on
// every host with each host ÷ the first, one chart per figure, the constants ladder by host),
// or with --comparison the comparison receipt of its complete members (the first host's study
// the baseline); `sparkbench verify` re-makes either byte for byte.

const fleetReadUsage = "fleet list [--json] [--notebook P] | fleet show FLEET [--json] [--notebook P] | fleet receipt FLEET --out DIR|FILE.tar.gz [--comparison] [--notebook P]"

func cmdFleetRead(verb string, args []string, stdout, stderr io.Writer) int {
	name := "fleet " + verb
	fs := newFlagSet(name, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	out := fs.String("out", "", "the receipt's folder or .tar.gz (fleet receipt)")
	comparison := fs.Bool("comparison", false, "fleet receipt: write the comparison receipt of the complete members (study compare's) instead of the fleet receipt")
	nbFlag := fs.String("notebook", "", "notebook file (default: $SPARKBENCH_NOTEBOOK, then the user's data folder)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	want := 1
	if verb == "list" {
		want = 0
	}
	if len(pos) != want {
		fprintf(stderr, "usage: sparkbench %s\n", fleetReadUsage)
		return 2
	}
	if verb == "receipt" && strings.TrimSpace(*out) == "" {
		fprintf(stderr, "sparkbench fleet receipt: --out DIR|FILE.tar.gz is required\n")
		return 2
	}
	nb, code := openNotebookFlag(name, *nbFlag, verb != "receipt", stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx := context.Background()
	if verb == "list" {
		all, err := fleet.List(ctx, nb)
		if err != nil {
			fprintf(stderr, "sparkbench fleet list: %v\n", err)
			return 1
		}
		if *asJSON {
			return printJSON(stdout, stderr, name, all)
		}
		if len(all) == 0 {
			fprintf(stdout, "no fleet runs in this notebook (sparkbench fleet run FLEET, or study run PLAN --on HOST,…)\n")
			return 0
		}
		for _, f := range all {
			fprintf(stdout, "%s\n", fleetLine(f))
		}
		return 0
	}
	f, err := fleet.Find(ctx, nb, pos[0])
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", name, err)
		return 2
	}
	if verb == "receipt" {
		return fleetReceipt(ctx, nb, f, *out, *comparison, stdout, stderr)
	}
	rows, err := fleet.Compare(ctx, nb, f.Members)
	if err != nil {
		fprintf(stderr, "sparkbench fleet show: %v\n", err)
		return 1
	}
	if *asJSON {
		ladder, err := fleet.LadderByHost(ctx, nb, f.Complete())
		if err != nil {
			fprintf(stderr, "sparkbench fleet show: %v\n", err)
			return 1
		}
		return printJSON(stdout, stderr, name, map[string]any{"fleet": f, "cells": rows, "ladder": ladder})
	}
	fprintf(stdout, "%s\n", fleetLine(f))
	fleet.WriteTable(stdout, f.Members, rows)
	return 0
}

// fleetLine is one fleet in a line: its ID, then each host's study and status.
func fleetLine(f fleet.Fleet) string {
	parts := make([]string, len(f.Members))
	for i, m := range f.Members {
		parts[i] = fmt.Sprintf("%s study %d %s", m.Host, m.StudyID, m.Status)
	}
	return fmt.Sprintf("fleet %q: %s", f.ID, strings.Join(parts, " · "))
}

func fleetReceipt(ctx context.Context, nb *store.Notebook, f fleet.Fleet, out string, comparison bool, stdout, stderr io.Writer) int {
	ms := f.Complete()
	if len(ms) < 2 {
		fprintf(stderr, "sparkbench fleet receipt: %v\n", &fleet.TooFewError{Fleet: f.ID, Complete: len(ms), Total: len(f.Members)})
		return 2
	}
	if comparison {
		return fleetComparison(ctx, nb, f, ms, out, stdout, stderr)
	}
	r, files, err := fleet.ExportReceipt(ctx, nb, f, out)
	if err != nil {
		return fleetReceiptFailed(err, stderr)
	}
	fprintf(stdout, "wrote %s: fleet %q, %d hosts side by side against %s, %d cells, %d charts, %d ladder groups (%d files); check it anywhere with `sparkbench verify %s`\n",
		out, f.ID, len(ms), r.Baseline, len(r.Cells), len(r.Figures), len(r.Ladder.Rows), len(files), out)
	return 0
}

// fleetComparison writes the comparison receipt of the complete members (`--comparison`):
// the first host's study the baseline, each other compared with it as `study compare` does.
func fleetComparison(ctx context.Context, nb *store.Notebook, f fleet.Fleet, ms []fleet.Member, out string, stdout, stderr io.Writer) int {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.StudyID
	}
	set, files, err := workbench.ExportComparison(ctx, nb, workbench.CompareRequest{IDs: ids, Options: study.CompareOptions{Alpha: 0.05}}, out)
	if err != nil {
		return fleetReceiptFailed(err, stderr)
	}
	fprintf(stdout, "wrote %s: fleet %q, %d hosts compared with %s (%d files); check it anywhere with `sparkbench verify %s`\n",
		out, f.ID, len(set.Studies), ms[0].Host, len(files), out)
	return 0
}

// fleetReceiptFailed says why a fleet receipt was not written: exit 2 for bad input as given (a
// *workbench.RequestError: the folder, the fleet), 1 for anything else.
func fleetReceiptFailed(err error, stderr io.Writer) int {
	fprintf(stderr, "sparkbench fleet receipt: %v\n", err)
	var re *workbench.RequestError
	if errors.As(err, &re) {
		return 2
	}
	return 1
}
