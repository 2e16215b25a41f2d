package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/workbench"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/fsread"
)

const capacityUsage = "capacity validate PLAN [--json] [--no-hash] [--llama-dir D] | capacity register PLAN | capacity run ID|PLAN [--notebook P] [--llama-dir D] [--out DIR | --resume DIR | --fresh] [--quality-cases FILE] [--start-timeout DUR] [--request-timeout DUR] [--grace DUR] [--json] | capacity show ID [--json] | capacity presets [--json] | capacity compare A B [C…] [--json] [--alpha A] [--out DIR|FILE.tar.gz] | capacity assemble --plan PLAN --requests PASS/CANDIDATE/pP=FILE… --rss PASS/CANDIDATE/pP=FILE… --server-log PASS/CANDIDATE/pP=FILE… [--quality CANDIDATE/pP=FILE…] [--bench-tg CANDIDATE=T…] [--batched CANDIDATE=FILE…] [--serving PASS/CANDIDATE/pP=FILE… --harness FILE] --output study.json"

// cmdCapacity is `sparkbench capacity validate|assemble`: capacity and concurrency studies
// (docs/capacity.md). Exit 0 ok, 2 bad input (one line naming the file or flag and the fix),
// 1 failure (the output could not be written).
func cmdCapacity(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fprintf(stderr, "sparkbench capacity: want a verb: `sparkbench %s`\n", capacityUsage)
		return 2
	}
	switch args[0] {
	case "validate":
		return validateCommand(capacityKind, args[1:], stdout, stderr)
	case "assemble":
		return capacityAssemble(args[1:], stdout, stderr)
	case "run":
		return capacityRunCommand(args[1:], stdout, stderr)
	case "register":
		return capacityRegister(args[1:], stdout, stderr)
	case "show":
		return showCommand(capacityKind, args[1:], stdout, stderr)
	case "presets":
		return capacityPresets(args[1:], stdout, stderr)
	case "compare":
		return capacityCompare(args[1:], stdout, stderr)
	}
	fprintf(stderr, "sparkbench capacity: unknown verb %q; want validate, assemble, register, run, show, presets or compare\n", args[0])
	return 2
}

// capacityValidateReport is `capacity validate --json`.
type capacityValidateReport = workbench.CapacityValidation

// capacityKind is the capacity and concurrency study kinds as the CLI's shared verbs see them.
var capacityKind = cliKind{
	verb:         "capacity",
	noHashHelp:   "skip opening and hashing the model and prompt-plan files",
	llamaDirHelp: "folder holding the llama-server whose --help the candidates' server_flags are checked against (default: the plan's build.dir, then the usual search; none found: a warning)",
	showJSONHelp: "print the report as JSON",
}

// capacityAssemble turns a study's raw files into study.json (canonical JSON, byte-identical
// for the same inputs whatever the flag order or the folder it runs from).
// capacityQualityAndTG reads the quality-guard evidence files and the llama-bench tg figures
// of `capacity assemble` into in.
func capacityQualityAndTG(in *capacity.Inputs, quality, benchTG multiFlag) error {
	for _, v := range quality {
		ks, path, err := capacityKeyFile(capacity.FlagQuality, v)
		if err != nil {
			return err
		}
		k, err := capacity.ParseQualityKey(ks)
		if err != nil {
			return fmt.Errorf("%s %v", capacity.FlagQuality, err)
		}
		if _, dup := in.Quality[k]; dup {
			return fmt.Errorf("%s %s is given twice; give one evidence file per candidate and slot count", capacity.FlagQuality, k)
		}
		f, err := capacityReadInput(capacity.FlagQuality, ks, path)
		if err != nil {
			return err
		}
		in.Quality[k] = f
	}
	for _, v := range benchTG {
		id, num, ok := strings.Cut(v, "=")
		x, err := strconv.ParseFloat(num, 64)
		if !ok || id == "" || err != nil {
			return fmt.Errorf("%s %q: want CANDIDATE=T with T llama-bench's tg in t/s, e.g. q8-generic=41.2", capacity.FlagBenchTG, v)
		}
		if _, dup := in.BenchTG[id]; dup {
			return fmt.Errorf("%s %s is given twice", capacity.FlagBenchTG, id)
		}
		in.BenchTG[id] = x
	}
	return nil
}

func capacityAssemble(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("capacity assemble", stderr)
	planFile := fs.String("plan", "", "the capacity or concurrency plan (JSON)")
	output := fs.String("output", "", "where to write study.json")
	harness := fs.String("harness", "", "a serving plan's harness floor record (docs/serving.md)")
	var requests, rss, logs, quality, benchTG, batched, serving, tel multiFlag
	fs.Var(&tel, "telemetry", "PASS/CANDIDATE/pP=FILE: a sampled server lifetime's telemetry.jsonl (repeat; docs/telemetry.md)")
	fs.Var(&serving, "serving", "PASS/CANDIDATE/pP=FILE: a serving plan's open-loop records of one server lifetime (repeat)")
	fs.Var(&requests, "requests", "PASS/CANDIDATE/pP=FILE: request records of one server lifetime (repeat)")
	fs.Var(&rss, "rss", "PASS/CANDIDATE/pP=FILE: GNU time -v output or {\"vmhwm_kib\": N} (repeat)")
	fs.Var(&logs, "server-log", "PASS/CANDIDATE/pP=FILE: llama-server's log (repeat)")
	fs.Var(&quality, "quality", "CANDIDATE/pP=FILE: quality-guard evidence (repeat)")
	fs.Var(&benchTG, "bench-tg", "CANDIDATE=T: llama-bench tg (t/s) for the serving tax (repeat)")
	fs.Var(&batched, "batched", "CANDIDATE=FILE: llama-batched-bench output (md or jsonl) of the same model, for the server tax (repeat)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench capacity assemble: "+format+"\n", a...)
		return 2
	}
	switch {
	case len(pos) > 0:
		return bad("unexpected argument %q; every input is a flag (see `sparkbench help`)", pos[0])
	case *planFile == "":
		return bad("--plan is required: give the plan the study ran")
	case *output == "":
		return bad("--output is required, e.g. --output study.json")
	}
	plan, err := capacity.Load(*planFile)
	if err != nil {
		return bad("--plan: %v", err)
	}
	in := capacity.Inputs{Requests: map[capacity.LifetimeKey]capacity.InputFile{}, RSS: map[capacity.LifetimeKey]capacity.InputFile{},
		ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{}, Quality: map[capacity.QualityKey]capacity.InputFile{},
		BenchTG: map[string]float64{}, Serving: map[capacity.LifetimeKey]capacity.InputFile{}, Telemetry: map[capacity.LifetimeKey]capacity.InputFile{}}
	for _, role := range []struct {
		flag  string
		vals  multiFlag
		files map[capacity.LifetimeKey]capacity.InputFile
	}{{capacity.FlagRequests, requests, in.Requests}, {capacity.FlagRSS, rss, in.RSS}, {capacity.FlagServerLog, logs, in.ServerLogs}, {capacity.FlagServing, serving, in.Serving},
		{capacity.FlagTelemetry, tel, in.Telemetry}} {
		for _, v := range role.vals {
			ks, path, err := capacityKeyFile(role.flag, v)
			if err != nil {
				return bad("%v", err)
			}
			k, err := capacity.ParseLifetimeKey(ks)
			if err != nil {
				return bad("%s %v", role.flag, err)
			}
			if _, dup := role.files[k]; dup {
				return bad("%s %s is given twice; give one file per server lifetime", role.flag, k)
			}
			f, err := capacityReadInput(role.flag, ks, path)
			if err != nil {
				return bad("%v", err)
			}
			role.files[k] = f
		}
	}
	if err := capacityQualityAndTG(&in, quality, benchTG); err != nil {
		return bad("%v", err)
	}
	if in.Batched, err = capacityBatchedInputs(batched); err != nil {
		return bad("%v", err)
	}
	if *harness != "" {
		f, err := capacityReadInput(capacity.FlagHarness, "", *harness)
		if err != nil {
			return bad("%v", err)
		}
		in.Harness = &f
	}
	res, err := capacity.Assemble(plan, in)
	if err != nil {
		var ie *capacity.InputError
		if errors.As(err, &ie) {
			return bad("%v", err)
		}
		fprintf(stderr, "sparkbench capacity assemble: %v\n", err)
		return 1
	}
	data, err := res.Marshal()
	if err != nil {
		fprintf(stderr, "sparkbench capacity assemble: %v\n", err)
		return 1
	}
	if err := atomicfile.WriteFile(*output, data, 0o644); err != nil {
		fprintf(stderr, "sparkbench capacity assemble: write %s: %v; check the folder exists and is writable\n", *output, err)
		return 1
	}
	fprintf(stdout, "%s: %s study %q, sha256 %s (plan %s)\n", *output, res.Kind, res.Plan.Name, canon.SHA256Hex(data), res.PlanSHA256)
	printSelections(stdout, &res)
	return 0
}

func capacityKeyFile(flag, v string) (key, path string, err error) {
	key, path, ok := strings.Cut(v, "=")
	if !ok || key == "" || path == "" {
		return "", "", fmt.Errorf("%s %q: want KEY=FILE, e.g. %s forward/q8-generic/p4=runs/forward/q8-generic/p4/requests.jsonl", flag, v, flag)
	}
	return key, path, nil
}

// capacityBatchedInputs reads the --batched CANDIDATE=FILE values (nil when none).
func capacityBatchedInputs(vals []string) (map[string]capacity.InputFile, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]capacity.InputFile{}
	for _, v := range vals {
		id, path, ok := strings.Cut(v, "=")
		if !ok || id == "" || path == "" {
			return nil, fmt.Errorf("%s %q: want CANDIDATE=FILE, a llama-batched-bench output, e.g. %s q8-generic=batched.md", capacity.FlagBatched, v, capacity.FlagBatched)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("%s %s is given twice; give one llama-batched-bench file per candidate", capacity.FlagBatched, id)
		}
		f, err := capacityReadInput(capacity.FlagBatched, id, path)
		if err != nil {
			return nil, err
		}
		out[id] = f
	}
	return out, nil
}

func capacityReadInput(flag, key, path string) (capacity.InputFile, error) {
	data, err := fsread.ReadFile(path, 1<<30, flag+" "+key)
	if err != nil {
		return capacity.InputFile{}, fmt.Errorf("%s %s: %v", flag, key, err)
	}
	return capacity.InputFile{Name: path, Data: data}, nil
}

// printSelections prints each candidate's selected point (or why none) and the verdicts, as
// `capacity assemble` and `capacity run` both end.
func printSelections(w io.Writer, res *capacity.Result) {
	for _, c := range res.Candidates {
		rejected := 0
		for _, cell := range c.Cells {
			if !cell.Passed {
				rejected++
			}
		}
		if s := c.Selected; s != nil {
			gain := "gain n/a"
			if s.Gain != nil {
				gain = fmt.Sprintf("%+.1f%% vs P%d/C%d", *s.Gain*100, c.Base.Slots, c.Base.Clients)
			}
			fprintf(w, "  %-24s selected P%d/C%d  %.2f tok/s  %s  (%d of %d cells rejected)\n", c.ID, s.Slots, s.Clients, s.GenerationRate, gain, rejected, len(c.Cells))
		} else {
			fprintf(w, "  %-24s no point selected: %s (%d of %d cells rejected)\n", c.ID, c.SelectionNote, rejected, len(c.Cells))
		}
	}
	for _, c := range res.Candidates {
		if c.ServerTax != nil {
			fprintf(w, "  %s\n", capacity.ServerTaxLine(c.ID, c.ServerTax))
		}
	}
	for _, v := range res.Verdicts {
		fprintf(w, "  %-8s %-12s %s\n", v.Prediction, v.Outcome, v.Detail)
	}
}
