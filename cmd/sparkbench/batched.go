package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"sparkbench/app/batchedrun"
	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
)

const batchedUsage = "batched run [--notebook P] [--study S] [--llama-dir D] [--idle-timeout DUR] [--timeout DUR] [--json] -- <llama-batched-bench args>"

// cmdBatched runs one llama-batched-bench leg through the runner (pty, jsonl rows, crash
// classes) and records it in the notebook as it runs: each row is printed and stored as it
// arrives, then one summary line. Exit 0 only for class ok, 1 for any other class, 2 for bad
// usage (nothing is written then).
func cmdBatched(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fprintf(stderr, "sparkbench batched: want `sparkbench %s`\n", batchedUsage)
		return 2
	}
	fs := newFlagSet("batched run", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	studyName := fs.String("study", batchedrun.DefaultStudy, "throughput study to record the leg in (created if missing)")
	llamaDir := fs.String("llama-dir", "", "folder holding llama-batched-bench")
	idle := fs.Duration("idle-timeout", 0, "end the leg after this long without output (default "+runner.DefaultIdleTimeout.String()+")")
	total := fs.Duration("timeout", 0, "end the leg after this long in all (default "+runner.DefaultTotalTimeout.String()+")")
	asJSON := fs.Bool("json", false, "print each row and the summary as JSON lines")
	toolArgs, code := toolArgsAfterDash(fs, args[1:], "batched run", "llama-batched-bench", "-m model.gguf -npp 512 -ntg 32 -npl 1,2,4", idle, total, stderr)
	if code >= 0 {
		return code
	}
	// Refuse bad input before the notebook is created or touched.
	if err := batchedrun.Check(toolArgs); err != nil {
		fprintf(stderr, "sparkbench batched run: %v; nothing was run or recorded\n", err)
		return 2
	}
	loc, err := llamacpp.Locate(*llamaDir)
	if err != nil {
		fprintf(stderr, "sparkbench batched run: %v\n", err)
		return 2
	}
	tool, err := llamacpp.BatchedBench(loc)
	if err != nil {
		fprintf(stderr, "sparkbench batched run: %v\n", err)
		return 2
	}
	nb, code := openNotebookFlag("batched run", *nbFlag, false, stderr)
	if nb == nil {
		return code
	}
	defer nb.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	enc := json.NewEncoder(stdout)
	hash := cachedHash(ctx, nb, stderr)
	res, err := batchedrun.Run(ctx, batchedrun.Request{
		Notebook: nb, Study: *studyName, Tool: tool, Args: toolArgs,
		Limits: runner.Limits{Idle: *idle, Total: *total},
		Hash:   func(_ context.Context, p string) (string, error) { return hash(p) },
		OnEvent: func(ev runner.Event) {
			switch ev.Type {
			case runner.EventBatched:
				if *asJSON {
					_ = enc.Encode(ev)
				} else {
					printBatched(stdout, ev.Batched)
				}
			case runner.EventMalformed:
				fprintf(stderr, "# output line %d is not a valid jsonl row (%s); the leg continues\n", ev.Malformed.Line, ev.Malformed.Err)
			}
		},
		// the rows printed so far belong to an incomplete leg the notebook keeps apart
		OnRetry: func(line string) { fprintf(stderr, "# %s\n", line) },
	})
	var ue *batchedrun.UsageError
	if errors.As(err, &ue) {
		fprintf(stderr, "sparkbench batched run: %v; nothing was run\n", err)
		return 2
	}
	if err != nil {
		fprintf(stderr, "sparkbench batched run: %v\n", err)
		return 1
	}
	x := res.Leg.Exit
	code = 0
	if x.Class != runner.ClassOK {
		code = 1
	}
	if *asJSON {
		_ = enc.Encode(batchedSummary{Type: "summary", Argv: res.Leg.Argv, Exit: x, Stored: res.Stored,
			Study: res.StudyID, Leg: res.LegID, ModelSHA256: res.Model.SHA256, Fingerprint: res.Leg.Fingerprint})
		return code
	}
	line := fmt.Sprintf("batched class=%s rows=%d", x.Class, x.Rows)
	if x.Expected > 0 {
		line += "/" + strconv.Itoa(x.Expected)
	}
	line += " duration=" + x.Duration.Round(time.Millisecond).String()
	line += fmt.Sprintf(" leg=%d study=%q", res.LegID, *studyName)
	if x.Reason != "" {
		line += " reason=" + strconv.Quote(x.Reason)
	}
	fprintf(stdout, "%s\n", line)
	return code
}

type batchedSummary struct {
	Type        string              `json:"type"`
	Argv        []string            `json:"argv"`
	Exit        runner.Exit         `json:"exit"`
	Stored      int                 `json:"stored"`
	Study       int64               `json:"study"`
	Leg         int64               `json:"leg"`
	ModelSHA256 string              `json:"model_sha256"`
	Fingerprint *runner.Fingerprint `json:"fingerprint,omitempty"`
}

func printBatched(w io.Writer, s *runner.BatchedSample) {
	r := &s.Result
	fprintf(w, "%-18s N_KV %6d  T_PP %8.3f s  S_PP %10.2f t/s  T_TG %8.3f s  S_TG %10.2f t/s  S %10.2f t/s\n",
		s.Test, r.NKV, r.TPP, r.SPP, r.TTG, r.STG, r.S)
}
