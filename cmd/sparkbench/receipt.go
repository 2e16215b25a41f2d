package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"sparkbench/app"
	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/app/study"
	"sparkbench/store"
)

const receiptUsage = "receipt STUDY --out DIR|FILE.tar.gz [--no-redact] | receipt --capacity-run DIR --out DIR|FILE.tar.gz [--prompt-plan FILE] [--bench-tg C=T…] [--no-redact]"

// cmdReceipt writes a study's receipt bundle (docs/receipts.md): its raw files, receipt.md,
// study.json, plots and SHA256SUMS, into a new folder or a .tar.gz. A throughput study comes
// from the notebook; a capacity study from its run folder, with its journal excerpt and its
// prompt plan (checked against the plan's SHA-256) when it is a notebook study. Exit 0 written, 2 bad usage or input (an unknown study, an incomplete
// run folder), 1 failure.
func cmdReceipt(args []string, stdout, stderr io.Writer) int {
	return cmdReceiptCtx(context.Background(), args, stdout, stderr)
}

// cmdReceiptCtx is cmdReceipt stopped when parent is cancelled (the window's Cancel) or on
// Ctrl-C: the bundle is assembled in memory first, so a cancel before the write leaves nothing
// on disk.
func cmdReceiptCtx(parent context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("receipt", stderr)
	nbFlag := fs.String("notebook", "", nbFlagHelp)
	out := fs.String("out", "", "a new or empty folder, or a FILE.tar.gz")
	noRedact := fs.Bool("no-redact", false, "keep home-folder paths as recorded (default: written as ~)")
	capRun := fs.String("capacity-run", "", "a capacity run folder (plan.json, runs/PASS/CANDIDATE/pP/…) instead of a notebook study")
	promptPlan := fs.String("prompt-plan", "", "the prompt plan file, when the run folder has no copy of it (capacity only)")
	var benchTG multiFlag
	fs.Var(&benchTG, "bench-tg", "CANDIDATE=T: llama-bench tg (t/s) for the serving tax of a capacity study (repeat)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	bad := func(format string, a ...any) int {
		fprintf(stderr, "sparkbench receipt: "+format+"\n", a...)
		return 2
	}
	switch {
	case *out == "":
		return bad("--out is required: a new folder or a FILE.tar.gz")
	case *capRun == "" && len(pos) != 1:
		return bad("want one study id or name (or --capacity-run DIR); usage: sparkbench %s", receiptUsage)
	case *capRun != "" && len(pos) > 0:
		return bad("give either a study or --capacity-run, not both")
	case *capRun == "" && (len(benchTG) > 0 || *promptPlan != ""):
		return bad("--bench-tg and --prompt-plan apply to --capacity-run only")
	}
	if _, err := os.Stat(*out); err == nil && bundle.IsArchiveName(*out) {
		return bad("%s exists; choose a new file name", *out)
	}
	home, _ := os.UserHomeDir()
	opt := bundle.Options{Redact: !*noRedact, Home: home, Version: app.VersionString()}
	var files receipt.Files
	var nb *store.Notebook
	var studyID int64
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ctx.Err() != nil {
		fprintf(stderr, "sparkbench receipt: cancelled: nothing was written\n")
		return 1
	}
	if *capRun != "" {
		tgs := map[string]float64{}
		for _, v := range benchTG {
			id, num, ok := strings.Cut(v, "=")
			x, err := strconv.ParseFloat(num, 64)
			if !ok || id == "" || err != nil || !(x > 0) {
				return bad("--bench-tg %q: want CANDIDATE=T with T llama-bench's tg in t/s, e.g. q8-generic=41.2", v)
			}
			tgs[id] = x
		}
		if len(tgs) == 0 {
			tgs = nil
		}
		if files, err = bundle.Capacity(*capRun, bundle.CapacityOptions{Options: opt, BenchTG: tgs, PromptPlan: *promptPlan}); err != nil {
			return bad("%v", err)
		}
	} else {
		path, err := notebookPath(*nbFlag)
		if err != nil {
			return bad("%v", err)
		}
		var code int
		if nb, code = openNotebook("receipt", path, false, stderr); nb == nil {
			return code
		}
		defer nb.Close()
		s, err := nb.FindStudy(ctx, pos[0])
		if err != nil {
			return bad("%v", err)
		}
		if s.Kind == store.StudyCapacity || s.Kind == store.StudyConcurrency {
			// A capacity study's receipt is built from its run folder, which the notebook
			// journaled with the SHA-256 of the study.json assembled there.
			a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, s.ID)
			if err != nil {
				return bad("study %d (%s): %v", s.ID, s.Name, err)
			}
			if a.Result == nil {
				return bad("study %d (%s): %s", s.ID, s.Name, a.Problem)
			}
			// The study's journal entries go with it, as with a throughput study: the
			// receipt shows the plan and predictions registered before the results.
			journal, planDir, err := journalExcerpt(ctx, nb, s.ID)
			if err != nil {
				fprintf(stderr, "sparkbench receipt: %v\n", err)
				return 1
			}
			// The prompt plan goes with it too (capacity run read it from the registered plan's
			// folder): the bundle refuses a file that is missing or hashes differently.
			pp, err := capacityPromptPlan(ctx, nb, s.ID, planDir)
			if err != nil {
				return bad("study %d (%s): %v", s.ID, s.Name, err)
			}
			if files, err = bundle.Capacity(a.Note.RunDir, bundle.CapacityOptions{Options: opt, Journal: journal, StudyID: s.ID,
				PromptPlan: pp, RequirePromptPlan: true}); err != nil {
				return bad("study %d (%s): %v", s.ID, s.Name, err)
			}
			// The bundle re-assembles study.json from its own (redacted) raw files, so its input
			// hashes may differ from the run's; every figure must still equal the journaled one.
			var got capacity.Result
			if err := json.Unmarshal(files[receipt.FileStudy], &got); err != nil {
				fprintf(stderr, "sparkbench receipt: %v\n", err)
				return 1
			}
			want, _ := canon.Marshal(a.Result.Candidates)
			have, _ := canon.Marshal(got.Candidates)
			if !bytes.Equal(want, have) || got.PlanSHA256 != a.Result.PlanSHA256 {
				fprintf(stderr, "sparkbench receipt: the bundle's figures differ from the study.json the notebook journaled (sha256 %s); the run folder changed since it ran\n", a.Note.StudySHA256)
				return 1
			}
			studyID = s.ID
			goto write
		}
		if s.Kind != store.StudyThroughput {
			return bad("study %d (%s) is a %s study: receipts cover throughput and capacity studies", s.ID, s.Name, s.Kind)
		}
		if _, err := nb.Plan(ctx, s.ID); err != nil {
			return bad("study %d (%s) has no registered plan (an imported study?): a receipt re-assembles a registered study", s.ID, s.Name)
		}
		src, err := throughputSource(ctx, nb, s)
		if err != nil {
			fprintf(stderr, "sparkbench receipt: %v\n", err)
			return 1
		}
		if files, err = bundle.Throughput(src, opt); err != nil {
			fprintf(stderr, "sparkbench receipt: %v\n", err)
			return 1
		}
		studyID = s.ID
	}
write:
	if ctx.Err() != nil {
		fprintf(stderr, "sparkbench receipt: cancelled: nothing was written\n")
		return 1
	}
	if err := bundle.Write(*out, files); err != nil {
		fprintf(stderr, "sparkbench receipt: %v\n", err)
		return 1
	}
	sums := canon.SHA256Hex(files[receipt.FileSums])
	if nb != nil {
		abs, _ := filepath.Abs(*out)
		if _, err := nb.RecordReceipt(ctx, store.Receipt{StudyID: studyID, Format: "bundle", SHA256: sums, Bytes: files.Bytes(), Path: abs}); err != nil {
			fprintf(stderr, "sparkbench receipt: the bundle is written, but the notebook could not record it: %v\n", err)
		}
	}
	redacted := "home folder written as ~"
	if *noRedact {
		redacted = "not redacted"
	}
	fprintf(stdout, "%s: %s; %s\n", *out, receipt.Summary(files), redacted)
	fprintf(stdout, "  receipt.md sha256 %s\n  study.json sha256 %s\n  SHA256SUMS sha256 %s\n", canon.SHA256Hex(files[receipt.FileReceipt]),
		canon.SHA256Hex(files[receipt.FileStudy]), sums)
	fprintf(stdout, "check it anywhere with `sparkbench verify %s`\n", *out)
	return 0
}

// throughputSource gathers a throughput study from the notebook: the journal excerpt from the
// study's first entry to its last (receipts exported since left out), the plan, every leg
// with its rows (and their statuses) and transcript, and the model artefacts the legs used.
func throughputSource(ctx context.Context, nb *store.Notebook, s store.Study) (bundle.ThroughputSource, error) {
	src := bundle.ThroughputSource{Notebook: receipt.NotebookRecord{StudyID: s.ID, Name: s.Name, Kind: s.Kind, Status: s.Status}}
	plan, err := nb.Plan(ctx, s.ID)
	if err != nil {
		return src, fmt.Errorf("study %d (%s) has no registered plan: %w", s.ID, s.Name, err)
	}
	src.PlanJSON = plan.JSON
	preds, err := nb.Predictions(ctx, s.ID)
	if err != nil {
		return src, err
	}
	for _, p := range preds {
		src.Notebook.Predictions = append(src.Notebook.Predictions, receipt.PredictionKey{ID: p.ID, Key: p.Key})
	}
	st, err := nb.Stats(ctx)
	if err != nil {
		return src, err
	}
	src.Notebook.Head = receipt.ChainPoint{Seq: st.JournalSeq, Hash: st.JournalHead}
	var planDir string
	if src.Journal, planDir, err = journalExcerpt(ctx, nb, s.ID); err != nil {
		return src, err
	}
	legs, err := nb.LegTimeline(ctx, s.ID)
	if err != nil {
		return src, err
	}
	rows, err := store.StudyRecorder{N: nb}.Rows(ctx, s.ID)
	if err != nil {
		return src, err
	}
	byLeg := map[int64][]bundle.SourceRow{}
	for _, r := range rows {
		js, err := r.Result.MarshalJSON()
		if err != nil {
			return src, fmt.Errorf("leg %d row %d: %w", r.LegID, r.Seq, err)
		}
		byLeg[r.LegID] = append(byLeg[r.LegID], bundle.SourceRow{Seq: r.Seq, Status: r.Status, JSON: js})
	}
	artefacts := map[int64]bool{}
	for _, l := range legs {
		var d struct {
			PlanLeg string `json:"plan_leg"`
			Role    string `json:"role"`
			Attempt int    `json:"attempt"`
		}
		_ = json.Unmarshal(l.Detail, &d)
		rec := receipt.LegRecord{ID: l.ID, Label: l.Label, Kind: l.Kind, PlanLeg: d.PlanLeg, Role: d.Role, Attempt: d.Attempt,
			State: l.State, Class: l.Class, Reason: l.Reason, ExitCode: l.ExitCode, Signal: l.Signal, Argv: l.Argv, Env: l.Env,
			Conditions: l.Conditions, StartedAt: store.FormatTime(l.StartedAt), Fingerprint: l.Fingerprint, PeakRSSBytes: l.PeakRSSBytes,
			MachineID: l.MachineID, BuildID: l.BuildID, ArtefactID: l.ArtefactID, TempBeforeC: l.TempBeforeC, TempAfterC: l.TempAfterC}
		if !l.EndedAt.IsZero() {
			rec.EndedAt = store.FormatTime(l.EndedAt)
		}
		tr, err := nb.Transcript(ctx, l.ID)
		if err != nil {
			return src, fmt.Errorf("leg %d transcript: %w", l.ID, err)
		}
		src.Legs = append(src.Legs, bundle.SourceLeg{Record: rec, Rows: byLeg[l.ID], Transcript: tr})
		if l.ArtefactID != 0 {
			artefacts[l.ArtefactID] = true
		}
	}
	// The notebook's build and machine records the legs name (never the machine's host name).
	builds, machines := map[int64]bool{}, map[int64]bool{}
	for _, l := range legs {
		if l.BuildID != 0 {
			builds[l.BuildID] = true
		}
		if l.MachineID != 0 {
			machines[l.MachineID] = true
		}
	}
	for _, id := range sortedInt64(builds) {
		b, err := nb.Build(ctx, id)
		if err != nil {
			return src, err
		}
		bins := b.Binaries
		if bins == nil {
			bins = map[string]string{}
		}
		src.Builds = append(src.Builds, receipt.NotebookBuild{ID: b.ID, Fingerprint: b.Fingerprint, Dir: b.Dir, VersionLine: b.VersionLine,
			BuildNumber: b.BuildNumber, Commit: b.Commit, Backends: b.Backends, Binaries: bins, RecordedAt: store.FormatTime(b.CreatedAt)})
	}
	for _, id := range sortedInt64(machines) {
		m, err := nb.Machine(ctx, id)
		if err != nil {
			return src, err
		}
		src.Machines = append(src.Machines, receipt.NotebookMachine{ID: m.ID, Fingerprint: m.Fingerprint, CPUModel: m.CPUModel, Cores: m.Cores,
			RAMBytes: m.RAMBytes, OS: m.OS, Kernel: m.Kernel, GPU: m.GPU, Driver: m.Driver, MemBandwidthGBs: m.MemBandwidthGBs,
			RecordedAt: store.FormatTime(m.CreatedAt)})
	}
	p, err := study.Decode("registered plan", plan.JSON)
	if err != nil {
		return src, err
	}
	// Each plan model with the notebook's artefact record of its file (the one whose hash
	// matches the plan, else the newest), then any other artefact a leg names.
	all, err := nb.Artefacts(ctx)
	if err != nil {
		return src, err
	}
	record := func(a store.Artefact, model string) receipt.ModelRecord {
		return receipt.ModelRecord{ArtefactID: a.ID, Model: model, Path: a.Path, Bytes: a.Size, SHA256: a.SHA256, ExpectedSHA256: a.ExpectedSHA256,
			Status: a.Status, Name: a.Name, Architecture: a.Architecture, Quant: a.Quant, NParams: a.NParams, Source: a.Source, Revision: a.Revision}
	}
	used := map[int64]bool{}
	for _, m := range p.Models {
		path := study.ResolvePath(planDir, m.Path)
		var found *store.Artefact
		for i := range all {
			a := &all[i]
			if a.Path == path && (found == nil || a.SHA256 == m.SHA256 && found.SHA256 != m.SHA256) {
				found = a
			}
		}
		if found == nil {
			src.Models = append(src.Models, bundle.SourceModel{Record: receipt.ModelRecord{Model: m.ID, Path: path, ExpectedSHA256: m.SHA256,
				Status: "not recorded"}, File: path})
			continue
		}
		used[found.ID] = true
		src.Models = append(src.Models, bundle.SourceModel{Record: record(*found, m.ID), File: found.Path})
	}
	for _, id := range sortedInt64(artefacts) {
		if used[id] {
			continue
		}
		a, err := nb.Artefact(ctx, id)
		if err != nil {
			return src, err
		}
		src.Models = append(src.Models, bundle.SourceModel{Record: record(a, "")})
	}
	return src, nil
}

// capacityPromptPlan is the path of a capacity study's prompt plan: the registered plan's
// prompt_plan.path resolved against the plan's folder (as capacity run resolves it).
func capacityPromptPlan(ctx context.Context, nb *store.Notebook, studyID int64, planDir string) (string, error) {
	reg, err := nb.Plan(ctx, studyID)
	if err != nil {
		return "", fmt.Errorf("no registered plan: %w", err)
	}
	p, err := capacity.Decode("registered plan", reg.JSON)
	if err != nil {
		return "", err
	}
	if p.PromptPlan.Path == "" {
		return "", fmt.Errorf("the registered plan names no prompt plan")
	}
	if planDir == "" && !filepath.IsAbs(p.PromptPlan.Path) {
		return "", fmt.Errorf("the journal names no plan folder, so the prompt plan %q cannot be found", p.PromptPlan.Path)
	}
	return study.ResolvePath(planDir, p.PromptPlan.Path), nil
}

// journalExcerpt is a study's journal excerpt for its bundle (throughput and capacity alike):
// every entry from the study's first to its last, with their hashes (receipts exported are
// left out at the end, so a re-export holds the same excerpt; other studies' entries in
// between are included, so the chain can be re-walked); and the plan folder its
// study.plan_source entry names.
func journalExcerpt(ctx context.Context, nb *store.Notebook, studyID int64) ([]receipt.JournalLine, string, error) {
	own, err := nb.Journal(ctx, studyID, 0, 0)
	if err != nil {
		return nil, "", err
	}
	var first, last int64
	planDir := ""
	for _, e := range own {
		if e.Kind == store.KindReceiptExported {
			continue
		}
		if first == 0 {
			first = e.Seq
		}
		last = e.Seq
		if e.Kind == study.NotePlanSource {
			var ps struct {
				Dir string `json:"plan_dir"`
			}
			_ = json.Unmarshal(e.Payload, &ps)
			planDir = ps.Dir
		}
	}
	if first == 0 {
		return nil, "", fmt.Errorf("study %d has no journal entries", studyID)
	}
	entries, err := nb.Journal(ctx, 0, first-1, int(last-first+1))
	if err != nil {
		return nil, "", err
	}
	var out []receipt.JournalLine
	for _, e := range entries {
		jl := receipt.JournalLine{Seq: e.Seq, Kind: e.Kind, At: store.FormatTime(e.At), Payload: e.Payload, PrevHash: e.PrevHash, Hash: e.Hash}
		if e.StudyID != 0 {
			id := e.StudyID
			jl.Study = &id
		}
		out = append(out, jl)
	}
	return out, planDir, nil
}

func sortedInt64(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
