package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/jsonlex"
	"sparkbench/store"
)

// The shared verbs' path over the kinds registered with the service layer (workbench.Kind):
// `study register`, `capacity register` and `study run FILE` look the plan's schema up (a
// schema no kind of the verb claims goes to the verb's default kind, which says what is wrong
// with the file), `study show`, `capacity show` and `study run ID` the stored study's kind. A
// kind registered later needs no change here.

// planKind reads a plan file once: its bytes (nil when it cannot be read: the kind then says
// why) and the kind of verb that reads it.
func planKind(verb, file string) (*workbench.Kind, []byte) {
	data, schema := workbench.ReadPlanFile(file)
	return workbench.PlanKind(verb, schema), data
}

// registerAnyFile registers a plan file of any kind `VERB register` takes; it returns what
// --json prints, the study and the exit code.
func registerAnyFile(ctx context.Context, nb *store.Notebook, verb, file string, stdout, stderr io.Writer) (any, int64, int) {
	cmd := verb + " register"
	k, data := planKind(verb, file)
	if k == nil || k.Register == nil {
		fprintf(stderr, "sparkbench %s: no study kind registers %s\n", cmd, file)
		return nil, 0, 2
	}
	hash, commit := registrationHash(ctx, nb, stderr)
	reg, err := k.Register(ctx, nb, file, data, hash)
	var refused *study.RefusedError
	if errors.As(err, &refused) {
		for i, pr := range refused.Problems {
			if at := placeOf(file, data, pr); at != "" {
				refused.Problems[i].Path = at + ": " + pr.Path
			}
		}
	}
	if code := printRegistered(cmd, k, reg, err, func(ctx context.Context) error { return commit(ctx) }, ctx, stdout, stderr); code != 0 {
		return nil, 0, code
	}
	if reg.Report != nil {
		return reg.Report, reg.StudyID, 0
	}
	return reg, reg.StudyID, 0
}

// printRegistered prints a registration as the register verbs do: its notes, then why the plan
// was refused (exit 2: bad input or a refused plan; 1: another failure), else the hashes
// cached through commit (nil: cached already), its warnings and its lines.
func printRegistered(cmd string, k *workbench.Kind, reg *workbench.Registered, err error, commit func(context.Context) error,
	ctx context.Context, stdout, stderr io.Writer) int {
	if reg != nil {
		for _, n := range reg.Notes {
			fprintf(stderr, "sparkbench %s: %s\n", cmd, n)
		}
	}
	var bad *workbench.RequestError
	var flags *workbench.FlagsRefusedError
	switch {
	case errors.As(err, &bad):
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 2
	case errors.As(err, &flags):
		for _, pr := range flags.Problems {
			fprintf(stderr, "sparkbench %s: plan refused: %s: %s\n", cmd, pr.Path, pr.Msg)
		}
		return 2
	case err != nil:
		return reportRefusal(cmd, err, stderr)
	}
	if commit != nil {
		if err := commit(ctx); err != nil {
			warning := k.CacheWarning
			if warning == "" {
				warning = "warning: the file hashes were not cached"
			}
			fprintf(stderr, "sparkbench %s: %s: %v\n", cmd, warning, err)
		}
	}
	for _, w := range reg.Warnings {
		fprintf(stderr, "%s\n", w)
	}
	for _, l := range reg.Lines {
		fprintf(stdout, "%s\n", l)
	}
	return 0
}

func takesRun(k *workbench.Kind) bool  { return k.Run != nil }
func takesShow(k *workbench.Kind) bool { return k.Show != nil }

// placeOf is FILE:LINE:COL of a problem the person must see in the plan file (a model path
// with a comma, a name that is a bare number: study.ProblemPlaced), or "" for any other
// problem or one whose field the file does not write.
func placeOf(file string, data []byte, pr study.Problem) string {
	if pr.Code != study.ProblemPlaced {
		return ""
	}
	off, ok := jsonlex.PathOffset(data, pr.Path)
	if !ok {
		return ""
	}
	l, c := jsonlex.LineCol(data, off)
	return fmt.Sprintf("%s:%d:%d", file, l, c)
}
