package main

import (
	"context"
	"io"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

// The shared verbs' path for a study kind registered with the service layer (workbench.Kind)
// that takes them: `study register` and `study run FILE` look the plan's schema up, `study
// run ID` and `study show ID` the stored study's kind. Throughput (and capacity, under its own
// verbs) keep their paths; a kind registered later needs no change here.

// planKind reads a plan file once: its bytes (nil when it cannot be read: the throughput path
// then says why) and, when its schema names a kind registered with the service layer, that
// kind (nil otherwise).
func planKind(file string) (*workbench.Kind, []byte) {
	data, schema := workbench.ReadPlanFile(file)
	return workbench.KindOfPlan(schema), data
}

// registerAnyFile registers a plan file of any kind `study register` takes; it returns what
// --json prints, the study and the exit code.
func registerAnyFile(ctx context.Context, nb *store.Notebook, file string, stdout, stderr io.Writer) (any, int64, int) {
	k, data := planKind(file)
	if k == nil || k.Register == nil {
		reg, code := registerFile(ctx, nb, file, data, stdout, stderr)
		return reg, reg.StudyID, code
	}
	hash, commit := registrationHash(ctx, nb, stderr)
	reg, err := k.Register(ctx, nb, file, data, hash)
	if err != nil {
		return nil, 0, reportRefusal("study register", err, stderr)
	}
	if err := commit(ctx); err != nil {
		fprintf(stderr, "sparkbench study register: warning: the file hashes were not cached: %v\n", err)
	}
	for _, l := range reg.Lines {
		fprintf(stdout, "%s\n", l)
	}
	return reg, reg.StudyID, 0
}

// sharedKind is the registered kind of a stored study when it takes the verb (has names the
// function the verb needs), else nil.
func sharedKind(ctx context.Context, nb *store.Notebook, ref string, takes func(*workbench.Kind) bool) (*workbench.Kind, store.Study) {
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return nil, store.Study{}
	}
	if k := workbench.KindOf(s.Kind); k != nil && takes(k) {
		return k, s
	}
	return nil, store.Study{}
}

// runKind runs a study of a shared kind: each event's line as it happens, then what the run
// did. Exit 0 complete, 1 work left or failed.
func runKind(ctx context.Context, nb *store.Notebook, k *workbench.Kind, s store.Study, llamaDir string, stdout, stderr io.Writer) int {
	done, err := k.Run(ctx, nb, s, workbench.RunRequest{LlamaDir: llamaDir, Event: func(line string) { fprintf(stdout, "%s\n", line) }})
	if err != nil {
		fprintf(stderr, "sparkbench study run: %v\n", err)
		return 1
	}
	for _, l := range done.Lines {
		fprintf(stdout, "%s\n", l)
	}
	if !done.Complete {
		return 1
	}
	return 0
}

func takesRun(k *workbench.Kind) bool  { return k.Run != nil }
func takesShow(k *workbench.Kind) bool { return k.Show != nil }
