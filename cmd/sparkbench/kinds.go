package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"

	"sparkbench/app/study"
	"sparkbench/app/workbench"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// cliKind is a CLI verb as its shared `validate` and `show` commands see it (`study` and
// `capacity`): its flags' help. The kinds come from the service layer's registry.
type cliKind struct {
	verb         string // "study" or "capacity"
	noHashHelp   string
	llamaDirHelp string
	showJSONHelp string
	// planner: validate reads the notebook's history for the repetition planner.
	planner bool
}

// validateCommand is `sparkbench VERB validate PLAN [--json] [--no-hash] [--llama-dir DIR]`:
// strict JSON, every rule of the kind's plan format, model files hashed against the plan.
// Exit 0 valid, 2 refused. Nothing is written.
func validateCommand(k cliKind, args []string, stdout, stderr io.Writer) int {
	cmd := k.verb + " validate"
	fs := newFlagSet(cmd, stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noHash := fs.Bool("no-hash", false, k.noHashHelp)
	llamaDir := fs.String("llama-dir", "", k.llamaDirHelp)
	var nbFlag *string
	effect := new(float64)
	if k.planner {
		nbFlag = fs.String("notebook", "", nbFlagHelp+" (read only, for the repetition planner's history; the default is read when it exists)")
		fs.Float64Var(effect, "effect", 3, "the difference in percent the repetition planner sizes a comparison for")
	}
	file, code := onePlanFile(cmd, fs, args, stderr)
	if code >= 0 {
		return code
	}
	if k.planner && !(*effect > 0 && *effect < 100) {
		fprintf(stderr, "sparkbench %s: --effect %g: want a difference in percent in (0, 100), e.g. 3\n", cmd, *effect)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	var nb *store.Notebook
	if nbFlag != nil {
		if nb, code = plannerNotebook(cmd, *nbFlag, stderr); code != 0 {
			return code
		}
		if nb != nil {
			defer nb.Close()
		}
	}
	var hash study.HashFunc
	if !*noHash {
		hash = func(path string) (string, error) { return hashing.File(ctx, path, nil) }
	}
	kind, data := planKind(k.verb, file)
	if kind == nil || kind.Validate == nil {
		fprintf(stderr, "sparkbench %s: no study kind checks %s\n", cmd, file)
		return 2
	}
	c, err := kind.Validate(ctx, workbench.PlanCheck{File: file, Data: data, Hash: hash, LlamaDir: *llamaDir, Notebook: nb, Effect: *effect / 100})
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 2
	}
	for _, w := range c.Warnings {
		fprintf(stderr, "%s\n", w)
	}
	if *asJSON {
		if code := printJSON(stdout, stderr, cmd, c.Report); code != 0 {
			return code
		}
	} else {
		for _, pr := range c.Problems {
			w := stdout
			if pr.Severity == study.SevError {
				w = stderr
			}
			if at := placeOf(file, data, pr); at != "" {
				fprintf(w, "%s: %s\n", at, pr)
				continue
			}
			fprintf(w, "%s: %s\n", file, pr)
		}
		if c.Valid {
			for _, l := range c.Lines {
				fprintf(stdout, "%s\n", l)
			}
		}
	}
	if !c.Valid {
		return 2
	}
	return 0
}

// showCommand is `sparkbench VERB show ID [--json] [--notebook P]`. Exit 0; 1 when the report
// cannot be read or names a problem; 2 bad input.
func showCommand(k cliKind, args []string, stdout, stderr io.Writer) int {
	cmd := k.verb + " show"
	fs := newFlagSet(cmd, stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	asJSON := fs.Bool("json", false, k.showJSONHelp)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench %s: want one study id or name\n", cmd)
		return 2
	}
	var kind *workbench.Kind
	find := func(ctx context.Context, nb *store.Notebook, ref string) (id int64, err error) {
		kind, id, err = workbench.FindStudy(ctx, nb, k.verb, ref, takesShow)
		return id, err
	}
	nb, ctx, id, done, code := openShown(cmd, *nbFlag, pos[0], find, stderr)
	if nb == nil {
		return code
	}
	defer done()
	s, err := showKind(ctx, nb, kind, id)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 1
	}
	// A study recorded as running that no process runs (its run could not record its end): said
	// beside the status, which stays as recorded until the next run takes it over.
	unended, err := nb.UnendedRun(ctx, id)
	if err != nil {
		fprintf(stderr, "sparkbench %s: %v\n", cmd, err)
		return 1
	}
	if unended != "" {
		verb := kind.Verb
		if verb == "" {
			verb = "study"
		}
		unended = fmt.Sprintf("study %d is recorded as running, but %s; `sparkbench %s run %d` resumes it\n", id, unended, verb, id)
	}
	if *asJSON {
		if code := printJSON(stdout, stderr, cmd, s.Report); code != 0 {
			return code
		}
		fprintf(stderr, "%s", unended)
	} else {
		printImportedOrigin(ctx, nb, id, stdout) // "imported from …" (importbundle.go)
		s.Print(stdout)
		fprintf(stdout, "%s", unended)
	}
	if s.Problem != "" {
		fprintf(stderr, "sparkbench %s: %s\n", cmd, s.Problem)
		return 1
	}
	return 0
}

// showKind is study id's report through its kind.
func showKind(ctx context.Context, nb *store.Notebook, k *workbench.Kind, id int64) (*workbench.Shown, error) {
	if k == nil || k.Show == nil {
		return nil, fmt.Errorf("study %d: its kind has no report", id)
	}
	s, err := nb.Study(ctx, id)
	if err != nil {
		return nil, err
	}
	return k.Show(ctx, nb, s)
}

// onePlanFile parses a plan verb's flags and its one argument, the plan file; code is the exit
// status when they are not that (-1 when they are).
func onePlanFile(cmd string, fs *flag.FlagSet, args []string, stderr io.Writer) (file string, code int) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", usageError(err)
	}
	if len(pos) != 1 {
		fprintf(stderr, "sparkbench %s: want exactly one plan file\n", cmd)
		return "", 2
	}
	return pos[0], -1
}
