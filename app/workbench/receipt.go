package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sparkbench/app"
	"sparkbench/app/bundle"
	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// ReceiptRequest asks for one receipt bundle: of a notebook study (Study, its id or name) or of
// a capacity run folder (CapacityRun), written to Out (a new or empty folder, or FILE.tar.gz).
type ReceiptRequest struct {
	Study       string
	CapacityRun string
	Out         string
	// NoRedact keeps home-folder paths as recorded (default: written as ~).
	NoRedact bool
	// PromptPlan is the prompt plan file when the run folder has no copy (CapacityRun only).
	PromptPlan string
	// BenchTG is llama-bench's tg (t/s) per candidate, for a capacity study's serving tax
	// (CapacityRun only).
	BenchTG map[string]float64
	// Batched is a llama-batched-bench output file per candidate, for a capacity study's
	// server tax (CapacityRun only; the run folder's batched/ID.txt is taken without it).
	Batched map[string]string
}

// ReceiptExport is a written bundle: where, every file in it, and the study it records.
type ReceiptExport struct {
	Out      string
	Files    receipt.Files
	StudyID  int64 // 0 for a capacity run folder
	Redacted bool
	// RecordErr is set when the bundle was written but the notebook could not record it.
	RecordErr error
}

// RequestError is a request refused as given (the CLI exits 2): what is wrong and what to do,
// and the error it comes from, if any.
type RequestError struct {
	Msg string
	Err error
}

func (e *RequestError) Error() string { return e.Msg }

func (e *RequestError) Unwrap() error { return e.Err }

// badInput is err as a *RequestError, its message unchanged.
func badInput(err error) error { return &RequestError{Msg: err.Error(), Err: err} }

// ErrCancelled: ctx ended before the bundle was written; nothing was written.
var ErrCancelled = errors.New("cancelled: nothing was written")

// Check refuses a request that cannot be exported as given (a *RequestError), before any
// notebook is opened or file read.
func (req ReceiptRequest) Check() error {
	switch {
	case req.Out == "":
		return refused("--out is required: a new folder or a FILE.tar.gz")
	case req.CapacityRun == "" && req.Study == "":
		return refused("want one study id or name (or --capacity-run DIR)")
	case req.CapacityRun != "" && req.Study != "":
		return refused("give either a study or --capacity-run, not both")
	case req.CapacityRun == "" && (len(req.BenchTG) > 0 || req.PromptPlan != ""):
		return refused("--bench-tg and --prompt-plan apply to --capacity-run only")
	case req.CapacityRun == "" && len(req.Batched) > 0:
		return refused("--batched applies to --capacity-run only (a study run with capacity run --batched has its file in its run folder)")
	}
	if _, err := os.Stat(req.Out); err == nil && bundle.IsArchiveName(req.Out) {
		return refused("%s exists; choose a new file name", req.Out)
	}
	return nil
}

func refused(format string, a ...any) error { return &RequestError{Msg: fmt.Sprintf(format, a...)} }

// ExportReceipt assembles the receipt bundle in memory, then writes it: a cancel before the
// write leaves nothing on disk. nb is the process's notebook (nil: only a CapacityRun can be
// exported); the written bundle is recorded in it.
func ExportReceipt(ctx context.Context, nb *store.Notebook, req ReceiptRequest) (*ReceiptExport, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	home, _ := os.UserHomeDir()
	opt := bundle.Options{Redact: !req.NoRedact, Home: home, Version: app.VersionString()}
	res := &ReceiptExport{Out: req.Out, Redacted: !req.NoRedact}
	var err error
	switch {
	case req.CapacityRun != "":
		if res.Files, err = bundle.Capacity(req.CapacityRun, bundle.CapacityOptions{Options: opt, BenchTG: req.BenchTG, PromptPlan: req.PromptPlan, Batched: req.Batched}); err != nil {
			return nil, &RequestError{Msg: err.Error()}
		}
	case nb == nil:
		return nil, errors.New("no notebook is open")
	default:
		if res.Files, res.StudyID, err = studyFiles(ctx, nb, req.Study, opt); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	if err := bundle.Write(req.Out, res.Files); err != nil {
		return nil, err
	}
	if nb != nil && res.StudyID != 0 {
		abs, _ := filepath.Abs(req.Out)
		sums := canon.SHA256Hex(res.Files[receipt.FileSums])
		if _, err := nb.RecordReceipt(ctx, store.Receipt{StudyID: res.StudyID, Format: "bundle", SHA256: sums, Bytes: res.Files.Bytes(), Path: abs}); err != nil {
			res.RecordErr = err
		}
	}
	return res, nil
}

// studyFiles collects a notebook study's bundle through its kind.
func studyFiles(ctx context.Context, nb *store.Notebook, ref string, opt bundle.Options) (receipt.Files, int64, error) {
	s, err := nb.FindStudy(ctx, ref)
	if err != nil {
		return nil, 0, &RequestError{Msg: err.Error()}
	}
	k := KindOf(s.Kind)
	if k == nil || k.Receipt == nil {
		return nil, 0, refused("study %d (%s) is a %s study: receipts cover %s studies", s.ID, s.Name, s.Kind, receiptKindsText())
	}
	files, err := k.Receipt(ctx, nb, s, opt)
	return files, s.ID, err
}

// throughputStudyFiles builds a throughput study's bundle from its notebook rows and journal.
func throughputStudyFiles(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error) {
	if _, err := nb.Plan(ctx, s.ID); err != nil {
		return nil, refused("study %d (%s) has no registered plan (an imported study?): a receipt re-assembles a registered study", s.ID, s.Name)
	}
	src, err := ThroughputSource(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	return bundle.Throughput(src, opt)
}

// capacityStudyFiles builds a capacity study's bundle from its run folder, which the notebook
// journaled with the SHA-256 of the study.json assembled there.
func capacityStudyFiles(ctx context.Context, nb *store.Notebook, s store.Study, opt bundle.Options) (receipt.Files, error) {
	a, err := capacity.LoadAssembled(ctx, store.CapacityRecorder{N: nb}, s.ID)
	if errors.Is(err, capacity.ErrNotAssembled) && s.Status != store.StatusRegistered && s.Status != store.StatusComplete {
		return nil, refused("study %d (%s) is %s: a receipt needs its assembled result, which a complete run journals; run it again (`sparkbench capacity run %d`) once the cause is fixed", s.ID, s.Name, s.Status, s.ID)
	}
	if err != nil {
		return nil, refused("study %d (%s): %v", s.ID, s.Name, err)
	}
	if a.Result == nil {
		return nil, refused("study %d (%s): %s", s.ID, s.Name, a.Problem)
	}
	// The study's journal entries go with it, as with a throughput study: the receipt shows
	// the plan and predictions registered before the results.
	journal, studyID, pp, imported, err := capacityExcerpt(ctx, nb, s)
	if err != nil {
		return nil, err
	}
	copt := bundle.CapacityOptions{Options: opt, Journal: journal, StudyID: studyID, PromptPlan: pp, RequirePromptPlan: true}
	if imported { // its files were redacted where its bundle was written: that bundle's record
		if copt.Redaction, err = os.ReadFile(filepath.Join(a.Note.RunDir, receipt.FileRedaction)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, refused("study %d (%s): the run folder laid out from its bundle: %v", s.ID, s.Name, err)
		}
	}
	files, err := bundle.Capacity(a.Note.RunDir, copt)
	if err != nil {
		return nil, refused("study %d (%s): %v", s.ID, s.Name, err)
	}
	// The bundle re-assembles study.json from its own (redacted) raw files, so its input
	// hashes may differ from the run's; every figure must still equal the journaled one.
	var got capacity.Result
	if err := json.Unmarshal(files[receipt.FileStudy], &got); err != nil {
		return nil, err
	}
	want, _ := canon.Marshal(a.Result.Candidates)
	have, _ := canon.Marshal(got.Candidates)
	if !bytes.Equal(want, have) || got.PlanSHA256 != a.Result.PlanSHA256 {
		return nil, fmt.Errorf("the bundle's figures differ from the study.json the notebook journaled (sha256 %s); the run folder changed since it ran", a.Note.StudySHA256)
	}
	return files, nil
}

// capacityExcerpt is a capacity study's journal excerpt, its id there and its prompt plan
// file. A study imported from a bundle (`sparkbench import`) gives the excerpt its bundle held,
// with the origin notebook's study id, and its prompt plan from the run folder laid out from
// the bundle (""), so its receipt is the bundle it was imported from again.
func capacityExcerpt(ctx context.Context, nb *store.Notebook, s store.Study) (journal []receipt.JournalLine, studyID int64, promptPlan string, imported bool, err error) {
	journal, originID, imported, err := keptExcerpt(ctx, nb, s)
	if err != nil || imported {
		return journal, originID, "", imported, err
	}
	journal, planDir, err := JournalExcerpt(ctx, nb, s.ID)
	if err != nil {
		return nil, 0, "", false, err
	}
	// The prompt plan goes with it too (capacity run read it from the registered plan's
	// folder): the bundle refuses a file that is missing or hashes differently.
	pp, err := capacityPromptPlan(ctx, nb, s.ID, planDir)
	if err != nil {
		return nil, 0, "", false, refused("study %d (%s): %v", s.ID, s.Name, err)
	}
	return journal, s.ID, pp, false, nil
}

// keptExcerpt is the journal excerpt a study imported from a bundle (`sparkbench import`) was
// imported with, byte for byte, and the origin notebook's id of the study (false: the study
// was recorded here).
func keptExcerpt(ctx context.Context, nb *store.Notebook, s store.Study) ([]receipt.JournalLine, int64, bool, error) {
	o, imported, err := nb.ImportedOriginOf(ctx, s.ID)
	if err != nil || !imported {
		return nil, 0, false, err
	}
	kept, err := nb.ImportedJournal(ctx, o.ImportID)
	if err != nil {
		return nil, 0, false, err
	}
	journal := make([]receipt.JournalLine, 0, len(kept))
	for _, e := range kept {
		jl := receipt.JournalLine{Seq: e.Seq, Kind: e.Kind, At: e.At, Payload: e.Payload, PrevHash: e.PrevHash, Hash: e.Hash}
		if e.StudyID != 0 {
			id := e.StudyID
			jl.Study = &id
		}
		journal = append(journal, jl)
	}
	return journal, o.OriginStudyID, true, nil
}

// keptOrOwnExcerpt is a study's journal excerpt for its bundle: the kept one of an imported
// study (with the origin's study id), or its own from this notebook (JournalExcerpt).
func keptOrOwnExcerpt(ctx context.Context, nb *store.Notebook, s store.Study) ([]receipt.JournalLine, int64, bool, error) {
	journal, originID, imported, err := keptExcerpt(ctx, nb, s)
	if err != nil || imported {
		return journal, originID, imported, err
	}
	journal, _, err = JournalExcerpt(ctx, nb, s.ID)
	return journal, s.ID, false, err
}

// ReceiptText is what an export says it wrote: the CLI prints it, the window shows it.
func ReceiptText(x *ReceiptExport) string {
	redacted := "home folder written as ~"
	if !x.Redacted {
		redacted = "not redacted"
	}
	return fmt.Sprintf("%s: %s; %s\n", x.Out, receipt.Summary(x.Files), redacted) +
		fmt.Sprintf("  receipt.md sha256 %s\n  study.json sha256 %s\n  SHA256SUMS sha256 %s\n", canon.SHA256Hex(x.Files[receipt.FileReceipt]),
			canon.SHA256Hex(x.Files[receipt.FileStudy]), canon.SHA256Hex(x.Files[receipt.FileSums])) +
		fmt.Sprintf("check it anywhere with `sparkbench verify %s`\n", x.Out)
}
