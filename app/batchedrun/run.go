// Package batchedrun runs one llama-batched-bench leg through the runner and records it in
// the notebook as it runs: the leg (kind batched) with its machine, build and argv, each row
// as it arrives, then the outcome and the verbatim transcript. `sparkbench batched run` and
// other Go code call Run.
package batchedrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sparkbench/runner"
	"sparkbench/runner/hashing"
	"sparkbench/store"
)

// DefaultStudy receives batched-bench legs when no study is named: a throughput study (as
// imported batched-bench files go into one), created with status imported if missing.
const DefaultStudy = "batched-bench"

// Request is one batched-bench leg to run and record.
type Request struct {
	Notebook *store.Notebook
	Study    string   // name; "" = DefaultStudy
	Tool     string   // path of llama-batched-bench (llamacpp.BatchedBench)
	Args     []string // the tool's arguments (argv, never a shell string); must name a model with -m
	Env      []string // KEY=VALUE extras for the child
	Limits   runner.Limits
	Label    string // the leg's label; "" = the model's file name
	// Hash returns a model file's SHA-256 (e.g. through the notebook's hash cache); nil hashes
	// the file with hashing.File.
	Hash func(ctx context.Context, path string) (string, error)
	// OnEvent, if set, sees every event of the leg (on the calling goroutine).
	OnEvent func(runner.Event)
	// Fingerprinter is shared between legs to cache the build's fingerprint; nil: a new one.
	Fingerprinter *runner.Fingerprinter
	// OnRetry, if set, is told when an incomplete attempt runs again (a line).
	OnRetry func(line string)
}

// Result is what was run and recorded.
type Result struct {
	StudyID int64
	LegID   int64
	Model   store.BatchedModel
	Leg     *runner.BatchedLegResult
	Stored  int // rows the last attempt wrote to the notebook (all the tool printed, whatever the class)
	// Attempts is how many legs it took (more than one when a run ended incomplete).
	Attempts int
}

// UsageError is a request refused before anything was started or written.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ModelArg returns the value of -m/--model in args ("" when there is none).
func ModelArg(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-m" || args[i] == "--model" {
			return args[i+1]
		}
	}
	return ""
}

// Check refuses, with a *UsageError saying what to do, arguments the runner cannot read
// (runner.ValidateBatchedArgs) and a missing model (no -m, or not a regular file).
func Check(args []string) error {
	if err := runner.ValidateBatchedArgs(args); err != nil {
		return &UsageError{err.Error()}
	}
	model := ModelArg(args)
	if model == "" {
		return &UsageError{"no model: pass llama-batched-bench's -m MODEL.gguf (the rows are stored under that model)"}
	}
	st, err := os.Stat(model)
	switch {
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &UsageError{fmt.Sprintf("model %s: %v; pass the path of a GGUF file with -m", model, err)}
	case !st.Mode().IsRegular():
		return &UsageError{fmt.Sprintf("model %s is not a regular file; pass the path of a GGUF file with -m", model)}
	}
	return nil
}

// Run checks the request (arguments the runner can read, a model file that exists: a
// *UsageError otherwise, and nothing is written), hashes the model, records the machine and
// build from the tool's fingerprint, starts the leg in the notebook, runs the tool and stores
// each row as it arrives, then finishes the leg with its class, reason, exit and transcript. A
// leg that ended incomplete for no reason the tool gave runs again (Attempts in all), each
// attempt its own leg; the notebook's rows of an incomplete leg are kept apart from the
// complete one's (BatchedRowsFor reads only ok legs unless asked).
// An error after the leg started still finishes it (best effort) and is returned with the
// Result so far.
func Run(ctx context.Context, req Request) (Result, error) {
	if req.Notebook == nil || req.Tool == "" {
		return Result{}, &UsageError{"batched run: no notebook or no llama-batched-bench given"}
	}
	if err := Check(req.Args); err != nil {
		return Result{}, err
	}
	model := ModelArg(req.Args)
	nb := req.Notebook
	if req.Study == "" {
		req.Study = DefaultStudy
	}
	study, findErr := nb.FindStudy(ctx, req.Study)
	if findErr == nil && study.Kind != store.StudyThroughput {
		return Result{}, &UsageError{fmt.Sprintf("study %q is a %s study: batched-bench legs go into a throughput study (pass another --study)", req.Study, study.Kind)}
	}
	hash := req.Hash
	if hash == nil {
		hash = func(ctx context.Context, p string) (string, error) { return hashing.File(ctx, p, nil) }
	}
	sum, err := hash(ctx, model)
	if err != nil {
		return Result{}, fmt.Errorf("hash model %s: %w", model, err)
	}
	res := Result{Model: store.BatchedModel{Filename: model, SHA256: sum}}
	if findErr != nil {
		if study, err = nb.CreateStudy(ctx, store.Study{Name: req.Study, Kind: store.StudyThroughput, Status: store.StatusImported,
			Description: "llama-batched-bench legs run by sparkbench batched run"}); err != nil {
			return res, err
		}
	}
	res.StudyID = study.ID

	fper := req.Fingerprinter
	if fper == nil {
		fper = &runner.Fingerprinter{}
	}
	fp := fper.Take(ctx, req.Tool, req.Env)
	machineID, buildID, err := recordEnvironment(ctx, nb, req.Tool, fp)
	if err != nil {
		return res, err
	}
	spec := runner.BatchedSpec{Tool: req.Tool, Args: req.Args, Env: req.Env, Limits: req.Limits}
	label := req.Label
	if label == "" {
		label = filepath.Base(model)
	}
	env := map[string]string{}
	for _, kv := range req.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	detail, err := json.Marshal(map[string]any{"tool": "llama-batched-bench", "model_sha256": sum, "fingerprint": fp})
	if err != nil {
		return res, err
	}
	// A run that ended incomplete for no reason the tool gave (llama-batched-bench loses its
	// last rows at exit now and then, through a pipe as through the pty) runs again, each
	// attempt its own leg (label, label#2, …); the result is the last attempt's.
	for attempt := 1; ; attempt++ {
		l := label
		if attempt > 1 {
			l = fmt.Sprintf("%s#%d", label, attempt)
			if req.OnRetry != nil {
				req.OnRetry(fmt.Sprintf("%s: again (attempt %d of %d): %s", l, attempt, Attempts, res.Leg.Exit.Reason))
			}
		}
		res.Stored = 0
		err := runLeg(ctx, req, nb, &res, store.LegSpec{StudyID: study.ID, Label: l, Kind: store.LegKindBatched,
			MachineID: machineID, BuildID: buildID, Argv: spec.Argv(), Env: env, Detail: detail}, spec, fper)
		res.Attempts = attempt
		if err != nil || res.Leg.Exit.Class != runner.ClassIncomplete || attempt == Attempts || ctx.Err() != nil {
			return res, err
		}
	}
}

// Attempts bounds the runs of one batched-bench leg that end incomplete.
const Attempts = 3

// runLeg records one attempt as a leg: started before the tool runs, each row stored as it
// arrives, finished with the class, reason, exit and transcript.
func runLeg(ctx context.Context, req Request, nb *store.Notebook, res *Result, ls store.LegSpec, spec runner.BatchedSpec, fper *runner.Fingerprinter) error {
	leg, _, err := nb.StartLeg(ctx, ls)
	if err != nil {
		return err
	}
	res.LegID = leg.ID

	wctx := context.WithoutCancel(ctx) // the leg is recorded even when the run is stopped
	run := runner.StartBatched(ctx, spec, runner.WithFingerprinter(fper))
	var addErr error
	for ev := range run.Events() {
		if ev.Type == runner.EventBatched && addErr == nil {
			if addErr = nb.AddBatched(wctx, leg.ID, res.Model, ev.Batched.Result); addErr == nil {
				res.Stored++
			} else {
				_ = run.Stop(wctx) // rows that cannot be kept make the leg worthless: stop it
			}
		}
		if req.OnEvent != nil {
			req.OnEvent(ev)
		}
	}
	res.Leg = run.Result()
	x := res.Leg.Exit
	out := store.LegOutcome{Class: string(x.Class), Reason: x.Reason, Signal: x.Signal, PeakRSSBytes: x.PeakRSS}
	if addErr != nil {
		out.Class, out.Reason = string(runner.ClassFailed), "rows could not be stored: "+addErr.Error()
	}
	if x.Code >= 0 {
		c := x.Code
		out.ExitCode = &c
	}
	if res.Leg.Transcript != nil {
		out.Transcript = res.Leg.Transcript.Bytes()
	}
	if _, _, err := nb.FinishLeg(wctx, leg.ID, out); err != nil {
		return err
	}
	return addErr
}

func recordEnvironment(ctx context.Context, nb *store.Notebook, tool string, fp *runner.Fingerprint) (machineID, buildID int64, err error) {
	if fp == nil {
		return 0, 0, nil
	}
	m := fp.Machine
	var devices []string
	for _, d := range fp.Devices {
		devices = append(devices, d.Name)
	}
	info, err := store.CanonicalJSON(map[string]any{"machine": m, "devices": fp.Devices})
	if err != nil {
		return 0, 0, err
	}
	if machineID, err = nb.UpsertMachine(ctx, store.Machine{Hostname: m.Hostname, CPUModel: m.CPUModel, Cores: m.Cores,
		RAMBytes: m.MemBytes, OS: m.OS, Kernel: m.Kernel, GPU: strings.Join(devices, "; "), Info: info}); err != nil {
		return 0, 0, err
	}
	bins := map[string]string{}
	if fp.Binary.SHA256 != "" {
		bins[filepath.Base(tool)] = fp.Binary.SHA256
	}
	for _, l := range fp.Libraries {
		if l.SHA256 != "" {
			bins[l.Name] = l.SHA256
		}
	}
	buildID, err = nb.UpsertBuild(ctx, store.Build{Dir: filepath.Dir(tool), VersionLine: fp.VersionLine, BuildNumber: int64(fp.BuildNumber),
		Commit: fp.Commit, Backends: strings.Join(fp.Backends, ", "), Binaries: bins})
	return machineID, buildID, err
}
