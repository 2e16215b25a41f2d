package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// floatFlag is an optional float flag: nil until set.
type floatFlag struct{ v *float64 }

func (f *floatFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

func (f *floatFlag) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	f.v = &x
	return nil
}

// armFlag collects --set-arm NAME=LO:HI (either bound may be empty: open).
type armFlag []study.Arm

func (a *armFlag) String() string { return "" }

func (a *armFlag) Set(s string) error {
	name, rng, ok := strings.Cut(s, "=")
	lo, hi, ok2 := strings.Cut(rng, ":")
	if !ok || !ok2 || name == "" {
		return fmt.Errorf("%q: want NAME=LO:HI, e.g. steep=:-0.25 (an empty bound is open)", s)
	}
	arm := study.Arm{Name: name}
	for _, b := range []struct {
		s   string
		dst **float64
	}{{lo, &arm.Lo}, {hi, &arm.Hi}} {
		if b.s == "" {
			continue
		}
		x, err := strconv.ParseFloat(b.s, 64)
		if err != nil {
			return fmt.Errorf("%q: %q is not a number", s, b.s)
		}
		*b.dst = &x
	}
	*a = append(*a, arm)
	return nil
}

// cmdAmend: sparkbench amend ID --prediction P --set-lo X --set-hi Y … --reason TEXT [--as-deviation].
func cmdAmend(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("amend", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	pred := fs.String("prediction", "", "the prediction to change, e.g. P1")
	reason := fs.String("reason", "", "why (required)")
	asDev := fs.Bool("as-deviation", false, "record the change as a deviation (the way to record it once a leg it touches has run)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	var lo, hi, noise, tol floatFlag
	fs.Var(&lo, "set-lo", "band: new lower bound")
	fs.Var(&hi, "set-hi", "band: new upper bound")
	clearLo := fs.Bool("clear-lo", false, "band: open the lower bound")
	clearHi := fs.Bool("clear-hi", false, "band: open the upper bound")
	fs.Var(&noise, "set-noise-floor", "band: new noise floor (fraction)")
	fs.Var(&tol, "set-tolerance", "comparison: new tolerance (fraction)")
	text := fs.String("set-text", "", "new wording of the claim")
	var arms armFlag
	fs.Var(&arms, "set-arm", "fork: NAME=LO:HI replaces that arm's range (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	switch {
	case len(pos) != 1:
		fprintf(stderr, "sparkbench amend: want one study id or name, e.g. sparkbench amend 3 --prediction P1 --set-lo 2000 --reason \"…\"\n")
		return 2
	case *pred == "":
		fprintf(stderr, "sparkbench amend: --prediction is required (e.g. P1)\n")
		return 2
	case strings.TrimSpace(*reason) == "":
		fprintf(stderr, "sparkbench amend: --reason is required: an amendment carries its reason\n")
		return 2
	}
	ch := study.Change{Lo: lo.v, Hi: hi.v, ClearLo: *clearLo, ClearHi: *clearHi, NoiseFloor: noise.v, Tolerance: tol.v, Arms: arms}
	if *text != "" {
		ch.Text = text
	}
	if ch.Empty() {
		fprintf(stderr, "sparkbench amend: nothing to change: give --set-lo, --set-hi, --clear-lo, --clear-hi, --set-noise-floor, --set-tolerance, --set-text or --set-arm\n")
		return 2
	}
	return withStudy("amend", *nbFlag, pos[0], stderr, func(ctx context.Context, nb *store.Notebook, id int64) int {
		res, err := workbench.Amend(ctx, nb, id, study.AmendRequest{Prediction: *pred, Set: ch, Reason: *reason, AsDeviation: *asDev})
		if errors.Is(err, study.ErrAmendmentRefused) {
			fprintf(stderr, "sparkbench amend: %v\n", err)
			return 1
		}
		if err != nil {
			fprintf(stderr, "sparkbench amend: %v\n", err)
			return 2
		}
		if *asJSON {
			return printJSON(stdout, stderr, "amend", res)
		}
		fprintf(stdout, "study %d: %s recorded: %s\n", id, res.Kind, res.Summary)
		if res.Kind == "deviation" {
			fprintf(stdout, "the registered %s (%s) still decides the verdict; the changed one is shown beside it as a deviation\n", *pred, res.Before.Expectation())
		}
		return 0
	})
}
