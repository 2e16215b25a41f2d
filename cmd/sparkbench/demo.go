package main

import (
	"io"
	"time"

	"sparkbench/app/demo"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// cmdDemo: sparkbench demo [--run] [--llama-dir D] [--data-dir D] [--notebook P].
func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	runIt := fs.Bool("run", false, "run the demo study after registering it (seconds; resumes if it ran before)")
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench")
	dataDir := fs.String("data-dir", "", "sparkbench's data folder (default: ${XDG_DATA_HOME:-~/.local/share}/sparkbench); the demo goes in its demo/ folder")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) > 0 {
		fprintf(stderr, "sparkbench demo: unexpected argument %q\n", pos[0])
		return 2
	}
	dir := *dataDir
	if dir == "" {
		if dir, err = demo.DataDir(); err != nil {
			fprintf(stderr, "sparkbench demo: %v; pass --data-dir\n", err)
			return 2
		}
	}
	nb, code := openStudyNotebook("demo", *nbFlag, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()
	ctx, stop := studyCtx()
	defer stop()
	reg, err := demo.Prepare(ctx, store.StudyRecorder{N: nb}, dir)
	if err != nil {
		fprintf(stderr, "sparkbench demo: %v\n", err)
		return 1
	}
	how := "registered"
	if reg.Existing {
		how = "found (registered before)"
	}
	fprintf(stdout, "demo study %d %s: plan sha256 %s, %d legs; models and plan in %s\n", reg.StudyID, how, reg.PlanSHA256, reg.Legs, demo.Dir(dir))
	if !*runIt {
		fprintf(stdout, "run it with `sparkbench demo --run` or `sparkbench study run %d`\n", reg.StudyID)
		return 0
	}
	start := time.Now()
	if code := runKind(ctx, nb, workbench.DefaultKind("study"), reg.StudyID, "study run", workbench.RunRequest{LlamaDir: *llamaDir}, stdout, stderr); code != 0 {
		return code
	}
	fprintf(stdout, "demo finished in %s\n", time.Since(start).Round(10*time.Millisecond))
	return 0
}
