package main

import (
	"context"
	"io"
	"os"
	"strings"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

// One verb runs any study: `sparkbench run ID|PLAN`, `study run` and `capacity run` all take a
// study of any kind or a plan file of any kind. A plan file is registered in the notebook and
// run as a study (its receipt is then `sparkbench receipt NAME`); a capacity plan's run without
// the notebook stays available under `capacity run PLAN --no-notebook` (or --resume DIR).

const runUsage = "run ID|PLAN [the flags of study run or capacity run, by the study's kind]"

// runValuedFlags are the flags of `study run` and `capacity run` that take a value, so that the
// positional argument can be found before the kind (and so the flag set) is known.
var runValuedFlags = map[string]bool{
	"llama-dir": true, "out": true, "start-timeout": true, "request-timeout": true, "grace": true,
	"quality-cases": true, "notebook": true, "resume": true, "on": true, "hosts": true,
	"retry": true, "batched": true,
}

// runTarget is the positional argument of a run verb and its --notebook flag (best effort: a
// malformed command line is left to the verb's own flag set to refuse).
func runTarget(args []string) (ref, notebook string, ok bool) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if runValuedFlags[name] && !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			if name == "notebook" {
				notebook = val
			}
			continue
		}
		pos = append(pos, a)
	}
	if len(pos) != 1 {
		return "", notebook, false
	}
	return pos[0], notebook, true
}

// runVerbOf is the verb whose run takes ref ("study" or "capacity"): a plan file's kind by its
// schema, else the kind of the study the notebook holds under that id or name; "" when neither
// says (the caller's own verb then answers, with its own message).
func runVerbOf(ref, notebook string) string {
	if st, err := os.Stat(ref); err == nil {
		if !st.Mode().IsRegular() {
			return ""
		}
		_, schema := workbench.ReadPlanFile(ref)
		if k := workbench.KindOfPlan(schema); k != nil {
			return k.VerbOf()
		}
		return ""
	}
	path, err := notebookPath(notebook)
	if err != nil {
		return ""
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return ""
	}
	nb, err := store.OpenWith(path, store.Options{ReadOnly: true})
	if err != nil {
		return ""
	}
	defer nb.Close()
	s, err := nb.FindStudy(context.Background(), ref)
	if err != nil {
		return ""
	}
	if k := workbench.KindOf(s.Kind); k != nil {
		return k.VerbOf()
	}
	return ""
}

// runVerbFor is the verb that runs args' target, or from when nothing says otherwise.
func runVerbFor(args []string, from string) string {
	ref, notebook, ok := runTarget(args)
	if !ok {
		return from
	}
	if v := runVerbOf(ref, notebook); v != "" {
		return v
	}
	return from
}

// cmdRun is `sparkbench run ID|PLAN`: a study or plan file of any kind, run by its kind's run.
func cmdRun(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fprintf(stdout, "usage: sparkbench %s\n\nRuns (or resumes) a study of any kind, or registers a plan file of any kind in the notebook and runs it.\nA throughput or quantization-ladder study takes the flags of `sparkbench study run`, a capacity,\nconcurrency or serving study those of `sparkbench capacity run` (see their --help).\n", runUsage)
		return 0
	}
	if runVerbFor(args, "study") == "capacity" {
		return capacityRunKnown(args, true, stdout, stderr)
	}
	return studyRunOwn(args, stdout, stderr)
}
